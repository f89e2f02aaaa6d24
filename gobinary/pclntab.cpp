// Stage 2 — binary: the .gopclntab reader (see pclntab.h for the layouts it knows).
//
// Sources, per layout (all [S] in GO-ABI.md's sense):
//   - header and _func: go1.19 runtime/symtab.go (pcHeader, moduledata, functab, step, pcvalue,
//     funcfile, funcline1, funcdata), go1.19 runtime/runtime2.go (_func), go1.19
//     debug/gosym/pclntab.go (the 1.2 and 1.16 layouts, go12 functab); Go 1.16's _func has a pad
//     byte where 1.17 put `flag`; Go 1.20 added `startLine` after cuOffset (golang/go@HEAD
//     runtime/runtime2.go) and made inline records 16 bytes (HEAD runtime/symtabinl.go).
//   - moduledata: the first field points at the pcHeader (1.16+); text at word 22, gofunc at word
//     38 (1.18–1.19) or 40 (1.20+, after covctrs/ecovctrs). Go 1.26 keeps it in its own section
//     ".go.module" and always writes 0 as the header's textStart (go.dev/doc/go1.26, "several
//     minor changes to executable files"; quoted in goretk/gore#114).
//   - funcID of wrappers: see wrapper_func_id_for().
#include "gobinary/pclntab.h"
#include "gobinary/elf_symbols.h"
#include "common/diag.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <iterator>
#include <gelf.h>
#include <libelf.h>
#include <map>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <tuple>
#include <type_traits>
#include <unistd.h>
#include <utility>

namespace weave {

namespace pclntab_detail {

// Image is a copy of the file-backed bytes of every PT_LOAD (read, not mapped: a binary rebuilt
// while weave runs must not turn into SIGBUS), plus, for PIEs, the RELATIVE dynamic relocations
// (an external linker may leave a pointer's bytes 0 in the file and put the value in the
// relocation's addend): Reading::Whole. Its bytes stay valid as long as it lives, whatever is read
// after them.
struct Image : DescriptorSpace {
  std::string path;
  std::vector<LoadSegment> segments;
  std::vector<std::vector<uint8_t>> contents; // per segment, file_size bytes
  int ptr_size = 8;
  std::vector<std::pair<uint64_t, uint64_t>> relative; // (r_offset, addend), sorted

  // `size` file-backed bytes at vaddr, inside one segment; nullptr otherwise.
  const uint8_t *at(uint64_t vaddr, uint64_t size) const {
    for (size_t i = 0; i < segments.size(); ++i) {
      const LoadSegment &seg = segments[i];
      if (vaddr < seg.vaddr || vaddr - seg.vaddr >= seg.file_size)
        continue;
      uint64_t off = vaddr - seg.vaddr;
      if (size > seg.file_size - off)
        return nullptr;
      return contents[i].data() + off;
    }
    return nullptr;
  }
  // File-backed bytes from vaddr to the end of its segment (0 when unmapped).
  uint64_t available(uint64_t vaddr) const {
    for (const LoadSegment &seg : segments)
      if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.file_size)
        return seg.file_size - (vaddr - seg.vaddr);
    return 0;
  }
  const LoadSegment *segment_of(uint64_t vaddr) const {
    for (const LoadSegment &seg : segments)
      if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.mem_size)
        return &seg;
    return nullptr;
  }
  // A pointer-sized little-endian word at vaddr; a 0 that a RELATIVE relocation fills in at load
  // time reads as the relocation's addend. nullopt when vaddr is not file-backed.
  std::optional<uint64_t> pointer(uint64_t vaddr) const {
    const uint8_t *p = at(vaddr, static_cast<uint64_t>(ptr_size));
    if (!p)
      return std::nullopt;
    uint64_t value = 0;
    for (int i = 0; i < ptr_size; ++i)
      value |= static_cast<uint64_t>(p[i]) << (8 * i);
    if (value == 0 && !relative.empty()) {
      auto it =
          std::lower_bound(relative.begin(), relative.end(), std::make_pair(vaddr, uint64_t{0}));
      if (it != relative.end() && it->first == vaddr)
        return it->second;
    }
    return value;
  }

  const uint8_t *bytes(uint64_t vaddr, uint64_t size) override { return at(vaddr, size); }
  const uint8_t *span(uint64_t vaddr, uint64_t &size) override {
    size = available(vaddr);
    return size ? at(vaddr, size) : nullptr;
  }
  uint64_t room(uint64_t vaddr) override { return available(vaddr); }
  std::optional<uint64_t> pointer(uint64_t vaddr) override { return std::as_const(*this).pointer(vaddr); }
  bool mapped(uint64_t vaddr) override { return segment_of(vaddr) != nullptr; }
  bool code_entry(uint64_t pc) override {
    const LoadSegment *seg = segment_of(pc);
    return seg && (seg->flags & PF_X);
  }
  uint64_t bytes_read() const {
    uint64_t total = 0;
    for (const auto &c : contents)
      total += c.size();
    return total;
  }
};

} // namespace pclntab_detail

using pclntab_detail::Image;

namespace {

constexpr uint32_t kMagic12 = 0xfffffffb;  // Go 1.2–1.15
constexpr uint32_t kMagic116 = 0xfffffffa; // Go 1.16–1.17
constexpr uint32_t kMagic118 = 0xfffffff0; // Go 1.18–1.19
constexpr uint32_t kMagic120 = 0xfffffff1; // Go 1.20+

// go1.19 runtime/symtab.go: _PCDATA_InlTreeIndex, _FUNCDATA_InlTree (3 since Go 1.16).
constexpr uint32_t kPcdataInlTreeIndex = 2;
constexpr uint32_t kFuncdataInlTree = 3;
// Deeper inline chains than this mean a cycle in a damaged tree (the compiler stops far earlier).
constexpr int kMaxInlineDepth = 1000;

uint32_t le32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

uint64_t le(const uint8_t *p, int size) {
  uint64_t value = 0;
  for (int i = 0; i < size; ++i)
    value |= static_cast<uint64_t>(p[i]) << (8 * i);
  return value;
}

std::string hex(uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%#llx", static_cast<unsigned long long>(value));
  return buffer;
}

bool known_magic(uint32_t magic) {
  return magic == kMagic12 || magic == kMagic116 || magic == kMagic118 || magic == kMagic120;
}

// The 8-byte prefix every layout shares: magic, 0, 0, PC quantum, pointer size.
bool header_prefix(const uint8_t *p, int ptr_size) {
  return known_magic(le32(p)) && p[4] == 0 && p[5] == 0 && (p[6] == 1 || p[6] == 2 || p[6] == 4) &&
         p[7] == ptr_size;
}

[[noreturn]] void fail_unreadable(const std::string &path, const std::string &what) {
  throw UserError("binary-unreadable", "cannot read " + path + ": " + what, SourceLoc{path});
}

// Reads every PT_LOAD's file-backed bytes (load_binary has checked that they lie in the file).
void read_segments(Image &img, int fd) {
  for (const LoadSegment &seg : img.segments) {
    std::vector<uint8_t> bytes(static_cast<size_t>(seg.file_size));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = pread(fd, bytes.data() + done, bytes.size() - done,
                        static_cast<off_t>(seg.file_offset + done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        fail_unreadable(img.path, n < 0 ? std::strerror(errno)
                                        : "the file is shorter than its "
                                          "program headers say");
      done += static_cast<size_t>(n);
    }
    img.contents.push_back(std::move(bytes));
  }
}

// What the section headers and symbols say, when there are any.
struct ElfFacts {
  uint64_t pclntab_addr = 0, pclntab_size = 0;
  std::string pclntab_section;
  uint64_t text_section = 0;
  uint64_t go_module = 0;       // .go.module (Go 1.26+): runtime.firstmoduledata
  uint64_t firstmoduledata = 0; // symbol
  bool has_sections = false;
};

// `img`: the whole image, which takes a PIE's RELATIVE relocations (read on demand, the file's
// space finds them itself). The symbol table is walked for runtime.firstmoduledata only when it can
// matter: reading the whole image, or without a .go.module section (Go 1.26+) to find it by.
ElfFacts read_elf_facts(Image *img, const BinaryImage &binary, int fd) {
  ElfFacts facts;
  Elf *elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf)
    return facts;
  struct Closer {
    Elf *elf;
    ~Closer() { elf_end(elf); }
  } closer{elf};
  if (elf_kind(elf) != ELF_K_ELF)
    return facts;

  // Dynamic RELATIVE relocations of a 64-bit PIE, through PT_DYNAMIC (section headers optional).
  GElf_Ehdr ehdr;
  size_t phnum = 0;
  if (img && binary.pie && img->ptr_size == 8 && gelf_getehdr(elf, &ehdr) &&
      elf_getphdrnum(elf, &phnum) == 0) {
    unsigned relative_type = ehdr.e_machine == EM_AARCH64 ? 1027u : 8u; // R_*_RELATIVE
    for (size_t i = 0; i < phnum; ++i) {
      GElf_Phdr phdr;
      if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_DYNAMIC)
        continue;
      const uint8_t *dynamic = img->at(phdr.p_vaddr, phdr.p_filesz);
      if (!dynamic)
        break;
      const auto [rela, relasz, relaent] = read_dynamic_rela(dynamic, phdr.p_filesz);
      if (rela && relaent >= 24 && relasz / relaent < (1u << 26)) {
        const uint8_t *table = img->at(rela, relasz);
        for (uint64_t off = 0; table && off + 24 <= relasz; off += relaent)
          if ((le(table + off + 8, 8) & 0xffffffffu) == relative_type)
            img->relative.emplace_back(le(table + off, 8), le(table + off + 16, 8));
        std::sort(img->relative.begin(), img->relative.end());
      }
      break;
    }
  }

  size_t shnum = 0, shstrndx = 0;
  if (elf_getshdrnum(elf, &shnum) != 0 || shnum == 0 || elf_getshdrstrndx(elf, &shstrndx) != 0)
    return facts;
  facts.has_sections = true;
  Elf_Scn *symtab = nullptr;
  GElf_Shdr symtab_header{};
  for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr))
      continue;
    const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (!name)
      continue;
    // GO-ABI.md §6.2: .gopclntab, or .data.rel.ro.gopclntab in a PIE.
    if (!std::strcmp(name, ".gopclntab") || !std::strcmp(name, ".data.rel.ro.gopclntab")) {
      facts.pclntab_addr = shdr.sh_addr;
      facts.pclntab_size = shdr.sh_type == SHT_NOBITS ? 0 : shdr.sh_size;
      facts.pclntab_section = name;
    } else if (!std::strcmp(name, ".text")) {
      facts.text_section = shdr.sh_addr;
    } else if (!std::strcmp(name, ".go.module")) {
      facts.go_module = shdr.sh_addr;
    } else if (shdr.sh_type == SHT_SYMTAB) {
      symtab = scn;
      symtab_header = shdr;
    }
  }
  if (symtab && (img || !facts.go_module))
    for_each_symbol(elf, symtab, symtab_header, [&](const char *sym_name, const GElf_Sym &sym) {
      if (std::strcmp(sym_name, "runtime.firstmoduledata") != 0)
        return true;
      facts.firstmoduledata = sym.st_value;
      return false;
    });
  return facts;
}

} // namespace

// FuncRecord is one _func decoded for the reader's own use.
struct Pclntab::FuncRecord {
  uint64_t entry = 0, end = 0;
  uint32_t nameoff = 0, pcsp = 0, pcfile = 0, pcln = 0, npcdata = 0, cu_offset = 0;
  uint32_t nfuncdata = 0;
  uint64_t pcdata = 0;     // table offset of pcdata[0]
  uint64_t funcdata = 0;   // table offset of funcdata[0]
  bool has_tables = false; // false for the Go 1.2–1.15 layout
};

void Pclntab::corrupt(const std::string &what) const {
  throw UserError("bad-pclntab",
                  path_ + ": damaged Go function table (.gopclntab, magic " + hex(magic_) + " at " +
                      hex(address_) + "): " + what,
                  SourceLoc{path_},
                  "the file may be truncated or modified; rebuild the binary or copy it again");
}

const uint8_t *Pclntab::at(uint64_t off, uint64_t size) const {
  if (off > size_ || size_ - off < size)
    corrupt(std::to_string(size) + " bytes at table offset " + hex(off) + " lie past the table's end (" +
            hex(size_) + ")");
  const uint8_t *p = space_->bytes(address_ + off, size);
  if (!p)
    corrupt(std::to_string(size) + " bytes at table offset " + hex(off) + " cannot be read from the file");
  return p;
}

uint8_t Pclntab::u8(uint64_t off) const { return *at(off, 1); }

uint32_t Pclntab::u32(uint64_t off) const {
  if (off > size_ || size_ - off < 4)
    corrupt("a 4-byte field at table offset " + hex(off) + " lies past the table's end (" +
            hex(size_) + ")");
  return le32(at(off, 4));
}

uint64_t Pclntab::word(uint64_t off) const {
  if (off > size_ || size_ - off < static_cast<uint64_t>(ptr_size_))
    corrupt("a pointer at table offset " + hex(off) + " lies past the table's end (" + hex(size_) +
            ")");
  auto value = space_->pointer(address_ + off);
  if (!value)
    corrupt("a pointer at table offset " + hex(off) + " cannot be read from the file");
  return *value;
}

std::optional<std::string> Pclntab::c_string(uint64_t off) const {
  std::string out;
  while (off < size_) {
    uint64_t n = 0;
    const uint8_t *p = space_->span(address_ + off, n);
    if (!p)
      corrupt("table offset " + hex(off) + " cannot be read from the file");
    n = std::min(n, size_ - off);
    if (const void *nul = std::memchr(p, 0, n)) {
      out.append(reinterpret_cast<const char *>(p), static_cast<const uint8_t *>(nul) - p);
      return out;
    }
    out.append(reinterpret_cast<const char *>(p), n);
    off += n;
  }
  return std::nullopt;
}

std::string Pclntab::record_name(uint32_t nameoff) const {
  uint64_t off = funcnametab_ + nameoff;
  if (off >= size_)
    damaged("an inline record's name offset " + hex(nameoff) + " lies past the table's end");
  auto name = c_string(off);
  if (!name)
    damaged("the name at offset " + hex(nameoff) + " is not terminated");
  return std::move(*name);
}

std::string Pclntab::name_at(uint32_t nameoff) const {
  uint64_t off = funcnametab_ + nameoff;
  if (off >= size_)
    corrupt("name offset " + hex(nameoff) + " lies past the table's end");
  auto name = c_string(off);
  if (!name)
    corrupt("the name at offset " + hex(nameoff) + " is not terminated");
  return std::move(*name);
}

int Pclntab::wrapper_func_id_for(GoVersion v) {
  // The funcID enum ends in "... systemstack, systemstack_switch, wrapper" since Go 1.17 and in
  // "... handleAsyncEvent, asyncPreempt, wrapper" in 1.14–1.16; entries added or removed in between
  // move the wrapper's number. [S] = runtime/symtab.go (internal/abi/symtab.go since 1.21) of that
  // version, read directly (1.19, HEAD) or through per-version copies (the LLVM BOLT Golang pass's
  // go_v1_16_5.h, go_v1_17.h, go_v1_22_1.h); [V] = seen in a binary (tests/npm, test_pclntab).
  //   1.14–1.15  21  asyncPreempt = 20                                        [S]
  //   1.16       22  + externalthreadhandler, debugCallV1, panicwrap, ...     [S][V] go1.16
  //   1.17       22  sorted; abort and debugCallV2 added, jmpdefer kept       [S][V] go1.17.2
  //   1.18–1.21  21  jmpdefer removed                                         [S][V] 1.19.x, 1.20.4
  //   1.22–1.24  22  corostart (coroutines, iter.Pull)                        [S][V] go1.23.5
  //   1.25+      23  runfinq split into runFinalizers, runCleanups (golang/go e46c8e0, "runtime:
  //                  schedule cleanups across multiple goroutines", May 2025) [S][V] go1.26.5
  if (v.major != 1 || v.minor < 14)
    return -1;
  if (v.minor <= 15)
    return 21;
  if (v.minor <= 17)
    return 22;
  if (v.minor <= 21)
    return 21;
  if (v.minor <= 24)
    return 22;
  return 23;
}

Pclntab::FuncRecord Pclntab::record(const PclnFunction &fn) const {
  FuncRecord r;
  r.entry = fn.entry;
  r.end = fn.end;
  uint64_t off = fn.offset_in_table;
  if (magic_ == kMagic12)
    return r;
  uint64_t base; // offset of nameoff
  uint64_t fixed;
  switch (magic_) {
  case kMagic116: // entry uintptr, then the u32 fields; funcID at +32, nfuncdata at +35
    base = off + static_cast<uint64_t>(ptr_size_);
    fixed = 36;
    break;
  case kMagic118: // entryoff u32, then as above
    base = off + 4;
    fixed = 36;
    break;
  default: // 1.20+: startLine i32 after cuOffset
    base = off + 4;
    fixed = 40;
    break;
  }
  if (base + fixed > size_)
    corrupt("the _func of " + fn.name + " runs past the table's end");
  r.nameoff = u32(base);
  r.pcsp = u32(base + 12);
  r.pcfile = u32(base + 16);
  r.pcln = u32(base + 20);
  r.npcdata = u32(base + 24);
  r.cu_offset = u32(base + 28);
  r.nfuncdata = u8(base + fixed - 1);
  r.pcdata = base + fixed;
  r.funcdata = r.pcdata + 4ull * r.npcdata;
  if (magic_ == kMagic116 && ptr_size_ == 8 && ((address_ + r.funcdata) & 4))
    r.funcdata += 4; // go1.16 runtime funcdata(): pointer-aligned absolute addresses
  r.has_tables = true;
  return r;
}

std::optional<int32_t> Pclntab::pcvalue(uint32_t table, uint64_t entry, uint64_t target,
                                        const PclnFunction &fn) const {
  std::optional<int32_t> found;
  walk_pcvalue(table, entry, fn, [&](int32_t value, uint64_t end) {
    if (target < end)
      found = value;
    return !found;
  });
  return found;
}

void Pclntab::walk_pcvalue(uint32_t table, uint64_t entry, const PclnFunction &fn,
                           const std::function<bool(int32_t, uint64_t)> &each) const {
  // go1.19 runtime/symtab.go pcvalue/step: pairs of (zig-zag uvarint value delta, uvarint PC
  // delta × quantum); the value starts at -1; a 0 byte where a value delta would start ends the
  // table, except before the first pair (while pc is still the entry).
  if (table == 0)
    return;
  uint64_t p = pctab_ + table;
  (void)fn;
  if (p >= size_)
    damaged("its pc-value table at " + hex(table) + " lies past the table's end");
  // The table's bytes a span at a time: [window, window + window_size) holds table offsets
  // [window_at, window_at + window_size).
  const uint8_t *window = nullptr;
  uint64_t window_at = 0, window_size = 0;
  auto byte_at = [&](uint64_t pos) -> uint8_t {
    if (pos >= size_)
      damaged("its pc-value table at " + hex(table) + " runs past the table's end");
    if (pos < window_at || pos - window_at >= window_size) {
      window = space_->span(address_ + pos, window_size);
      if (!window)
        damaged("its pc-value table at " + hex(table) + " cannot be read from the file");
      window_at = pos;
    }
    return window[pos - window_at];
  };
  auto varint = [&](uint64_t &pos) -> uint32_t {
    uint32_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      uint8_t byte = byte_at(pos++);
      value |= static_cast<uint32_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return value;
    }
    damaged("its pc-value table at " + hex(table) + " holds an overlong varint");
  };
  uint64_t pc = entry;
  int32_t value = -1;
  while (true) {
    if (byte_at(p) == 0 && pc != entry)
      return; // the end of the table
    uint32_t uvdelta = varint(p);
    // Zig-zag decode; added as unsigned so that a damaged table cannot overflow an int32.
    value = static_cast<int32_t>(static_cast<uint32_t>(value) + (-(uvdelta & 1) ^ (uvdelta >> 1)));
    uint32_t pcdelta = varint(p);
    pc += static_cast<uint32_t>(pcdelta * static_cast<uint32_t>(quantum_));
    if (!each(value, pc)) // value holds for [previous pc, pc)
      return;
    window_size = 0; // `each` may have read through the space, which may have moved its bytes
  }
}

std::map<std::string, std::vector<std::string>> Pclntab::inline_sites(std::vector<Problem> *problems) const {
  std::map<std::string, std::vector<std::string>> sites;
  const uint64_t record_size = magic_ == kMagic120 ? 16 : 20;
  for (const PclnFunction &fn : functions()) {
    FuncRecord r = record(fn);
    if (!r.has_tables || r.npcdata <= kPcdataInlTreeIndex)
      continue;
    uint64_t tree = inline_tree(r);
    if (!tree)
      continue;
    // Every record some PC of the function names, innermost or (at its inline mark) a parent; read
    // whole before any is added, so that a function whose tree does not check out adds nothing.
    std::set<std::string> callees;
    try {
      std::set<int32_t> indexes;
      walk_pcvalue(u32(r.pcdata + 8), fn.entry, fn, [&](int32_t value, uint64_t end) {
        if (value >= 0)
          indexes.insert(value);
        return end < fn.end && indexes.size() <= 100000; // bounded on a damaged table
      });
      for (int32_t index : indexes) {
        const uint8_t *rec = space_->bytes(tree + static_cast<uint64_t>(index) * record_size, record_size);
        if (!rec)
          damaged("inline record " + std::to_string(index) + " at " +
                  hex(tree + static_cast<uint64_t>(index) * record_size) + " is outside the file");
        callees.insert(record_name(le32(rec + (magic_ == kMagic120 ? 4 : 12))));
      }
    } catch (const Damaged &d) {
      if (problems)
        problems->push_back({fn.name, d.reason});
      continue;
    }
    for (const std::string &callee : callees) {
      std::vector<std::string> &into = sites[callee];
      if (into.empty() || into.back() != fn.name)
        into.push_back(fn.name);
    }
  }
  return sites;
}

std::vector<Pclntab::InlinedCopy>
Pclntab::inlined_copies(const std::function<bool(std::string_view)> &wanted,
                        std::vector<Problem> *problems) const {
  std::vector<InlinedCopy> copies;
  const uint64_t record_size = magic_ == kMagic120 ? 16 : 20;
  for (const PclnFunction &fn : functions()) {
    FuncRecord r = record(fn);
    if (!r.has_tables || r.npcdata <= kPcdataInlTreeIndex)
      continue;
    uint64_t tree = inline_tree(r);
    if (!tree)
      continue;
    try {
      std::vector<InlinedCopy> own = copies_in(fn, r, tree, record_size, wanted);
      std::move(own.begin(), own.end(), std::back_inserter(copies));
    } catch (const Damaged &d) {
      if (problems)
        problems->push_back({fn.name, d.reason});
    }
  }
  std::sort(copies.begin(), copies.end(), [](const InlinedCopy &a, const InlinedCopy &b) {
    return std::tie(a.function, a.first_pc, a.index) < std::tie(b.function, b.first_pc, b.index);
  });
  return copies;
}

std::vector<Pclntab::InlinedCopy>
Pclntab::copies_in(const PclnFunction &fn, const FuncRecord &r, uint64_t tree, uint64_t record_size,
                   const std::function<bool(std::string_view)> &wanted) const {
  const uint32_t inl_table = u32(r.pcdata + 8);
  // The lowest PC of each record's own instructions, in runs of the InlTreeIndex table.
  std::map<int32_t, uint64_t> lowest;
  uint64_t start = fn.entry;
  walk_pcvalue(inl_table, fn.entry, fn, [&](int32_t value, uint64_t end) {
    if (value >= 0 && !lowest.count(value))
      lowest[value] = start;
    start = end;
    return end < fn.end && lowest.size() <= 100000; // bounded on a damaged table
  });
  struct Record {
    uint8_t func_id = 0;
    std::string name;
    int32_t parent = -1; // the record holding the call, -1 for the physical function
    uint64_t parent_pc = 0;
    bool call_site_known = true;
  };
  std::map<int32_t, Record> records;
  // Records and their ancestors: a copy's first PC is the lowest of its own and of every copy
  // inlined into it (its first instruction may belong to a call it makes).
  std::vector<int32_t> pending;
  for (const auto &[index, pc] : lowest)
    pending.push_back(index);
  std::map<int32_t, uint64_t> first = lowest;
  while (!pending.empty()) {
    int32_t index = pending.back();
    pending.pop_back();
    if (records.count(index))
      continue;
    if (records.size() > 100000)
      damaged("its inline tree has too many records");
    const uint8_t *rec = space_->bytes(tree + static_cast<uint64_t>(index) * record_size, record_size);
    if (!rec)
      damaged("inline record " + std::to_string(index) + " at " +
              hex(tree + static_cast<uint64_t>(index) * record_size) + " is outside the file");
    Record out;
    out.func_id = magic_ == kMagic120 ? rec[0] : rec[2];
    int32_t parent_pc = static_cast<int32_t>(le32(rec + (magic_ == kMagic120 ? 8 : 16)));
    out.name = record_name(le32(rec + (magic_ == kMagic120 ? 4 : 12))); // rec is read whole first
    if (parent_pc < 0 || static_cast<uint64_t>(parent_pc) >= fn.end - fn.entry)
      damaged("inline record " + std::to_string(index) + " (" + out.name + ") has parent PC offset " +
              std::to_string(parent_pc) + ", outside the function");
    out.parent_pc = fn.entry + static_cast<uint64_t>(parent_pc);
    out.parent = pcvalue(inl_table, fn.entry, out.parent_pc, fn).value_or(-1);
    if (out.parent >= 0)
      pending.push_back(out.parent);
    records[index] = std::move(out);
  }
  // A record's parent is the record at its parent PC (runtime/symtabinl.go, inlineUnwinder.next).
  // A PC that the record found there also gives as its own parent PC is no call site: Go 1.21+
  // inlines calls while it evaluates package-level initializers and leaves all their parent PCs 0,
  // and the init's first instructions are the first such copy's own. Every record naming such a PC
  // is read as what its instructions are (the callee's code, in the physical function), its call
  // site unknown.
  for (auto &[index, rec] : records)
    if (rec.parent >= 0 && records.at(rec.parent).parent_pc == rec.parent_pc) {
      rec.parent = -1;
      rec.call_site_known = false;
    }
  // Any other cycle is cut alike, so the parent links form a forest. Each record is visited once:
  // 0 unseen, 1 on the current walk, 2 done.
  std::map<int32_t, int> state;
  for (auto &[index, rec] : records) {
    std::vector<int32_t> walk;
    int32_t at = index;
    while (at >= 0 && state[at] == 0) {
      state[at] = 1;
      walk.push_back(at);
      at = records.at(at).parent;
    }
    if (at >= 0 && state[at] == 1) // a cycle: from `at` to the end of this walk
      for (auto it = std::find(walk.begin(), walk.end(), at); it != walk.end(); ++it) {
        records.at(*it).parent = -1;
        records.at(*it).call_site_known = false;
      }
    for (int32_t w : walk)
      state[w] = 2;
  }
  for (const auto &[index, pc] : lowest) {
    int32_t at = records.at(index).parent;
    for (int depth = 0; at >= 0; ++depth) {
      if (depth > kMaxInlineDepth)
        damaged("its inline tree nests deeper than " + std::to_string(kMaxInlineDepth) + " calls");
      auto it = first.find(at);
      if (it == first.end() || it->second > pc)
        first[at] = pc;
      at = records.at(at).parent;
    }
  }
  std::vector<InlinedCopy> copies;
  for (const auto &[index, rec] : records) {
    if (wanted && !wanted(rec.name))
      continue;
    InlinedCopy copy;
    copy.function = rec.name;
    copy.physical = fn.name;
    copy.first_pc = first.at(index);
    copy.caller = rec.parent >= 0 ? records.at(rec.parent).name : fn.name;
    copy.index = index;
    copy.func_id = rec.func_id;
    copy.call_site_known = rec.call_site_known;
    // The call's position: the parent's file and line at the call's inline mark.
    std::optional<int32_t> fileno, line;
    if (rec.call_site_known) {
      fileno = pcvalue(r.pcfile, fn.entry, rec.parent_pc, fn);
      line = pcvalue(r.pcln, fn.entry, rec.parent_pc, fn);
    }
    copy.file = fileno && *fileno >= 0 ? file_name(r, *fileno) : "?";
    copy.line = line && *line >= 0 ? *line : 0;
    copies.push_back(std::move(copy));
  }
  return copies;
}

std::optional<int32_t> Pclntab::sp_delta(const PclnFunction &fn, uint64_t pc) const {
  if (pc < fn.entry || pc >= fn.end)
    return std::nullopt;
  FuncRecord r = record(fn);
  if (!r.has_tables)
    return std::nullopt;
  try {
    return pcvalue(r.pcsp, fn.entry, pc, fn);
  } catch (const Damaged &) {
    return std::nullopt; // a pcsp table that does not check out knows no delta
  }
}

uint64_t Pclntab::inline_tree(const FuncRecord &r) const {
  if (r.nfuncdata <= kFuncdataInlTree || r.npcdata <= kPcdataInlTreeIndex)
    return 0;
  if (magic_ == kMagic116)
    return word(r.funcdata + kFuncdataInlTree * static_cast<uint64_t>(ptr_size_));
  uint32_t off = u32(r.funcdata + 4ull * kFuncdataInlTree);
  if (off == 0xffffffffu)
    return 0;
  if (gofunc_ == 0)
    corrupt("an inline tree is stored relative to moduledata.gofunc, and "
            "runtime.firstmoduledata was not found");
  return gofunc_ + off;
}

std::string Pclntab::file_name(const FuncRecord &r, int32_t fileno) const {
  // go1.19 runtime funcfile: cutab[cuOffset + fileno] is an offset into filetab, ^0 unknown.
  uint64_t index = static_cast<uint64_t>(r.cu_offset) + static_cast<uint32_t>(fileno);
  uint64_t off = cutab_ + 4 * index;
  if (index > (size_ >> 2) || off + 4 > size_)
    return "?";
  uint32_t fileoff = u32(off);
  if (fileoff == 0xffffffffu)
    return "?";
  uint64_t at = filetab_ + fileoff;
  if (at >= size_)
    corrupt("file name offset " + hex(fileoff) + " lies past the table's end");
  auto name = c_string(at);
  if (!name)
    corrupt("the file name at offset " + hex(fileoff) + " is not terminated");
  return std::move(*name);
}

std::vector<Pclntab::Frame> Pclntab::symbolize(uint64_t pc, bool keep_wrappers) const {
  std::vector<Frame> frames;
  const PclnFunction *fn = at_pc(pc);
  if (!fn)
    return frames;
  FuncRecord r = record(*fn);
  if (!r.has_tables) {
    frames.push_back(Frame{fn->name, "?", 0, false});
    return frames;
  }
  auto file_line = [&](uint64_t at, Frame &frame) {
    auto fileno = pcvalue(r.pcfile, fn->entry, at, *fn);
    auto line = pcvalue(r.pcln, fn->entry, at, *fn);
    if (!fileno || !line || *fileno == -1 || *line == -1) {
      frame.file = "?";
      frame.line = 0;
      return;
    }
    frame.file = file_name(r, *fileno);
    frame.line = *line;
  };

  // HEAD runtime/symtabinl.go: index = pcdata[InlTreeIndex](pc); while index >= 0 emit the
  // inlined callee named by the record, then continue at entry + parentPc in the caller. A walk
  // that comes back to a record it has seen has no recorded call site (InlinedCopy::
  // call_site_known), and one that meets a record that does not check out cannot go on: either
  // ends there, with the physical function's position unknown.
  bool position_known = true;
  try {
    uint64_t tree = inline_tree(r);
    if (tree) {
      const uint64_t record_size = magic_ == kMagic120 ? 16 : 20;
      int32_t index =
          pcvalue(r.npcdata > kPcdataInlTreeIndex ? u32(r.pcdata + 8) : 0, fn->entry, pc, *fn)
              .value_or(-1);
      std::set<int32_t> seen;
      while (index >= 0) {
        if (!seen.insert(index).second || seen.size() > static_cast<size_t>(kMaxInlineDepth)) {
          position_known = false;
          break;
        }
        const uint8_t *rec =
            space_->bytes(tree + static_cast<uint64_t>(index) * record_size, record_size);
        if (!rec)
          damaged("inline record " + std::to_string(index) + " is outside the file");
        // <=1.19: {parent i16, funcID u8, _, file i32, line i32, nameoff i32, parentPc i32}
        // 1.20+:  {funcID u8, _ [3], nameOff i32, parentPc i32, startLine i32}
        uint8_t func_id = magic_ == kMagic120 ? rec[0] : rec[2];
        uint32_t nameoff = le32(rec + (magic_ == kMagic120 ? 4 : 12));
        int32_t parent_pc = static_cast<int32_t>(le32(rec + (magic_ == kMagic120 ? 8 : 16)));
        if (keep_wrappers || static_cast<int>(func_id) != wrapper_id_) {
          Frame frame{record_name(nameoff), "", 0, true};
          file_line(pc, frame);
          frames.push_back(std::move(frame));
        }
        if (parent_pc < 0 || static_cast<uint64_t>(parent_pc) >= fn->end - fn->entry)
          damaged("inline record " + std::to_string(index) + " has parent PC offset " +
                  std::to_string(parent_pc) + ", outside the function");
        pc = fn->entry + static_cast<uint64_t>(parent_pc);
        index = pcvalue(u32(r.pcdata + 8), fn->entry, pc, *fn).value_or(-1);
        // The record at the parent PC giving that same PC as its own call site: no call site was
        // recorded (Pclntab::InlinedCopy::call_site_known).
        if (index >= 0) {
          const uint8_t *next =
              space_->bytes(tree + static_cast<uint64_t>(index) * record_size, record_size);
          if (next &&
              static_cast<int32_t>(le32(next + (magic_ == kMagic120 ? 8 : 16))) == parent_pc) {
            position_known = false;
            break;
          }
        }
      }
    }
  } catch (const Damaged &) {
    position_known = false;
  }
  Frame physical{fn->name, "?", 0, false};
  physical.wrapper = wrapper_id_ >= 0 && static_cast<int>(fn->func_id) == wrapper_id_;
  if (position_known) {
    try {
      file_line(pc, physical);
    } catch (const Damaged &) {
      physical.file = "?";
      physical.line = 0;
    }
  }
  frames.push_back(std::move(physical));
  return frames;
}

std::vector<Pclntab::LineStart> Pclntab::line_starts(const std::function<bool(std::string_view)> &file_matches,
                                                     int line, std::vector<std::string> *files,
                                                     std::vector<Problem> *problems) const {
  std::vector<LineStart> out;
  std::set<std::string> seen_files;
  struct Run {
    int32_t value;
    uint64_t start, end;
  };
  for (const PclnFunction &fn : functions()) {
    FuncRecord r = record(fn);
    if (!r.has_tables || r.pcfile == 0 || r.pcln == 0)
      continue;
    try {
      // The file runs first: most functions hold no code of a matching file, and their line table
      // is not read.
      std::vector<Run> file_runs, line_runs;
      std::map<int32_t, std::optional<std::string>> names; // fileno -> the name, when it matches
      bool any = false;
      uint64_t start = fn.entry;
      walk_pcvalue(r.pcfile, fn.entry, fn, [&](int32_t value, uint64_t end) {
        file_runs.push_back({value, start, end});
        start = end;
        if (value >= 0 && !names.count(value)) {
          std::string name = file_name(r, value);
          names[value] = file_matches(name) ? std::optional<std::string>(name) : std::nullopt;
        }
        any = any || (value >= 0 && names[value]);
        return end < fn.end && file_runs.size() <= 1000000; // bounded on a damaged table
      });
      if (!any)
        continue;
      for (const Run &run : file_runs)
        if (run.value >= 0 && names[run.value] && run.start < run.end)
          seen_files.insert(*names[run.value]);
      start = fn.entry;
      walk_pcvalue(r.pcln, fn.entry, fn, [&](int32_t value, uint64_t end) {
        line_runs.push_back({value, start, end});
        start = end;
        return end < fn.end && line_runs.size() <= 1000000;
      });
      // Both tables' runs cut the function into pieces of one (file, line); consecutive pieces at
      // the line in one matching file make one run, which starts the line there.
      size_t fi = 0, li = 0;
      std::optional<LineStart> open;
      auto close = [&](uint64_t end) {
        if (open) {
          open->end = end;
          out.push_back(std::move(*open));
          open.reset();
        }
      };
      for (uint64_t pc = fn.entry; pc < fn.end && fi < file_runs.size() && li < line_runs.size();) {
        while (fi < file_runs.size() && file_runs[fi].end <= pc)
          ++fi;
        while (li < line_runs.size() && line_runs[li].end <= pc)
          ++li;
        if (fi == file_runs.size() || li == line_runs.size())
          break;
        uint64_t end = std::min({file_runs[fi].end, line_runs[li].end, fn.end});
        int32_t fileno = file_runs[fi].value;
        bool match = line_runs[li].value == line && fileno >= 0 && names[fileno];
        if (!match || (open && open->file != *names[fileno]))
          close(pc);
        if (match && !open) {
          LineStart s;
          s.pc = pc;
          s.file = *names[fileno];
          s.physical = fn.name;
          s.function = fn.name;
          open = std::move(s);
        }
        pc = end;
      }
      close(fn.end);
    } catch (const Damaged &d) {
      if (problems)
        problems->push_back({fn.name, d.reason});
      std::erase_if(out, [&](const LineStart &s) { return s.physical == fn.name && s.pc >= fn.entry && s.pc < fn.end; });
    }
  }
  // Which function each start is written in: the innermost frame at its PC.
  for (LineStart &s : out) {
    std::vector<Frame> frames = symbolize(s.pc, true);
    if (frames.size() > 1 && frames.front().inlined) {
      s.function = frames.front().function;
      s.inlined = true;
    }
  }
  if (files)
    files->assign(seen_files.begin(), seen_files.end());
  return out;
}

const PclnFunction *Pclntab::at_pc(uint64_t pc) const {
  if (!listed_) {
    // The index's last entry at or below pc, by binary search in the file.
    if (pc < text_start_)
      return nullptr;
    const uint64_t target = pc - text_start_;
    if (index_entry(0) > target)
      return nullptr;
    uint64_t lo = 0, hi = nfunc_; // index_entry(lo) <= target; the answer is below hi
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (index_entry(mid) <= target)
        lo = mid;
      else
        hi = mid;
    }
    auto cached = looked_up_.find(lo);
    if (cached == looked_up_.end())
      cached = looked_up_.emplace(lo, decode_function(lo)).first;
    return pc < cached->second.end ? &cached->second : nullptr;
  }
  auto it = std::upper_bound(functions_.begin(), functions_.end(), pc,
                             [](uint64_t value, const PclnFunction &f) { return value < f.entry; });
  if (it == functions_.begin())
    return nullptr;
  --it;
  return pc < it->end ? &*it : nullptr;
}

std::vector<const PclnFunction *> Pclntab::find_all(std::string_view name) const {
  functions(); // the name index
  auto range = std::equal_range(
      by_name_.begin(), by_name_.end(), name, [this](const auto &a, const auto &b) {
        auto key = [this](const auto &x) -> std::string_view {
          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, uint32_t>)
            return functions_[x].name;
          else
            return x;
        };
        return key(a) < key(b);
      });
  std::vector<const PclnFunction *> out;
  for (auto it = range.first; it != range.second; ++it)
    out.push_back(&functions_[*it]);
  return out;
}

const PclnFunction *Pclntab::find(std::string_view name) const {
  auto all = find_all(name);
  if (all.size() <= 1)
    return all.empty() ? nullptr : all.front();
  // Two copies: the ABI wrapper is compiler-generated, so its code is at "<autogenerated>:1" and
  // its funcID is the wrapper id. The position decides first because a few real bodies carry the
  // wrapper id too (reflect.callMethod and reflect.callReflect are marked wrappers by name for
  // panic/recover: go1.19 reflect/value.go, callMethod's comment).
  const PclnFunction *best = nullptr;
  int best_rank = -1;
  for (const PclnFunction *f : all) {
    bool generated = false;
    try {
      auto frames = symbolize(f->entry, true);
      generated = !frames.empty() && frames.back().file == "<autogenerated>";
    } catch (const UserError &) {
      // a damaged line table: rank by funcID alone
    }
    int rank = 2 * !generated + (static_cast<int>(f->func_id) != wrapper_id_);
    if (rank > best_rank) {
      best = f;
      best_rank = rank;
    }
  }
  return best;
}

namespace {

// RawEntry is one functab entry as stored.
struct RawEntry {
  uint64_t entry;   // absolute (<= 1.17) or offset from textStart (1.18+)
  uint64_t funcoff; // table offset of the _func
};

} // namespace

void Pclntab::list_functions() const {
  const bool offsets32 = magic_ == kMagic118 || magic_ == kMagic120;
  const uint64_t field = offsets32 ? 4 : static_cast<uint64_t>(ptr_size_);
  std::vector<RawEntry> raw(static_cast<size_t>(nfunc_) + 1);
  for (uint64_t i = 0; i <= nfunc_; ++i) {
    raw[i].entry = offsets32 ? u32(functab_ + 2 * i * field) : word(functab_ + 2 * i * field);
    if (i < nfunc_)
      raw[i].funcoff = record_offset(i);
    if (i > 0 && raw[i].entry < raw[i - 1].entry)
      corrupt("the function index is not sorted by address (entry " + std::to_string(i) + ": " +
              hex(raw[i].entry) + " < " + hex(raw[i - 1].entry) + ")");
  }
  std::vector<PclnFunction> list;
  list.reserve(static_cast<size_t>(nfunc_));
  for (uint64_t i = 0; i < nfunc_; ++i)
    list.push_back(function_record(i, raw[i].entry, raw[i + 1].entry, raw[i].funcoff));
  functions_ = std::move(list);
  by_name_.resize(functions_.size());
  for (uint32_t i = 0; i < by_name_.size(); ++i)
    by_name_[i] = i;
  std::stable_sort(by_name_.begin(), by_name_.end(),
                   [&](uint32_t a, uint32_t b) { return functions_[a].name < functions_[b].name; });
  listed_ = true;
}

uint64_t Pclntab::index_entry(uint64_t i) const {
  const bool offsets32 = magic_ == kMagic118 || magic_ == kMagic120;
  const uint64_t field = offsets32 ? 4 : static_cast<uint64_t>(ptr_size_);
  return offsets32 ? u32(functab_ + 2 * i * field) : word(functab_ + 2 * i * field);
}

uint64_t Pclntab::record_offset(uint64_t i) const {
  const bool offsets32 = magic_ == kMagic118 || magic_ == kMagic120;
  const uint64_t field = offsets32 ? 4 : static_cast<uint64_t>(ptr_size_);
  const uint64_t at = functab_ + 2 * i * field + field;
  uint64_t funcoff = offsets32 ? u32(at) : word(at);
  uint64_t f = (magic_ == kMagic12 ? 0 : pclntable_) + funcoff;
  if (f >= size_ || f < header_end_)
    corrupt("function " + std::to_string(i) + " has its record at " + hex(funcoff) + ", outside the table");
  return f;
}

PclnFunction Pclntab::function_record(uint64_t i, uint64_t entry, uint64_t next, uint64_t f) const {
  const bool offsets32 = magic_ == kMagic118 || magic_ == kMagic120;
  const uint64_t field = offsets32 ? 4 : static_cast<uint64_t>(ptr_size_);
  // Every layout starts with the entry (uintptr, or u32 offset in 1.18+) then nameoff, args.
  uint64_t after_entry = f + field;
  uint64_t record_entry = offsets32 ? u32(f) : word(f);
  if (record_entry != entry)
    corrupt("function " + std::to_string(i) + ": the index says entry " + hex(entry) + " but its record says " +
            hex(record_entry));
  PclnFunction fn;
  uint32_t nameoff = u32(after_entry);
  fn.name = name_at(nameoff);
  fn.args = static_cast<int32_t>(u32(after_entry + 4));
  fn.entry = entry + text_start_;
  fn.end = next + text_start_;
  fn.offset_in_table = static_cast<uint32_t>(f);
  if (f > UINT32_MAX)
    corrupt("the table is larger than 4 GiB");
  if (magic_ != kMagic12) {
    // funcID, flag: after entry + 8 u32 fields (1.16–1.19), + startLine too (1.20+).
    uint64_t id_at = after_entry + (magic_ == kMagic120 ? 36 : 32);
    if (id_at + 4 > size_)
      corrupt("the record of " + fn.name + " runs past the table's end");
    const uint8_t *id = at(id_at, 2);
    fn.func_id = id[0];
    fn.flag = id[1];
  }
  return fn;
}

PclnFunction Pclntab::decode_function(uint64_t i) const {
  uint64_t entry = index_entry(i), next = index_entry(i + 1);
  if (next < entry)
    corrupt("the function index is not sorted by address (entry " + std::to_string(i + 1) + ": " + hex(next) +
            " < " + hex(entry) + ")");
  return function_record(i, entry, next, record_offset(i));
}

const std::vector<PclnFunction> &Pclntab::functions() const {
  if (!listed_)
    list_functions();
  return functions_;
}

uint64_t Pclntab::bytes_read() const { return file_ ? file_->bytes_read() : image_->bytes_read(); }

namespace {

const LoadSegment *segment_in(const std::vector<LoadSegment> &segments, uint64_t vaddr) {
  for (const LoadSegment &seg : segments)
    if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.mem_size)
      return &seg;
  return nullptr;
}

// Calls each(vaddr, bytes, count) over the file-backed bytes of `seg` from vaddr `from`, a span at a
// time, until it returns false; `bytes` is valid only during the call.
void for_each_span(DescriptorSpace &space, const LoadSegment &seg, uint64_t from,
                   const std::function<bool(uint64_t, const uint8_t *, uint64_t)> &each) {
  for (uint64_t at = from; at < seg.vaddr + seg.file_size;) {
    uint64_t n = 0;
    const uint8_t *p = space.span(at, n);
    if (!p || n == 0)
      return;
    n = std::min(n, seg.vaddr + seg.file_size - at);
    if (!each(at, p, n))
      return;
    at += n;
  }
}

} // namespace

std::optional<Pclntab> Pclntab::load(const BinaryImage &binary, Reading how) {
  if (elf_version(EV_CURRENT) == EV_NONE)
    throw std::logic_error(std::string("libelf initialisation failed: ") + elf_errmsg(-1));
  std::shared_ptr<Image> img;
  std::shared_ptr<DescriptorSpace> space;
  FileDescriptorSpace *file = nullptr;
  ElfFacts facts;
  if (how == Reading::Whole) {
    img = std::make_shared<Image>();
    img->path = binary.path;
    img->segments = binary.segments;
    img->ptr_size = binary.ptr_size;
    int fd = open(binary.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      fail_unreadable(binary.path, std::strerror(errno));
    try {
      read_segments(*img, fd);
      facts = read_elf_facts(img.get(), binary, fd);
    } catch (...) {
      close(fd);
      throw;
    }
    close(fd);
    space = img;
  } else {
    std::string error;
    std::unique_ptr<FileDescriptorSpace> opened = FileDescriptorSpace::open(binary.path, error);
    if (!opened)
      fail_unreadable(binary.path, error);
    facts = read_elf_facts(nullptr, binary, opened->fd()); // the file the space reads
    file = opened.get();
    space = std::move(opened);
  }

  GoVersion version;
  if (binary.buildinfo)
    version = parse_go_version(binary.buildinfo->go_version);

  // Parses the candidate table at `address` (`size` bytes available): header fields and function
  // list, entries still relative for 1.18+ (offsets from textStart, which needs moduledata, found
  // below). Throws [bad-pclntab] on the first inconsistency.
  auto parse = [&](uint64_t address, uint64_t size, std::string found_by) {
    Pclntab t;
    t.space_ = space;
    t.image_ = img;
    t.file_ = file;
    t.path_ = binary.path;
    t.address_ = address;
    t.size_ = size;
    t.found_by_ = std::move(found_by);
    t.ptr_size_ = binary.ptr_size;
    const uint8_t *at = size >= 8 && space->room(address) >= size ? space->bytes(address, 8) : nullptr;
    if (!at)
      t.corrupt("the table is not inside the file-backed part of a segment");
    uint8_t head[8];
    std::memcpy(head, at, sizeof head);
    t.magic_ = le32(head);
    if (!header_prefix(head, binary.ptr_size))
      t.corrupt("bad header " + hex(le(head, 8)) +
                " (want a known magic, 0, 0, quantum 1|2|4, "
                "pointer size " +
                std::to_string(binary.ptr_size) + ")");
    t.quantum_ = head[6];
    const uint64_t ps = static_cast<uint64_t>(binary.ptr_size);
    const bool old = t.magic_ == kMagic12;
    const bool offsets32 = t.magic_ == kMagic118 || t.magic_ == kMagic120;

    // Header words (GO-ABI.md §6.1).
    auto header_word = [&](uint64_t index) { return t.word(8 + index * ps); };
    uint64_t functab, header_end;
    uint64_t header_text_start = 0;
    t.nfunc_ = header_word(0);
    if (old) {
      functab = 8 + ps;
      header_end = functab;
    } else {
      uint64_t k = 2;
      if (offsets32)
        header_text_start = header_word(k++);
      t.funcnametab_ = header_word(k);
      t.cutab_ = header_word(k + 1);
      t.filetab_ = header_word(k + 2);
      t.pctab_ = header_word(k + 3);
      t.pclntable_ = header_word(k + 4);
      header_end = 8 + (k + 5) * ps;
      for (auto [what, off] : {std::pair{"funcnametab", t.funcnametab_},
                               {"cutab", t.cutab_},
                               {"filetab", t.filetab_},
                               {"pctab", t.pctab_},
                               {"functab", t.pclntable_}})
        if (off < header_end || off >= size)
          t.corrupt(std::string(what) + " offset " + hex(off) + " is outside the table (" +
                    hex(size) + " bytes)");
      functab = t.pclntable_;
    }
    if (t.nfunc_ == 0)
      t.corrupt("the table lists no functions");
    if (functab >= size)
      t.corrupt("the function index starts past the table's end");
    const uint64_t field = offsets32 ? 4 : ps;
    if (t.nfunc_ > (size - functab) / (2 * field))
      t.corrupt(std::to_string(t.nfunc_) + " functions do not fit in the table");
    if (functab + (2 * t.nfunc_ + 1) * field > size)
      t.corrupt("the function index runs past the table's end");

    t.functab_ = functab;
    t.header_end_ = header_end;
    if (how == Reading::Whole) {
      t.list_functions();
    } else {
      // The rest is checked function by function as it is looked up; the first and the last now,
      // so that a candidate found by scanning is a table.
      t.decode_function(0);
      t.decode_function(t.nfunc_ - 1);
    }
    return std::make_pair(std::move(t), header_text_start);
  };

  // 1. Find the table: by section, else by scanning the segments for its header.
  std::optional<std::pair<Pclntab, uint64_t>> parsed;
  if (facts.pclntab_addr) {
    uint64_t avail = space->room(facts.pclntab_addr);
    uint64_t size = std::min(facts.pclntab_size, avail);
    parsed = parse(facts.pclntab_addr, size, "section " + facts.pclntab_section);
  } else {
    std::string first_error;
    // Read-only segments first (the usual place), then writable ones (a PIE's relro), then code.
    for (int pass = 0; pass < 3 && !parsed; ++pass) {
      for (const LoadSegment &seg : binary.segments) {
        bool exec = seg.flags & PF_X, write = seg.flags & PF_W;
        if ((pass == 0 && (exec || write)) || (pass == 1 && (exec || !write)) ||
            (pass == 2 && !exec))
          continue;
        // Candidates are collected a span at a time and tried after it (trying one reads the file).
        std::vector<uint64_t> candidates;
        uint64_t resume = seg.vaddr + (4 - seg.vaddr % 4) % 4;
        while (!parsed && resume + 64 <= seg.vaddr + seg.file_size) {
          candidates.clear();
          for_each_span(*space, seg, resume, [&](uint64_t vaddr, const uint8_t *bytes, uint64_t n) {
            for (uint64_t off = 0; off < n; off += 4) {
              resume = vaddr + off + 4;
              if (vaddr + off + 64 > seg.vaddr + seg.file_size)
                return false;
              uint8_t b = bytes[off];
              if (b == 0xfa || b == 0xfb || b == 0xf0 || b == 0xf1) {
                candidates.push_back(vaddr + off);
                return false;
              }
            }
            return true;
          });
          if (candidates.empty())
            break;
          const uint64_t candidate = candidates.front();
          const uint8_t *head = space->bytes(candidate, 8);
          if (!head || !header_prefix(head, binary.ptr_size))
            continue;
          try {
            parsed = parse(candidate, seg.vaddr + seg.file_size - candidate, "segment scan");
          } catch (const UserError &error) {
            if (first_error.empty())
              first_error = error.what();
          }
        }
        if (parsed)
          break;
      }
    }
    if (!parsed) {
      if (!first_error.empty())
        throw UserError("bad-pclntab", first_error, SourceLoc{binary.path},
                        "the file may be truncated or modified; rebuild the binary or copy it "
                        "again");
      return std::nullopt;
    }
  }
  Pclntab t = std::move(parsed->first);
  const uint64_t header_text_start = parsed->second;
  const uint64_t ps = static_cast<uint64_t>(binary.ptr_size);
  if (version.major == 0) {
    // No build info: the layout bounds the version; these guesses only pick wrapper ids.
    version = t.magic_ == kMagic12    ? GoVersion{1, 15}
              : t.magic_ == kMagic116 ? GoVersion{1, 16}
              : t.magic_ == kMagic118 ? GoVersion{1, 18}
                                      : GoVersion{1, 20};
  }
  t.version_ = version;
  t.version_known_ = binary.buildinfo && version.major != 0;

  // 2. runtime.firstmoduledata (GO-ABI.md §6.2): the .go.module section (1.26+), the symbol, or a
  // pointer-sized word equal to the table's address in a data segment (its first field), checked
  // by its second field (funcnametab.ptr) and, for 1.18+, minpc - text == the first entry offset.
  const bool offsets32 = t.magic_ == kMagic118 || t.magic_ == kMagic120;
  if (t.magic_ != kMagic12) {
    auto check = [&](uint64_t md) {
      auto first = space->pointer(md), names = space->pointer(md + ps);
      if (!first || *first != t.address_ || !names || *names != t.address_ + t.funcnametab_)
        return false;
      auto minpc = space->pointer(md + 20 * ps), text = space->pointer(md + 22 * ps);
      if (!minpc || !text)
        return false;
      uint64_t first_entry = t.index_entry(0);
      return offsets32 ? *minpc >= *text && *minpc - *text == first_entry : *minpc == first_entry;
    };
    std::vector<uint64_t> candidates;
    if (facts.go_module)
      candidates.push_back(facts.go_module);
    if (facts.firstmoduledata)
      candidates.push_back(facts.firstmoduledata);
    for (uint64_t c : candidates)
      if (check(c)) {
        t.moduledata_ = c;
        break;
      }
    for (const LoadSegment &seg : binary.segments) {
      if (t.moduledata_ || (seg.flags & PF_X))
        continue;
      // Words equal to the table's address, a span at a time; each is checked after its span
      // (checking reads the file).
      uint64_t resume = seg.vaddr + (ps - seg.vaddr % ps) % ps;
      while (!t.moduledata_ && resume + ps <= seg.vaddr + seg.file_size) {
        std::optional<uint64_t> found;
        for_each_span(*space, seg, resume, [&](uint64_t vaddr, const uint8_t *bytes, uint64_t n) {
          for (uint64_t off = 0; off < n; off += ps) {
            resume = vaddr + off + ps;
            if (vaddr + off + ps > seg.vaddr + seg.file_size)
              return false;
            uint64_t word = 0;
            if (off + ps <= n) {
              word = le(bytes + off, binary.ptr_size);
            } else { // a word across two spans: read once more, after this one
              resume = vaddr + off;
              found = vaddr + off;
              return false;
            }
            if (word == t.address_) {
              found = vaddr + off;
              return false;
            }
          }
          return true;
        });
        if (!found)
          break;
        const uint8_t *w = space->bytes(*found, ps);
        if (w && le(w, binary.ptr_size) == t.address_ && check(*found))
          t.moduledata_ = *found;
        resume = *found + ps;
      }
    }
    static const std::vector<std::pair<uint64_t, uint64_t>> none;
    for (auto [where, addend] : img ? img->relative : binary.pie ? file->relocations() : none)
      if (!t.moduledata_ && addend == t.address_ && check(where))
        t.moduledata_ = where;
  }

  // 3. textStart (1.18+): the runtime.text symbol, moduledata.text, the header's field (0 or not
  // yet relocated in some binaries: always 0 since Go 1.26), the .text section — the first that
  // puts every function inside an executable segment.
  if (offsets32) {
    std::vector<std::pair<uint64_t, std::string>> candidates;
    for (const ElfSymbol &sym : binary.functions)
      if (sym.name == "runtime.text")
        candidates.emplace_back(sym.address, "symbol runtime.text");
    if (t.moduledata_)
      if (auto text = space->pointer(t.moduledata_ + 22 * ps))
        candidates.emplace_back(*text, "moduledata.text");
    if (header_text_start)
      candidates.emplace_back(header_text_start, "pcHeader.textStart");
    if (facts.text_section)
      candidates.emplace_back(facts.text_section, "section .text");
    const uint64_t first = t.index_entry(0), last = t.index_entry(t.nfunc_);
    for (auto &[base, from] : candidates) {
      const LoadSegment *seg = segment_in(binary.segments, base + first);
      if (!seg || !(seg->flags & PF_X) || base + last > seg->vaddr + seg->mem_size ||
          base + last < base)
        continue;
      t.text_start_ = base;
      t.text_start_from_ = from;
      break;
    }
    if (t.text_start_from_.empty())
      t.corrupt("cannot place the functions: no text start (runtime.text symbol, moduledata, "
                "header, .text section) puts them inside an executable segment");
    for (PclnFunction &fn : t.functions_) {
      fn.entry += t.text_start_;
      fn.end += t.text_start_;
    }
  }

  // 4. Wrapper funcID: from the binary when it says (since 1.17 the enum ends in
  // systemstack_switch, wrapper), else by version.
  t.wrapper_id_ = wrapper_func_id_for(version);
  if (t.magic_ == kMagic118 || t.magic_ == kMagic120 ||
      (t.magic_ == kMagic116 && version.minor >= 17)) {
    if (t.listed_) {
      for (const PclnFunction &fn : t.functions_)
        if (fn.name == "runtime.systemstack_switch" && fn.func_id > 0) {
          t.wrapper_id_ = fn.func_id + 1;
          break;
        }
    } else {
      // The same search without decoding every function: only those with a funcID are named.
      const uint64_t field = offsets32 ? 4 : ps;
      for (uint64_t i = 0; i < t.nfunc_; ++i) {
        const uint64_t f = t.record_offset(i);
        const uint8_t id = t.u8(f + field + (t.magic_ == kMagic120 ? 36 : 32));
        if (id > 0 && t.name_at(t.u32(f + field)) == "runtime.systemstack_switch") {
          t.wrapper_id_ = id + 1;
          break;
        }
      }
    }
  }

  // 5. moduledata.gofunc (1.18+), the base of funcdata offsets: word 38 (1.18–1.19) or 40 (1.20+),
  // confirmed by decoding inline trees through it; failing that, any word of moduledata that does.
  if (offsets32 && t.moduledata_) {
    std::vector<PclnFunction> with_tree;
    for (uint64_t i = 0; i < t.nfunc_ && with_tree.size() < 16; ++i) {
      PclnFunction fn = t.listed_ ? t.functions_[i] : t.decode_function(i);
      FuncRecord r = t.record(fn);
      if (r.nfuncdata > kFuncdataInlTree && r.npcdata > kPcdataInlTreeIndex &&
          t.u32(r.funcdata + 4ull * kFuncdataInlTree) != 0xffffffffu)
        with_tree.push_back(std::move(fn));
    }
    const uint64_t record_size = t.magic_ == kMagic120 ? 16 : 20;
    auto plausible = [&](uint64_t gofunc) {
      if (gofunc == 0)
        return false;
      for (const PclnFunction &fn : with_tree) {
        FuncRecord r = t.record(fn);
        uint64_t tree = gofunc + t.u32(r.funcdata + 4ull * kFuncdataInlTree);
        const uint8_t *at = space->bytes(tree, record_size);
        if (!at)
          return false;
        uint8_t rec[20];
        std::memcpy(rec, at, record_size);
        uint32_t nameoff = le32(rec + (t.magic_ == kMagic120 ? 4 : 12));
        int32_t parent_pc = static_cast<int32_t>(le32(rec + (t.magic_ == kMagic120 ? 8 : 16)));
        uint64_t name = t.funcnametab_ + nameoff;
        if (name >= t.size_ || t.u8(name) == 0 || (nameoff && t.u8(name - 1) != 0) ||
            parent_pc < 0 || static_cast<uint64_t>(parent_pc) >= fn.end - fn.entry)
          return false;
        if (t.magic_ == kMagic120 && (rec[1] || rec[2] || rec[3]))
          return false;
      }
      return true;
    };
    uint64_t layout_index = t.magic_ == kMagic118 ? 38 : 40;
    auto layout = space->pointer(t.moduledata_ + layout_index * ps);
    if (with_tree.empty()) {
      t.gofunc_ = layout.value_or(0); // nothing inlined: nothing will read through it
    } else if (layout && plausible(*layout)) {
      t.gofunc_ = *layout;
    } else {
      // Not where this version keeps it: any word of moduledata that decodes the inline trees.
      // (None: gofunc_ stays 0 and symbolize() reports the inline tree unreachable.)
      for (uint64_t k = 23; k < 64 && !t.gofunc_; ++k) {
        auto value = space->pointer(t.moduledata_ + k * ps);
        if (value && plausible(*value))
          t.gofunc_ = *value;
      }
    }
  }

  // 6. moduledata.types and etypes: words 35, 36 (1.16–1.19) or 37, 38 (1.20+, after covctrs and
  // ecovctrs), accepted when both lie in one data segment, in order, and agree with the
  // runtime.types symbol when there is one.
  if (t.moduledata_ && t.magic_ != kMagic12) {
    uint64_t index = t.magic_ == kMagic120 ? 37 : 35;
    auto types = space->pointer(t.moduledata_ + index * ps), etypes = space->pointer(t.moduledata_ + (index + 1) * ps);
    const LoadSegment *seg = types ? segment_in(binary.segments, *types) : nullptr;
    if (types && etypes && seg && !(seg->flags & PF_X) && *types < *etypes &&
        *etypes <= seg->vaddr + seg->file_size && (!binary.types_base || *binary.types_base == *types)) {
      t.types_ = *types;
      t.etypes_ = *etypes;
    }
  }
  return t;
}

namespace {

// The table's space with the function table's exact answer to code_entry.
class TableSpace : public DescriptorSpace {
public:
  TableSpace(DescriptorSpace &space, const Pclntab &pcln) : space_(space), pcln_(pcln) {}
  const uint8_t *bytes(uint64_t vaddr, uint64_t size) override { return space_.bytes(vaddr, size); }
  const uint8_t *span(uint64_t vaddr, uint64_t &size) override { return space_.span(vaddr, size); }
  uint64_t room(uint64_t vaddr) override { return space_.room(vaddr); }
  std::optional<uint64_t> pointer(uint64_t vaddr) override { return space_.pointer(vaddr); }
  bool mapped(uint64_t vaddr) override { return space_.mapped(vaddr); }
  bool code_entry(uint64_t pc) override {
    const PclnFunction *fn = pcln_.at_pc(pc);
    return fn && fn->entry == pc;
  }

private:
  DescriptorSpace &space_;
  const Pclntab &pcln_;
};

} // namespace

DescriptorLayout Pclntab::descriptor_layout() const { return {types_, etypes_, ptr_size_, version_}; }

// 0xfffffffa is both 1.16 and 1.17: only the build info's version tells the two name encodings
// apart, so without it no name is read.
bool Pclntab::names_readable() const { return types_ && !(magic_ == kMagic116 && !version_known_); }

const uint8_t *Pclntab::bytes_at(uint64_t vaddr, uint64_t size) const { return space_->bytes(vaddr, size); }

std::optional<uint64_t> Pclntab::pointer_at(uint64_t vaddr) const { return space_->pointer(vaddr); }

std::optional<std::string> Pclntab::name_at_address(uint64_t at, uint8_t *flags) const {
  if (!names_readable())
    return std::nullopt;
  TableSpace space(*space_, *this);
  return read_runtime_name(space, descriptor_layout(), at, flags);
}

std::optional<Pclntab::RuntimeType> Pclntab::type_at(uint64_t vaddr) const {
  if (!names_readable())
    return std::nullopt;
  TableSpace space(*space_, *this);
  auto named = name_descriptor(space, descriptor_layout(), vaddr);
  if (!named)
    return std::nullopt;
  return RuntimeType{std::move(named->name), named->kind, named->size};
}

} // namespace weave
