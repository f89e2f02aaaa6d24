// One walk over an ELF symbol table (libelf), shared by the binary reader, the .gopclntab locator
// and the generic-dictionary reader.
#pragma once

#include <gelf.h>

#include <functional>

namespace weave {

// Calls visit(name, symbol) for each symbol with a non-empty name in `scn` (a SHT_SYMTAB section
// whose header is `shdr`), in order, until visit returns false. Returns false when the section's
// data cannot be read.
bool for_each_symbol(Elf *elf, Elf_Scn *scn, const GElf_Shdr &shdr,
                     const std::function<bool(const char *name, const GElf_Sym &symbol)> &visit);

} // namespace weave
