// libFuzzer target: the Go type-expression parser of spec `params:` types ("map[string][]*int",
// "[4]struct{...}"), for both pointer sizes. Only UserError may escape it.
#include "plan/types.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weave::TypeSpec type;
  type.expr.assign(reinterpret_cast<const char *>(data), size);
  type.loc = {"fuzz.yaml", 1, 1};
  for (int ptr_size : {8, 4}) {
    weave::TypeTable table;
    try {
      (void)weave::build_declared_type(type, table, ptr_size);
    } catch (const weave::UserError &e) {
      (void)weave::format_error(e);
    }
  }
  return 0;
}
