// libFuzzer target: the capture-expression parser ("req.Header.Port", "*p", "len(s)", "a[3].b").
// Only UserError may escape it, and a located error must point inside or just after the text.
#include "plan/expr.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  weave::SourceLoc loc{"fuzz.yaml", 3, 15};
  try {
    weave::CaptureExpr expr = weave::parse_capture_expr(text, loc);
    if (expr.root.empty() && expr.builtin.empty())
      __builtin_trap(); // a parsed expression always names what it reads
  } catch (const weave::UserError &e) {
    if (e.loc.line != 3 || e.loc.column < 15 || static_cast<size_t>(e.loc.column) > 15 + size + 1)
      __builtin_trap();
    (void)weave::format_error(e);
  }
  return 0;
}
