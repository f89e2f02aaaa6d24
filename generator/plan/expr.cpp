#include "plan/expr.h"

#include <cctype>

namespace weave {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

} // namespace

SourceLoc advance(SourceLoc loc, size_t column) {
  if (loc.line > 0)
    loc.column += static_cast<int>(column);
  return loc;
}

CaptureExpr parse_capture_expr(const std::string &text, const SourceLoc &loc) {
  const std::string hint = "a capture is a parameter name followed by .field steps, e.g. req.Header.Port, "
                           "or *p to follow a pointer";
  auto fail = [&](size_t at, const std::string &what) -> CaptureExpr {
    throw UserError("bad-expression", what + " in capture \"" + text + "\"", advance(loc, at), hint);
  };
  size_t i = 0;
  int derefs = 0;
  while (i < text.size() && text[i] == '*') {
    ++derefs;
    ++i;
  }
  CaptureExpr expr;
  // Unnamed results are called ~r0, ~r1, ... in DWARF, and that is how a spec names them.
  bool result_name = i + 1 < text.size() && text[i] == '~' && ident_start(text[i + 1]);
  if (i >= text.size() || !(ident_start(text[i]) || result_name))
    return fail(i, "expected a parameter name");
  expr.root_column = i;
  if (result_name)
    expr.root += text[i++];
  while (i < text.size() && ident_char(text[i]))
    expr.root += text[i++];
  while (i < text.size()) {
    if (text[i] != '.')
      return fail(i, std::string("unexpected '") + text[i] + "'");
    size_t start = ++i;
    if (i >= text.size() || !ident_start(text[i]))
      return fail(i, "expected a field name after '.'");
    ExprStep step{ExprStep::Kind::Field, "", start};
    while (i < text.size() && ident_char(text[i]))
      step.name += text[i++];
    expr.steps.push_back(step);
  }
  // `*p.f` follows the pointer p.f (Go precedence: selectors bind tighter than '*').
  for (int d = 0; d < derefs; ++d)
    expr.steps.push_back({ExprStep::Kind::Deref, "", 0});
  return expr;
}

} // namespace weave
