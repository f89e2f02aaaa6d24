// One walk over an ELF symbol table (libelf), shared by the binary reader, the .gopclntab locator
// and the generic-dictionary reader.
#pragma once

#include <gelf.h>

#include <cstdint>
#include <functional>

namespace weave {

// Calls visit(name, symbol) for each symbol with a non-empty name in `scn` (a SHT_SYMTAB section
// whose header is `shdr`), in order, until visit returns false. Returns false when the section's
// data cannot be read.
bool for_each_symbol(Elf *elf, Elf_Scn *scn, const GElf_Shdr &shdr,
                     const std::function<bool(const char *name, const GElf_Sym &symbol)> &visit);

// DT_RELA, DT_RELASZ and DT_RELAENT of a 64-bit little-endian .dynamic (a PIE's relocations, which
// the .gopclntab locator and the type-descriptor reader both follow); zeros where absent, relaent 24
// by default.
struct DynamicRela {
  uint64_t rela = 0, relasz = 0, relaent = 24;
};
DynamicRela read_dynamic_rela(const uint8_t *dynamic, uint64_t size);

} // namespace weave
