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

DynamicRela read_dynamic_rela(const uint8_t *dynamic, uint64_t size) {
  auto le64 = [](const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
      v = v << 8 | p[i];
    return v;
  };
  DynamicRela out;
  for (uint64_t off = 0; off + 16 <= size; off += 16) {
    uint64_t tag = le64(dynamic + off), value = le64(dynamic + off + 8);
    if (tag == DT_NULL)
      break;
    if (tag == DT_RELA)
      out.rela = value;
    else if (tag == DT_RELASZ)
      out.relasz = value;
    else if (tag == DT_RELAENT)
      out.relaent = value;
  }
  return out;
}

} // namespace weave
