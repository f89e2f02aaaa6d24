// Capture expressions: `req.Header.Port`, `s.Name`, `deadline`, `*p`, `err.(*io/fs.PathError).Path`.
// Parsed into a root parameter and a chain of steps; positions are character offsets in the
// expression so errors can point at the exact segment.
#pragma once

#include "common/diag.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weave {

struct ExprStep {
  enum class Kind { Field, Deref, Index, Assert } kind = Kind::Field;
  std::string name;   // Field; Assert: the asserted type as written ("*io/fs.PathError")
  uint64_t index = 0; // Index
  size_t column = 0;  // 0-based offset of the step in the expression text
};

struct CaptureExpr {
  std::string builtin; // "", "len" or "cap": the expression is len(...) / cap(...)
  std::string root;
  size_t root_column = 0;
  std::vector<ExprStep> steps; // applied left to right after the root
};

// Throws UserError [bad-expression] located at `loc` advanced to the offending character.
CaptureExpr parse_capture_expr(const std::string &text, const SourceLoc &loc);

// `loc` moved right by `column` characters (for pointing inside an expression).
SourceLoc advance(SourceLoc loc, size_t column);

} // namespace weave
