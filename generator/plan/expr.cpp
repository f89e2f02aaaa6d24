#include "plan/expr.h"

#include <cctype>
#include <charconv>

namespace weave {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// At most this many steps (fields, indexes and '*'s) in one capture. Every pointer a path crosses is
// a read the BPF program makes, unrolled, and the verifier walks each; Go code written by people
// nests a handful deep. The cap keeps resolving an expression (and the program it makes) bounded
// by the spec's size, never by a chain of 10,000 `.Next` that nobody could verify in the kernel.
constexpr size_t kMaxSteps = 64;

} // namespace

SourceLoc advance(SourceLoc loc, size_t column) {
  if (loc.line > 0)
    loc.column += static_cast<int>(column);
  return loc;
}

CaptureExpr parse_capture_expr(const std::string &full_text, const SourceLoc &loc) {
  const std::string hint = "a capture is a parameter name followed by .field and [index] steps, e.g. "
                           "req.Header.Port or xs[2].Name, *p to follow a pointer, x.(*pkg.T).F to assert an "
                           "interface's dynamic type, or len(x) / cap(x)";
  auto fail = [&](size_t at, const std::string &what) -> CaptureExpr {
    throw UserError("bad-expression", what + " in capture \"" + full_text + "\"", advance(loc, at), hint);
  };
  // len(x) and cap(x) wrap a whole expression.
  std::string text = full_text;
  size_t base = 0;
  std::string builtin;
  for (const char *fn : {"len(", "cap("}) {
    size_t n = std::string(fn).size();
    if (text.compare(0, n, fn) == 0) {
      if (text.empty() || text.back() != ')')
        return fail(text.size(), std::string("expected ')' to close ") + fn);
      builtin = std::string(fn, n - 1);
      text = text.substr(n, text.size() - n - 1);
      base = n;
    }
  }
  size_t i = 0;
  int derefs = 0;
  auto too_long = [&](size_t at) {
    throw UserError("expression-too-long",
                    "more than " + std::to_string(kMaxSteps) + " steps in capture \"" +
                        (full_text.size() > 80 ? full_text.substr(0, 80) + "..." : full_text) + "\"",
                    advance(loc, at),
                    "a capture follows at most " + std::to_string(kMaxSteps) +
                        " fields, indexes and '*'s: each pointer it crosses is a read in the BPF program; "
                        "capture a value nearer the parameter");
  };
  while (i < text.size() && text[i] == '*') {
    if (++derefs > static_cast<int>(kMaxSteps))
      too_long(base + i);
    ++i;
  }
  CaptureExpr expr;
  expr.builtin = builtin;
  // Unnamed results are called ~r0, ~r1, ... in DWARF, and that is how a spec names them.
  bool result_name = i + 1 < text.size() && text[i] == '~' && ident_start(text[i + 1]);
  if (i >= text.size() || !(ident_start(text[i]) || result_name))
    return fail(base + i, "expected a parameter name");
  expr.root_column = base + i;
  if (result_name)
    expr.root += text[i++];
  while (i < text.size() && ident_char(text[i]))
    expr.root += text[i++];
  while (i < text.size()) {
    if (expr.steps.size() + static_cast<size_t>(derefs) >= kMaxSteps)
      too_long(base + i);
    if (text[i] == '[') {
      size_t start = ++i;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
        ++i;
      if (i == start || i >= text.size() || text[i] != ']')
        return fail(base + start, "expected a constant index and ']'");
      uint64_t index = 0;
      auto [end, error] = std::from_chars(text.data() + start, text.data() + i, index);
      if (error != std::errc() || end != text.data() + i) // found by fuzz/fuzz_capture_expr.cpp
        return fail(base + start, "index " + text.substr(start, i - start) + " is larger than any Go value can have");
      ExprStep step{ExprStep::Kind::Index, "", index, base + start - 1};
      expr.steps.push_back(step);
      ++i;
      continue;
    }
    if (text[i] != '.')
      return fail(base + i, std::string("unexpected '") + text[i] + "'");
    if (i + 1 < text.size() && text[i + 1] == '(') {
      // A type assertion .(T): T as the binary names it, which may hold a package path with dots
      // and slashes, '*'s, and brackets of a generic instance ("main.Box[main.Point]").
      size_t start = i + 2;
      size_t j = start;
      int brackets = 0;
      while (j < text.size() && (text[j] != ')' || brackets > 0)) {
        if (text[j] == '[')
          ++brackets;
        else if (text[j] == ']' && --brackets < 0)
          break;
        else if (text[j] == '(' || (std::isspace(static_cast<unsigned char>(text[j])) != 0 && brackets == 0))
          return fail(base + j, std::string("unexpected '") + text[j] + "' in a type assertion");
        ++j;
      }
      if (j >= text.size() || text[j] != ')')
        return fail(base + j, "expected ')' to close the type assertion");
      if (j == start)
        return fail(base + start, "expected a type name in .(T)");
      expr.steps.push_back({ExprStep::Kind::Assert, text.substr(start, j - start), 0, base + start});
      i = j + 1;
      continue;
    }
    size_t start = ++i;
    if (i >= text.size() || !ident_start(text[i]))
      return fail(base + i, "expected a field name after '.'");
    ExprStep step{ExprStep::Kind::Field, "", 0, base + start};
    while (i < text.size() && ident_char(text[i]))
      step.name += text[i++];
    expr.steps.push_back(step);
  }
  // `*p.f` follows the pointer p.f (Go precedence: selectors bind tighter than '*').
  for (int d = 0; d < derefs; ++d)
    expr.steps.push_back({ExprStep::Kind::Deref, "", 0, base});
  return expr;
}

} // namespace weave
