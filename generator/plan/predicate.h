// Predicates: a probe's `when:` condition, compiled into its entry program so calls where it is
// false never reach the tracer, and its `when_return:` condition, compiled into its return program
// over the results and the held entry's values. The grammar is small on purpose: what BPF can
// evaluate exactly.
//
//   or      := and ('||' and)*
//   and     := unary ('&&' unary)*
//   unary   := '!' unary | primary
//   primary := '(' or ')' | 'startsWith' '(' value ',' string ')' | operand (cmp operand)?
//   cmp     := '==' | '!=' | '<' | '<=' | '>' | '>='
//   operand := integer | "string" | true | false | nil | value
//   value   := a capture expression (req.Header.Port, len(req.Path), s.Name; plan/expr.h)
//
// Every value a predicate reads is captured as well (and shown), so what decided is visible.
//
// A value that faulted (a nil pointer followed) is neither true nor false: && and || decide past it
// when their other side decides the result (false && fault is false, true || fault is true), and
// only a fault that decides the whole condition lets the call through, its capture marked.
#pragma once

#include "common/diag.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weave {

struct CapturePlan;

struct PredicateOperand {
  enum class Kind { Value, Integer, String, Bool, Nil } kind = Kind::Value;
  std::string text;     // Value: the capture expression; String: the decoded bytes
  size_t column = 0;    // in the predicate text
  bool negative = false; // Integer: a leading '-'
  uint64_t magnitude = 0; // Integer: absolute value; Bool: 0 or 1
  // Set when the predicate is resolved against the event's captures (Value only).
  int capture = -1;
  int field = -1;
  // when_return: the value is one of the entry's captures, read from the held entry record.
  bool at_entry = false;
  // predicate_values: the value is compared with nil somewhere in the condition.
  bool nil_compared = false;
};

struct PredicateNode {
  enum class Kind { Or, And, Not, Compare, StartsWith, Truth } kind = Kind::Truth;
  std::vector<PredicateNode> children; // Or, And: two or more; Not: one
  std::string op;                      // Compare: == != < <= > >=
  PredicateOperand lhs, rhs;           // Compare: both; StartsWith: value, prefix; Truth: lhs (a bool value)
};

// Throws UserError [bad-predicate] at `loc` advanced to the offending character. `key` names the
// spec key in messages ("when", "when_return").
PredicateNode parse_predicate(const std::string &text, const SourceLoc &loc, const std::string &key = "when");

// The capture expressions the predicate reads, each once, in order of appearance.
std::vector<PredicateOperand> predicate_values(const PredicateNode &node);

// Points every value at the capture (and its one field) that reads it, and checks that each
// comparison can be evaluated exactly in BPF: integers of one signedness, literals in the
// value's range, strings against literals no longer than what is copied, no floats; nil against
// pointers, funcs and interfaces (their type word). Returns the fault bits of the captures it
// reads. Throws UserError [bad-predicate] located in the text.
// when_return: a value not among `captures` (the return's) is looked up in `entry_captures`, its
// operand marked at_entry and its fault bit added to *entry_faults.
uint64_t resolve_predicate(PredicateNode &node, const std::vector<CapturePlan> &captures, const std::string &text,
                           const SourceLoc &loc, const std::string &key = "when",
                           const std::vector<CapturePlan> *entry_captures = nullptr, uint64_t *entry_faults = nullptr);

// A canonical text of a resolved predicate (captures by index): part of a program's shape.
std::string predicate_key(const PredicateNode &node);

} // namespace weave
