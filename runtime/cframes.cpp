#include "cframes.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace weave {

struct CFrames::Impl {
  int fd = -1;
  Elf *elf = nullptr;
  Dwarf_CFI *cfi = nullptr; // .eh_frame
  // The DWARF, opened the first time a frame is named: libdw decompresses every debug section as it
  // opens them (a Caddy's: 50 MB), and most tracers never name a C frame.
  Dwarf *dwarf = nullptr;
  bool dwarf_opened = false;
  Dwarf *debug() {
    if (!dwarf_opened && elf) {
      dwarf_opened = true;
      dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
    }
    return dwarf;
  }
  Arch arch = Arch::X86_64;
  const std::vector<ElfSymbol> *symbols = nullptr;
  int registers = 17; // DWARF register numbers a frame can restore
  int sp_reg = 7;
  // .dynsym's functions, sorted by address: a stripped binary keeps them (a cgo program exports
  // its C functions there), and glibc's backtrace_symbols names frames from them too.
  std::vector<ElfSymbol> dynamic;
};

namespace {

// The function covering `pc` in `symbols` (sorted by address), or null.
const ElfSymbol *covering(const std::vector<ElfSymbol> &symbols, uint64_t pc) {
  auto it = std::upper_bound(symbols.begin(), symbols.end(), pc,
                             [](uint64_t a, const ElfSymbol &s) { return a < s.address; });
  if (it == symbols.begin())
    return nullptr;
  --it;
  return pc < it->address + std::max<uint64_t>(it->size, 1) ? &*it : nullptr;
}

void read_dynsym(Elf *elf, std::vector<ElfSymbol> &out) {
  for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM || !shdr.sh_entsize)
      continue;
    Elf_Data *data = elf_getdata(scn, nullptr);
    if (!data)
      continue;
    size_t count = std::min<size_t>(shdr.sh_size / shdr.sh_entsize, 1u << 20);
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
        continue;
      const char *name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (name && *name)
        out.push_back(ElfSymbol{name, sym.st_value, sym.st_size});
    }
  }
  std::sort(out.begin(), out.end(), [](const ElfSymbol &a, const ElfSymbol &b) {
    return a.address != b.address ? a.address < b.address : a.name < b.name;
  });
}

} // namespace

CFrames::CFrames(const std::string &path, Arch arch, const std::vector<ElfSymbol> *symbols)
    : impl_(std::make_unique<Impl>()) {
  impl_->arch = arch;
  impl_->symbols = symbols;
  impl_->registers = arch == Arch::X86_64 ? 17 : arch == Arch::Arm64 ? 32 : 9;
  impl_->sp_reg = arch == Arch::X86_64 ? 7 : arch == Arch::Arm64 ? 31 : 4;
  elf_version(EV_CURRENT);
  impl_->fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl_->fd < 0)
    return;
  impl_->elf = elf_begin(impl_->fd, ELF_C_READ_MMAP, nullptr);
  if (!impl_->elf)
    return;
  impl_->cfi = dwarf_getcfi_elf(impl_->elf);
  read_dynsym(impl_->elf, impl_->dynamic);
}

CFrames::~CFrames() {
  if (impl_->dwarf)
    dwarf_end(impl_->dwarf);
  if (impl_->cfi)
    dwarf_cfi_end(impl_->cfi);
  if (impl_->elf)
    elf_end(impl_->elf);
  if (impl_->fd >= 0)
    close(impl_->fd);
}

namespace {

// Evaluates the DWARF expressions CFI uses (register plus offset, CFA plus offset, and the few
// stack operations compilers emit in DW_CFA_expression rules). `is_value` says the result is a
// value (DW_OP_stack_value, a register) rather than an address. False when it needs something
// unknown or uses an operation this does not evaluate.
bool evaluate(const Dwarf_Op *ops, size_t nops, const CFrameRegs &regs, const uint64_t *cfa,
              const std::function<bool(uint64_t, uint64_t &)> &read, uint64_t &result, bool &is_value) {
  uint64_t stack[16];
  size_t depth = 0;
  is_value = false;
  auto push = [&](uint64_t v) {
    if (depth == 16)
      return false;
    stack[depth++] = v;
    return true;
  };
  for (size_t i = 0; i < nops; ++i) {
    const Dwarf_Op &op = ops[i];
    uint8_t atom = op.atom;
    if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
      int r = atom - DW_OP_breg0;
      if (!regs.has(r) || !push(regs.value[r] + op.number))
        return false;
    } else if (atom == DW_OP_bregx) {
      int r = static_cast<int>(op.number);
      if (!regs.has(r) || !push(regs.value[r] + op.number2))
        return false;
    } else if (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) {
      int r = atom - DW_OP_reg0;
      if (!regs.has(r) || !push(regs.value[r]))
        return false;
      is_value = true;
    } else if (atom == DW_OP_regx) {
      int r = static_cast<int>(op.number);
      if (!regs.has(r) || !push(regs.value[r]))
        return false;
      is_value = true;
    } else if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
      if (!push(atom - DW_OP_lit0))
        return false;
    } else if (atom == DW_OP_call_frame_cfa) {
      if (!cfa || !push(*cfa))
        return false;
    } else if (atom == DW_OP_const1u || atom == DW_OP_const2u || atom == DW_OP_const4u || atom == DW_OP_const8u ||
               atom == DW_OP_constu || atom == DW_OP_const1s || atom == DW_OP_const2s || atom == DW_OP_const4s ||
               atom == DW_OP_const8s || atom == DW_OP_consts) {
      if (!push(op.number))
        return false;
    } else if (atom == DW_OP_plus_uconst) {
      if (!depth)
        return false;
      stack[depth - 1] += op.number;
    } else if (atom == DW_OP_plus || atom == DW_OP_minus) {
      if (depth < 2)
        return false;
      uint64_t b = stack[--depth];
      stack[depth - 1] = atom == DW_OP_plus ? stack[depth - 1] + b : stack[depth - 1] - b;
    } else if (atom == DW_OP_deref) {
      if (!depth || !read(stack[depth - 1], stack[depth - 1]))
        return false;
    } else if (atom == DW_OP_stack_value) {
      is_value = true;
    } else if (atom == DW_OP_nop) {
    } else {
      return false;
    }
  }
  if (!depth)
    return false;
  result = stack[depth - 1];
  return true;
}

} // namespace

CUnwinder::Step CFrames::step(CFrameRegs &regs, const std::function<bool(uint64_t, uint64_t &)> &read) const {
  if (!impl_->cfi || regs.pc == 0 || regs.pc - 1 < bias_)
    return Step::NoCfi;
  // A return address: the call is the instruction before it, and so is the CFI row that applies.
  Dwarf_Frame *frame = nullptr;
  if (dwarf_cfi_addrframe(impl_->cfi, regs.pc - 1 - bias_, &frame) != 0 || !frame)
    return Step::NoCfi;
  struct Free {
    Dwarf_Frame *f;
    ~Free() { free(f); }
  } owner{frame};
  int ra = dwarf_frame_info(frame, nullptr, nullptr, nullptr);
  Dwarf_Op *ops = nullptr;
  size_t nops = 0;
  if (ra < 0 || ra >= CFrameRegs::kCount || dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops == 0)
    return Step::NoCfi;
  uint64_t cfa = 0;
  bool is_value = false;
  if (!evaluate(ops, nops, regs, nullptr, read, cfa, is_value))
    return Step::Lost;
  CFrameRegs caller;
  bool ra_known = false;
  for (int r = 0; r < std::max(impl_->registers, ra + 1); ++r) {
    Dwarf_Op mem[3];
    if (dwarf_frame_register(frame, r, mem, &ops, &nops) != 0)
      continue;
    if (nops == 0) {
      if (ops == nullptr && regs.has(r)) // same value
        caller.set(r, regs.value[r]);
      else if (ops == mem && r == ra) // undefined return address: the thread's first frame
        return Step::Top;
      continue;
    }
    uint64_t v = 0;
    if (!evaluate(ops, nops, regs, &cfa, read, v, is_value) || (!is_value && !read(v, v)))
      continue;
    caller.set(r, v);
    ra_known = ra_known || r == ra;
  }
  if (!ra_known)
    return Step::Lost;
  // The caller's SP is the CFA (x86-64, 386, arm64 alike).
  caller.set(impl_->sp_reg, cfa);
  caller.sp = cfa;
  caller.pc = caller.value[ra];
  // A frame that does not move SP up would loop: a damaged stack or a wrong rule.
  if (cfa <= regs.sp)
    return Step::Lost;
  regs = caller;
  return Step::Ok;
}

std::optional<uint64_t> CFrames::vaddr_of_offset(uint64_t offset) const {
  size_t count = 0;
  if (!impl_->elf || elf_getphdrnum(impl_->elf, &count) != 0)
    return std::nullopt;
  for (size_t i = 0; i < count && i < 256; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(impl_->elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD && offset >= ph.p_offset &&
        offset - ph.p_offset < std::max<uint64_t>(ph.p_filesz, 1))
      return ph.p_vaddr + (offset - ph.p_offset);
  }
  return std::nullopt;
}

bool CFrames::has_cfi() const { return impl_->cfi != nullptr; }

std::vector<Pclntab::Frame> CFrames::frames(uint64_t return_address) const {
  std::vector<Pclntab::Frame> out;
  if (return_address == 0 || return_address - 1 < bias_)
    return out;
  uint64_t pc = return_address - 1 - bias_;
  if (impl_->debug()) {
    Dwarf_Die cu;
    if (dwarf_addrdie(impl_->dwarf, pc, &cu)) {
      Dwarf_Die *scopes = nullptr;
      int n = dwarf_getscopes(&cu, pc, &scopes);
      // The line at pc belongs to the innermost function (inlined or not); each inlined call's
      // position, to the function it was inlined into.
      std::string file = "?";
      int line = 0;
      if (Dwarf_Line *l = dwarf_getsrc_die(&cu, pc)) {
        if (const char *f = dwarf_linesrc(l, nullptr, nullptr))
          file = f;
        dwarf_lineno(l, &line);
      }
      Dwarf_Files *files = nullptr;
      size_t nfiles = 0;
      dwarf_getsrcfiles(&cu, &files, &nfiles);
      for (int i = 0; i < n; ++i) {
        Dwarf_Die *s = &scopes[i];
        int tag = dwarf_tag(s);
        if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
          continue;
        Pclntab::Frame f;
        Dwarf_Attribute attr_mem;
        Dwarf_Die origin;
        Dwarf_Die *named = s;
        if (dwarf_attr_integrate(s, DW_AT_abstract_origin, &attr_mem) && dwarf_formref_die(&attr_mem, &origin))
          named = &origin;
        const char *name = dwarf_diename(named);
        if (!name && dwarf_attr_integrate(named, DW_AT_name, &attr_mem))
          name = dwarf_formstring(&attr_mem);
        f.function = name ? name : "?";
        f.file = file;
        f.line = line;
        f.inlined = tag == DW_TAG_inlined_subroutine;
        out.push_back(f);
        if (tag == DW_TAG_subprogram)
          break;
        // The caller's position: where this call was inlined.
        Dwarf_Word call_file = 0, call_line = 0;
        if (dwarf_attr(s, DW_AT_call_file, &attr_mem))
          dwarf_formudata(&attr_mem, &call_file);
        if (dwarf_attr(s, DW_AT_call_line, &attr_mem))
          dwarf_formudata(&attr_mem, &call_line);
        const char *cf = files ? dwarf_filesrc(files, call_file, nullptr, nullptr) : nullptr;
        file = cf ? cf : "?";
        line = static_cast<int>(call_line);
      }
      free(scopes);
      if (!out.empty())
        return out;
    }
  }
  // Else the symbol tables: .symtab, or a stripped binary's .dynsym. No file or line.
  const ElfSymbol *sym = impl_->symbols ? covering(*impl_->symbols, pc) : nullptr;
  if (!sym)
    sym = covering(impl_->dynamic, pc);
  if (sym) {
    Pclntab::Frame f;
    f.function = sym->name;
    f.file = "?";
    out.push_back(f);
  }
  return out;
}

} // namespace weave
