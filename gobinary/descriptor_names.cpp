#include "gobinary/descriptor_names.h"
#include "gobinary/elf_symbols.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weave {

namespace {

uint32_t le32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

uint64_t le(const uint8_t *p, int size) {
  uint64_t value = 0;
  for (int i = 0; i < size; ++i)
    value |= static_cast<uint64_t>(p[i]) << (8 * i);
  return value;
}

std::optional<std::string> name_in_types(DescriptorSpace &space, const DescriptorLayout &layout, uint32_t nameoff) {
  if (!layout.types || nameoff == 0 || nameoff >= layout.etypes - layout.types)
    return std::nullopt;
  return read_runtime_name(space, layout, layout.types + nameoff);
}

std::optional<std::string> type_name(DescriptorSpace &space, const DescriptorLayout &layout, uint64_t vaddr,
                                     int depth, uint8_t *kind_out, uint64_t *size_out) {
  // _type: size, ptrdata (words); hash u32; tflag, align, fieldAlign, kind (bytes); equal, gcdata
  // (words); str nameOff, ptrToThis typeOff (i32). 48 bytes on 64-bit, 32 on 32-bit.
  const int ps_int = layout.ptr_size;
  const uint64_t ps = static_cast<uint64_t>(ps_int);
  const uint64_t header = 4 * ps + 16;
  const uint64_t types = layout.types, etypes = layout.etypes;
  if (!types || vaddr < types || vaddr % ps || vaddr >= etypes || etypes - vaddr < header)
    return std::nullopt;
  const uint8_t *p = space.bytes(vaddr, header);
  if (!p)
    return std::nullopt;
  // Copied out at once: the space's buffer is only valid until its next read.
  constexpr uint8_t kTflagUncommon = 1, kTflagExtraStar = 2, kTflagNamed = 4;
  const uint8_t tflag = p[2 * ps + 4];
  const uint8_t kind = p[2 * ps + 7] & 0x1f;
  const uint64_t size = le(p, ps_int);
  const uint64_t ptrdata = le(p + ps, ps_int);
  const uint8_t align = p[2 * ps + 5], field_align = p[2 * ps + 6];
  const uint64_t equal = le(p + 2 * ps + 8, ps_int), gcdata = le(p + 3 * ps + 8, ps_int);
  const uint32_t str_off = le32(p + 4 * ps + 8);
  const uint32_t ptr_to_this = le32(p + 4 * ps + 12);
  if (kind == 0 || kind > 26)
    return std::nullopt;
  // Every field must hold what a descriptor holds: pointer bytes within the size, power-of-two
  // alignments, `equal` nil or a func value (a funcval whose first word is a function's entry),
  // gcdata nil or inside the image (bss too: Go 1.24+ builds large masks on demand), ptrToThis
  // inside the types. An address where no descriptor starts fails these long before the name.
  auto power_of_two = [](uint8_t v) { return v != 0 && v <= 64 && (v & (v - 1)) == 0; };
  if (ptrdata > size || !power_of_two(align) || !power_of_two(field_align) ||
      (ptr_to_this && ptr_to_this >= etypes - types) || (gcdata && !space.mapped(gcdata)))
    return std::nullopt;
  if (equal) {
    auto code = space.pointer(equal);
    if (!code || !space.code_entry(*code))
      return std::nullopt;
  }
  auto str = name_in_types(space, layout, str_off);
  if (!str)
    return std::nullopt;
  if (tflag & kTflagExtraStar) {
    if ((*str)[0] != '*')
      return std::nullopt;
    str->erase(0, 1);
  }
  if (kind_out)
    *kind_out = kind;
  if (size_out)
    *size_out = size;
  enum : uint8_t { Array = 17, Chan = 18, Func = 19, Interface = 20, Map = 21, Ptr = 22, Slice = 23, Struct = 25 };
  auto element = [&](uint64_t word) -> std::optional<std::string> {
    auto elem = space.pointer(vaddr + header + word * ps);
    if (!elem || depth >= 8)
      return std::nullopt;
    return type_name(space, layout, *elem, depth + 1, nullptr, nullptr);
  };
  if (tflag & kTflagNamed) {
    // The runtime writes "pkgname.Name"; DWARF writes the package path: take it from the uncommon
    // type, which follows the kind's own fields.
    std::optional<uint64_t> extra;
    if (kind <= 16 || kind == 24 || kind == 26)
      extra = 0;
    else if (kind == Ptr || kind == Slice)
      extra = ps;
    else if (kind == Chan)
      extra = 2 * ps;
    else if (kind == Array)
      extra = 3 * ps;
    else if (kind == Struct || kind == Interface)
      extra = 4 * ps;
    else if (kind == Func)
      extra = ps; // inCount, outCount (u16 each), padded to a word
    else if (kind == Map) // key, elem, bucket/group, hasher; then u8, u8, u16, u32 (<= 1.23) or
      // GroupSize, SlotSize, ElemOff words and u32 flags (swiss tables, 1.24+), padded to a word
      extra = layout.version.major == 1 && layout.version.minor <= 23 ? 4 * ps + 8 : (7 * ps + 4 + ps - 1) / ps * ps;
    size_t dot = str->find('.');
    if ((tflag & kTflagUncommon) && extra && dot != std::string::npos && dot < str->find('[')) {
      if (const uint8_t *u = space.bytes(vaddr + header + *extra, 4)) {
        uint32_t pkgpath = le32(u);
        if (pkgpath) {
          auto path = name_in_types(space, layout, pkgpath);
          if (!path)
            return std::nullopt;
          // Shapes of generic code are spelled with their whole package already: "go.shape.int64".
          if (str->rfind(*path + ".", 0) == 0)
            return str;
          return *path + str->substr(dot);
        }
      }
    }
    return str;
  }
  std::optional<std::string> elem;
  switch (kind) {
  case Ptr:
    if ((elem = element(0)))
      return "*" + *elem;
    break;
  case Slice:
    if ((elem = element(0)))
      return "[]" + *elem;
    break;
  case Array:
    if (auto count = space.pointer(vaddr + header + 2 * ps); count && (elem = element(0)))
      return "[" + std::to_string(*count) + "]" + *elem;
    break;
  case Chan:
    if (auto dir = space.pointer(vaddr + header + ps); dir && (elem = element(0))) {
      if (*dir == 1)
        return "<-chan " + *elem;
      if (*dir == 2)
        return "chan<- " + *elem;
      if (*dir == 3)
        return elem->rfind("<-chan", 0) == 0 ? "chan (" + *elem + ")" : "chan " + *elem;
    }
    break;
  case Map:
    if (auto key = element(0); key && (elem = element(1)))
      return "map[" + *key + "]" + *elem;
    break;
  default:
    break;
  }
  return str;
}

} // namespace

std::optional<std::string> read_runtime_name(DescriptorSpace &space, const DescriptorLayout &layout, uint64_t at,
                                             uint8_t *flags) {
  const bool varint = !(layout.version.major == 1 && layout.version.minor <= 16);
  uint64_t room = space.room(at);
  if (at >= layout.types && at < layout.etypes)
    room = std::min<uint64_t>(room, layout.etypes - at);
  if (room < 3)
    return std::nullopt;
  const uint8_t *p = space.bytes(at, std::min<uint64_t>(room, 8));
  if (!p)
    return std::nullopt;
  const uint8_t flag = p[0];
  uint64_t length = 0, pos = 1;
  if (varint) {
    for (int shift = 0;; shift += 7) {
      if (pos >= std::min<uint64_t>(room, 8) || shift > 28)
        return std::nullopt;
      uint8_t b = p[pos++];
      length |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80))
        break;
    }
  } else {
    length = static_cast<uint64_t>(p[1]) << 8 | p[2];
    pos = 3;
  }
  if (length == 0 || length > room - pos || length > 4096)
    return std::nullopt;
  const uint8_t *text = space.bytes(at + pos, length);
  if (!text)
    return std::nullopt;
  std::string name(reinterpret_cast<const char *>(text), static_cast<size_t>(length));
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      return std::nullopt;
  if (flags)
    *flags = flag;
  return name;
}

std::optional<DescriptorName> name_descriptor(DescriptorSpace &space, const DescriptorLayout &layout,
                                              uint64_t vaddr) {
  DescriptorName t;
  auto name = type_name(space, layout, vaddr, 0, &t.kind, &t.size);
  if (!name)
    return std::nullopt;
  t.name = std::move(*name);
  return t;
}

// FileDescriptorSpace

namespace {

constexpr uint64_t kBlock = 4096;

bool pread_all(int fd, uint8_t *into, uint64_t size, uint64_t offset) {
  uint64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, into + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<uint64_t>(n);
  }
  return true;
}

} // namespace

std::unique_ptr<FileDescriptorSpace> FileDescriptorSpace::open(const std::string &path, std::string &error) {
  std::unique_ptr<FileDescriptorSpace> space(new FileDescriptorSpace());
  space->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (space->fd_ < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(space->fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + " is not a regular file";
    return nullptr;
  }
  space->file_size_ = static_cast<uint64_t>(st.st_size);
  // The ELF header and program headers (64- and 32-bit, little-endian: amd64, arm64, 386).
  uint8_t ident[EI_NIDENT + 64] = {};
  if (space->file_size_ < sizeof(Elf64_Ehdr) || !space->read_at(ident, sizeof(Elf64_Ehdr), 0) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0 || ident[EI_DATA] != ELFDATA2LSB) {
    error = path + " is not a little-endian ELF file";
    return nullptr;
  }
  const bool is64 = ident[EI_CLASS] == ELFCLASS64;
  space->ptr_size_ = is64 ? 8 : 4;
  uint64_t phoff, phentsize, phnum, type;
  if (is64) {
    Elf64_Ehdr eh;
    std::memcpy(&eh, ident, sizeof eh);
    phoff = eh.e_phoff, phentsize = eh.e_phentsize, phnum = eh.e_phnum, type = eh.e_type;
  } else {
    Elf32_Ehdr eh;
    std::memcpy(&eh, ident, sizeof eh);
    phoff = eh.e_phoff, phentsize = eh.e_phentsize, phnum = eh.e_phnum, type = eh.e_type;
  }
  space->pie_ = type == ET_DYN;
  const uint64_t want = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
  if (phentsize < want || phnum == 0 || phnum > 4096 || phoff > space->file_size_ ||
      phnum * phentsize > space->file_size_ - phoff) {
    error = path + ": bad program headers";
    return nullptr;
  }
  std::vector<uint8_t> table(phnum * phentsize);
  if (!space->read_at(table.data(), table.size(), phoff)) {
    error = path + ": cannot read its program headers";
    return nullptr;
  }
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint8_t *ph = table.data() + i * phentsize;
    uint64_t p_type, offset, vaddr, filesz, memsz, flags;
    if (is64) {
      Elf64_Phdr h;
      std::memcpy(&h, ph, sizeof h);
      p_type = h.p_type, offset = h.p_offset, vaddr = h.p_vaddr, filesz = h.p_filesz, memsz = h.p_memsz,
      flags = h.p_flags;
    } else {
      Elf32_Phdr h;
      std::memcpy(&h, ph, sizeof h);
      p_type = h.p_type, offset = h.p_offset, vaddr = h.p_vaddr, filesz = h.p_filesz, memsz = h.p_memsz,
      flags = h.p_flags;
    }
    if (p_type == PT_DYNAMIC) {
      space->dynamic_offset_ = offset;
      space->dynamic_size_ = filesz;
    }
    if (p_type != PT_LOAD)
      continue;
    // Only what lies in the file is readable; a header claiming more is clipped, never followed.
    if (offset > space->file_size_)
      filesz = 0;
    else
      filesz = std::min(filesz, space->file_size_ - offset);
    space->segments_.push_back({vaddr, offset, filesz, memsz, static_cast<uint32_t>(flags)});
  }
  if (space->segments_.empty()) {
    error = path + " has no loadable segments";
    return nullptr;
  }
  return space;
}

FileDescriptorSpace::~FileDescriptorSpace() {
  if (fd_ >= 0)
    ::close(fd_);
}

const LoadSegment *FileDescriptorSpace::file_segment(uint64_t vaddr) const {
  for (const LoadSegment &seg : segments_)
    if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.file_size)
      return &seg;
  return nullptr;
}

bool FileDescriptorSpace::read_at(uint8_t *into, uint64_t size, uint64_t offset) {
  bytes_read_ += size;
  return pread_all(fd_, into, size, offset);
}

const uint8_t *FileDescriptorSpace::block(uint64_t file_block) {
  auto it = blocks_.find(file_block);
  if (it != blocks_.end()) {
    it->second.used = ++use_;
    return it->second.data.get();
  }
  uint64_t offset = file_block * kBlock;
  if (offset >= file_size_)
    return nullptr;
  std::unique_ptr<uint8_t[]> data;
  if (blocks_.size() >= kMaxBlocks) { // the least recently used one makes room
    auto oldest = std::min_element(blocks_.begin(), blocks_.end(),
                                   [](const auto &a, const auto &b) { return a.second.used < b.second.used; });
    data = std::move(oldest->second.data);
    blocks_.erase(oldest);
  } else {
    data = std::make_unique<uint8_t[]>(kBlock);
  }
  uint64_t size = std::min(kBlock, file_size_ - offset);
  if (!read_at(data.get(), size, offset))
    return nullptr;
  return blocks_.emplace(file_block, Block{std::move(data), ++use_}).first->second.data.get();
}

const uint8_t *FileDescriptorSpace::span(uint64_t vaddr, uint64_t &size) {
  const LoadSegment *seg = file_segment(vaddr);
  if (!seg)
    return nullptr;
  uint64_t offset = seg->file_offset + (vaddr - seg->vaddr);
  const uint8_t *b = block(offset / kBlock);
  if (!b)
    return nullptr;
  size = std::min({kBlock - offset % kBlock, seg->file_size - (vaddr - seg->vaddr), file_size_ - offset});
  return b + offset % kBlock;
}

const uint8_t *FileDescriptorSpace::bytes(uint64_t vaddr, uint64_t size) {
  const LoadSegment *seg = file_segment(vaddr);
  if (!seg || size > kMaxRead || size > seg->file_size - (vaddr - seg->vaddr))
    return nullptr;
  uint64_t offset = seg->file_offset + (vaddr - seg->vaddr);
  uint64_t first = offset / kBlock, last = (offset + std::max<uint64_t>(size, 1) - 1) / kBlock;
  if (first == last) {
    const uint8_t *b = block(first);
    return b ? b + offset % kBlock : nullptr;
  }
  scratch_.resize(size);
  uint64_t done = 0;
  for (uint64_t k = first; k <= last; ++k) {
    const uint8_t *b = block(k);
    if (!b)
      return nullptr;
    uint64_t from = k == first ? offset % kBlock : 0;
    uint64_t n = std::min(kBlock - from, size - done);
    std::memcpy(scratch_.data() + done, b + from, n);
    done += n;
  }
  return scratch_.data();
}

uint64_t FileDescriptorSpace::room(uint64_t vaddr) {
  const LoadSegment *seg = file_segment(vaddr);
  return seg ? seg->file_size - (vaddr - seg->vaddr) : 0;
}

bool FileDescriptorSpace::mapped(uint64_t vaddr) {
  for (const LoadSegment &seg : segments_)
    if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.mem_size)
      return true;
  return false;
}

bool FileDescriptorSpace::code_entry(uint64_t pc) {
  for (const LoadSegment &seg : segments_)
    if ((seg.flags & PF_X) && pc >= seg.vaddr && pc - seg.vaddr < seg.mem_size)
      return true;
  return false;
}

std::optional<uint64_t> FileDescriptorSpace::pointer(uint64_t vaddr) {
  const uint8_t *p = bytes(vaddr, static_cast<uint64_t>(ptr_size_));
  if (!p)
    return std::nullopt;
  uint64_t value = le(p, ptr_size_);
  if (value == 0 && pie_) {
    if (!relocations_read_)
      read_relocations();
    auto it = std::lower_bound(relative_.begin(), relative_.end(), std::make_pair(vaddr, uint64_t{0}));
    if (it != relative_.end() && it->first == vaddr)
      return it->second;
  }
  return value;
}

// Dynamic RELATIVE relocations of a 64-bit PIE, through PT_DYNAMIC (section headers optional):
// an external linker may leave a pointer's bytes 0 in the file and put the value in the addend.
void FileDescriptorSpace::read_relocations() {
  relocations_read_ = true;
  if (ptr_size_ != 8 || dynamic_size_ == 0 || dynamic_size_ > (1u << 20) || dynamic_offset_ > file_size_ ||
      dynamic_size_ > file_size_ - dynamic_offset_)
    return;
  std::vector<uint8_t> dynamic(dynamic_size_);
  if (!read_at(dynamic.data(), dynamic.size(), dynamic_offset_))
    return;
  uint8_t machine[2] = {};
  if (!read_at(machine, 2, 18))
    return;
  const uint64_t relative_type = (machine[0] | machine[1] << 8) == EM_AARCH64 ? 1027u : 8u; // R_*_RELATIVE
  const auto [rela, relasz, relaent] = read_dynamic_rela(dynamic.data(), dynamic.size());
  const LoadSegment *seg = rela ? file_segment(rela) : nullptr;
  if (!seg || relaent < 24 || relasz / relaent >= (1u << 26) || relasz > seg->file_size - (rela - seg->vaddr))
    return;
  std::vector<uint8_t> table(relasz);
  if (!read_at(table.data(), table.size(), seg->file_offset + (rela - seg->vaddr)))
    return;
  for (uint64_t off = 0; off + 24 <= relasz; off += relaent)
    if ((le(table.data() + off + 8, 8) & 0xffffffffu) == relative_type)
      relative_.emplace_back(le(table.data() + off, 8), le(table.data() + off + 16, 8));
  std::sort(relative_.begin(), relative_.end());
}

} // namespace weave
