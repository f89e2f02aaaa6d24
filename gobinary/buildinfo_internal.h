// Internal to the binary stage: locating .go.buildinfo inside an open ELF file.
#pragma once

#include "gobinary/binary.h"

#include <cstdint>
#include <optional>
#include <vector>

typedef struct Elf Elf;

namespace weave {

// The 32-byte header plus what follows of the .go.buildinfo blob: the section when section headers
// exist, else a scan of the first writable, non-executable PT_LOAD (GO-ABI.md §3.1). nullopt when
// neither holds the magic. `image.segments` must already be filled in.
std::optional<std::vector<uint8_t>> find_buildinfo_blob(Elf *elf, const BinaryImage &image);

} // namespace weave
