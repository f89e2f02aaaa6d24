// libFuzzer target: the Go binary readers of gobinary/ — ELF headers and segments, the symbol
// table, build-id notes, .go.buildinfo (both formats) and .gopclntab (every layout), then what
// the generator and the tracer ask of the table: symbolizing, SP deltas and inlined copies. Only UserError may
// escape; nothing may read outside the file.
#include "fuzz_input.h"

#include "gobinary/binary.h"
#include "gobinary/elf_notes.h"
#include "gobinary/pclntab.h"
#include "common/diag.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weave::fuzz::MemFile file(data, size);
  std::string error;
  std::string id = weave::read_build_id_file(file.path(), error);
  // The build id goes into probes.json: it must be valid UTF-8 whatever the note holds.
  (void)nlohmann::json(id).dump();
  try {
    weave::BinaryImage image = weave::load_binary(file.path());
    (void)nlohmann::json(image.build_id).dump();
    if (auto pcln = weave::Pclntab::load(image)) {
      size_t n = 0;
      for (const weave::PclnFunction &fn : pcln->functions()) {
        if (++n > 64)
          break;
        (void)pcln->symbolize(fn.entry);
        (void)pcln->symbolize(fn.entry + 1, true);
        (void)pcln->sp_delta(fn, fn.entry + 1);
        (void)pcln->find(fn.name);
      }
      (void)pcln->at_pc(pcln->text_start() + 16);
      // Every inline tree, as a probe on an inlined function reads them.
      (void)pcln->inlined_copies([](std::string_view name) { return name.starts_with("main."); });
    }
  } catch (const weave::UserError &e) {
    (void)weave::format_error(e);
  }
  return 0;
}
