#include "gobinary/elf_symbols.h"

namespace weave {

bool for_each_symbol(Elf *elf, Elf_Scn *scn, const GElf_Shdr &shdr,
                     const std::function<bool(const char *name, const GElf_Sym &symbol)> &visit) {
  Elf_Data *data = elf_getdata(scn, nullptr);
  if (!data)
    return false;
  size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  size_t count = entsize ? data->d_size / entsize : 0;
  for (size_t i = 0; i < count; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(data, static_cast<int>(i), &sym))
      break;
    const char *name = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (name && *name && !visit(name, sym))
      break;
  }
  return true;
}

} // namespace weave
