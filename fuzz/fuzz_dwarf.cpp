// libFuzzer target: the DWARF walk (libdw underneath): the function index, parameters and their
// Go types, the runtime type list and member lookups, on a mutated binary. Only UserError may
// escape.
#include "fuzz_input.h"

#include "common/diag.h"
#include "debuginfo/debuginfo.h"
#include "debuginfo/locations.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weave::fuzz::MemFile file(data, size);
  try {
    auto debug = weave::DebugInfo::open(file.path(), 8);
    const auto &names = debug->function_names();
    size_t n = 0;
    for (const std::string &name : names) {
      if (++n > 64)
        break;
      (void)debug->find_function(name);
    }
    (void)debug->member_offset("runtime.g", "goid");
    (void)debug->find_type("main.Header");
    (void)debug->runtime_types();
    // Inlined subroutines and their parameters' location lists, as probes on inlined copies read them.
    (void)weave::read_inlined_locations(file.path(), [](std::string_view name) { return name.starts_with("main."); });
  } catch (const weave::UserError &e) {
    (void)weave::format_error(e);
  }
  return 0;
}
