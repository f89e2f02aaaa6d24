// .go.buildinfo: where it is and what it says (GO-ABI.md §3.1).
//
// The blob starts with a 32-byte header: the 14-byte magic "\xff Go buildinf:", the pointer size
// (byte 14) and flags (byte 15: bit 0 big-endian, bit 1 inline strings). Go >= 1.18 follows it
// with two uvarint-length-prefixed strings (version, modinfo); Go 1.13-1.17 instead stores at +16
// and +16+ptrSize the addresses of two Go string headers {ptr, len}. This reader is written from
// that description (go1.19: debug/buildinfo/buildinfo.go is the reference), not copied from it.
//
// Where it is: the .go.buildinfo section, else the start of a writable segment, else (no blob at
// all) the runtime's own buildVersion/modinfo variables; see find_buildinfo_blob. Go 1.26 changed
// where moduledata and the pclntab live (go.dev/doc/go1.26) but lists no change to .go.buildinfo.
#include "gobinary/binary.h"
#include "gobinary/buildinfo_internal.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string_view>
#include <unistd.h>

namespace weave {

namespace {

constexpr std::string_view kMagic("\xff Go buildinf:", 14);
constexpr size_t kHeaderSize = 32;
constexpr uint8_t kFlagBigEndian = 1;
constexpr uint8_t kFlagInline = 2;
// Go's reader looked at the first 64 KiB of the data segment; that window is searched first.
constexpr uint64_t kScanWindow = 64 * 1024;
// Version and modinfo are a few KiB at most; anything larger is a corrupt length.
constexpr uint64_t kMaxStringSize = 16 * 1024 * 1024;
// A blob found by scanning is taken up to the end of its segment, at most this much.
constexpr uint64_t kMaxBlobSize = kHeaderSize + 2 * (kMaxStringSize + 10);

bool has_magic(const uint8_t *p, size_t available) {
  return available >= kHeaderSize && std::memcmp(p, kMagic.data(), kMagic.size()) == 0;
}

uint64_t read_uint(const uint8_t *p, int size, bool big_endian) {
  uint64_t value = 0;
  for (int i = 0; i < size; ++i) {
    int shift = big_endian ? (size - 1 - i) * 8 : i * 8;
    value |= static_cast<uint64_t>(p[i]) << shift;
  }
  return value;
}

// A uvarint (7 bits per byte, least significant group first, high bit = more) at `pos`.
std::optional<uint64_t> read_uvarint(const std::vector<uint8_t> &blob, size_t &pos) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= blob.size())
      return std::nullopt;
    uint8_t byte = blob[pos++];
    if (shift == 63 && byte > 1)
      return std::nullopt; // overflows 64 bits
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return value;
  }
  return std::nullopt;
}

std::optional<std::string> read_varint_string(const std::vector<uint8_t> &blob, size_t &pos) {
  auto size = read_uvarint(blob, pos);
  if (!size || *size > blob.size() - pos)
    return std::nullopt;
  std::string text(reinterpret_cast<const char *>(blob.data() + pos), *size);
  pos += *size;
  return text;
}

// Reads `size` bytes at virtual address `vaddr` from the file, through the PT_LOAD mapping
// (GO-ABI.md §7). The whole range must lie in one segment's file-backed part.
std::optional<std::string> read_vaddr(int fd, const BinaryImage &image, uint64_t vaddr,
                                      uint64_t size) {
  if (size > kMaxStringSize)
    return std::nullopt;
  for (const LoadSegment &seg : image.segments) {
    if (vaddr < seg.vaddr || vaddr - seg.vaddr >= seg.file_size)
      continue;
    if (size > seg.file_size - (vaddr - seg.vaddr))
      return std::nullopt;
    std::string bytes(size, '\0');
    off_t offset = static_cast<off_t>(seg.file_offset + (vaddr - seg.vaddr));
    size_t done = 0;
    while (done < size) {
      ssize_t n = pread(fd, bytes.data() + done, size - done, offset + static_cast<off_t>(done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return std::nullopt;
      done += static_cast<size_t>(n);
    }
    return bytes;
  }
  return std::nullopt;
}

// A Go string header {data uintptr, len int} at `vaddr`, and the bytes it points to.
std::optional<std::string> read_go_string(int fd, const BinaryImage &image, uint64_t vaddr,
                                          int ptr_size, bool big_endian) {
  auto header = read_vaddr(fd, image, vaddr, 2 * static_cast<uint64_t>(ptr_size));
  if (!header)
    return std::nullopt;
  const auto *p = reinterpret_cast<const uint8_t *>(header->data());
  uint64_t data = read_uint(p, ptr_size, big_endian);
  uint64_t len = read_uint(p + ptr_size, ptr_size, big_endian);
  if (len == 0)
    return std::string();
  return read_vaddr(fd, image, data, len);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string &out, uint32_t rune) {
  if (rune < 0x80) {
    out += static_cast<char>(rune);
  } else if (rune < 0x800) {
    out += static_cast<char>(0xc0 | (rune >> 6));
    out += static_cast<char>(0x80 | (rune & 0x3f));
  } else if (rune < 0x10000) {
    out += static_cast<char>(0xe0 | (rune >> 12));
    out += static_cast<char>(0x80 | ((rune >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (rune & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (rune >> 18));
    out += static_cast<char>(0x80 | ((rune >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((rune >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (rune & 0x3f));
  }
}

// Reads a strconv.Quote'd string starting at text[pos] == '"'; advances pos past the closing
// quote. runtime/debug quotes build setting keys and values that contain spaces, tabs, quotes or
// (keys only) '=' (go1.19: runtime/debug/mod.go, quoteKey/quoteValue).
std::optional<std::string> unquote(std::string_view text, size_t &pos) {
  if (pos >= text.size() || text[pos] != '"')
    return std::nullopt;
  std::string out;
  for (size_t i = pos + 1; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      pos = i + 1;
      return out;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= text.size())
      return std::nullopt;
    char e = text[i];
    switch (e) {
    case 'a':
      out += '\a';
      break;
    case 'b':
      out += '\b';
      break;
    case 'f':
      out += '\f';
      break;
    case 'n':
      out += '\n';
      break;
    case 'r':
      out += '\r';
      break;
    case 't':
      out += '\t';
      break;
    case 'v':
      out += '\v';
      break;
    case '\\':
      out += '\\';
      break;
    case '"':
      out += '"';
      break;
    case '\'':
      out += '\'';
      break;
    case 'x':
    case 'u':
    case 'U': {
      size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      if (i + digits >= text.size())
        return std::nullopt;
      uint32_t value = 0;
      for (size_t d = 1; d <= digits; ++d) {
        int h = hex_digit(text[i + d]);
        if (h < 0)
          return std::nullopt;
        value = value * 16 + static_cast<uint32_t>(h);
      }
      i += digits;
      if (e == 'x')
        out += static_cast<char>(value);
      else
        append_utf8(out, value);
      break;
    }
    default:
      if (e >= '0' && e <= '7' && i + 2 < text.size()) { // \ooo
        uint32_t value = 0;
        for (size_t d = 0; d < 3; ++d) {
          char o = text[i + d];
          if (o < '0' || o > '7')
            return std::nullopt;
          value = value * 8 + static_cast<uint32_t>(o - '0');
        }
        i += 2;
        out += static_cast<char>(value);
        break;
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// "key=value" of a build line, either side possibly quoted.
std::pair<std::string, std::string> parse_setting(std::string_view text) {
  std::string key;
  size_t pos = 0;
  if (!text.empty() && text[0] == '"') {
    auto quoted = unquote(text, pos);
    if (!quoted || pos >= text.size() || text[pos] != '=')
      return {std::string(text), {}};
    key = *quoted;
  } else {
    pos = text.find('=');
    if (pos == std::string_view::npos)
      return {std::string(text), {}};
    key = std::string(text.substr(0, pos));
  }
  std::string_view rest = text.substr(pos + 1);
  size_t vpos = 0;
  if (!rest.empty() && rest[0] == '"') {
    auto value = unquote(rest, vpos);
    if (value && vpos == rest.size())
      return {key, *value};
  }
  return {key, std::string(rest)};
}

// modinfo: tab-separated lines, framed by 16-byte sentinels (go1.19: runtime/debug/mod.go and
// cmd/go/internal/modload/build.go, infoStart/infoEnd).
void parse_modinfo(std::string_view mod, GoBuildInfo &info) {
  if (mod.size() >= 33 && mod[mod.size() - 17] == '\n')
    mod = mod.substr(16, mod.size() - 32);
  while (!mod.empty()) {
    size_t eol = mod.find('\n');
    std::string_view line = mod.substr(0, eol);
    mod = eol == std::string_view::npos ? std::string_view() : mod.substr(eol + 1);
    size_t tab = line.find('\t');
    if (tab == std::string_view::npos)
      continue;
    std::string_view word = line.substr(0, tab);
    std::string_view rest = line.substr(tab + 1);
    if (word == "path") {
      info.main_path = std::string(rest);
    } else if (word == "mod") {
      info.module_path = std::string(rest.substr(0, rest.find('\t')));
    } else if (word == "build") {
      info.settings.push_back(parse_setting(rest));
    }
  }
}

// Parses an unsigned decimal at text[pos], advancing pos; -1 when there is none.
int parse_number(std::string_view text, size_t &pos) {
  if (pos >= text.size() || !std::isdigit(static_cast<unsigned char>(text[pos])))
    return -1;
  long value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    value = value * 10 + (text[pos++] - '0');
    if (value > 1000000)
      return -1;
  }
  return static_cast<int>(value);
}

// No .go.buildinfo anywhere (seen in @esbuild/linux-x64@0.28.2, whose runtime says go1.26.5: no
// .go.buildinfo or .note.go.buildid section, and the magic is nowhere in the file; Go 1.26's
// release notes list no change to .go.buildinfo, so this binary was most likely post-processed).
// The runtime still carries the same two strings in its own variables (go1.19: runtime/extern.go
// buildVersion, runtime/debug mod.go modinfo): modinfo is framed by its 16-byte sentinels, and
// runtime.buildVersion is a Go string header {ptr, len} in a data segment pointing at "go1.N...".
// When both are found (the version unambiguously), they are returned as a synthetic inline-format
// blob, so parse_buildinfo reads them like any Go >= 1.18 binary's.
std::optional<std::vector<uint8_t>> recover_from_runtime_variables(Elf *elf,
                                                                   const BinaryImage &image) {
  // cmd/go/internal/modload/build.go infoStart/infoEnd.
  static const uint8_t kInfoStart[16] = {0x30, 0x77, 0xaf, 0x0c, 0x92, 0x74, 0x08, 0x02,
                                         0x41, 0xe1, 0xc1, 0x07, 0xe6, 0xd6, 0x18, 0xe6};
  static const uint8_t kInfoEnd[16] = {0xf9, 0x32, 0x43, 0x31, 0x86, 0x18, 0x20, 0x72,
                                       0x00, 0x82, 0x42, 0x10, 0x41, 0x16, 0xd8, 0xf2};
  struct Chunk {
    const LoadSegment *seg;
    const uint8_t *bytes;
  };
  std::vector<Chunk> chunks;
  for (const LoadSegment &seg : image.segments) {
    if ((seg.flags & PF_X) || seg.file_size == 0)
      continue;
    Elf_Data *data =
        elf_getdata_rawchunk(elf, static_cast<int64_t>(seg.file_offset), seg.file_size, ELF_T_BYTE);
    if (data && data->d_buf && data->d_size == seg.file_size)
      chunks.push_back(Chunk{&seg, static_cast<const uint8_t *>(data->d_buf)});
  }
  auto bytes_at = [&](uint64_t vaddr, uint64_t size) -> const uint8_t * {
    for (const Chunk &c : chunks)
      if (vaddr >= c.seg->vaddr && vaddr - c.seg->vaddr < c.seg->file_size &&
          size <= c.seg->file_size - (vaddr - c.seg->vaddr))
        return c.bytes + (vaddr - c.seg->vaddr);
    return nullptr;
  };

  std::string modinfo;
  for (const Chunk &c : chunks) {
    const uint8_t *end = c.bytes + c.seg->file_size;
    const uint8_t *start = std::search(c.bytes, end, kInfoStart, kInfoStart + 16);
    if (start == end)
      continue;
    const uint8_t *stop = std::search(start + 16, end, kInfoEnd, kInfoEnd + 16);
    if (stop == end || static_cast<uint64_t>(stop - start) > kMaxStringSize)
      continue;
    std::string_view text(reinterpret_cast<const char *>(start + 16), stop - start - 16);
    if (text.rfind("path\t", 0) != 0 && text.rfind("mod\t", 0) != 0)
      continue;
    modinfo.assign(reinterpret_cast<const char *>(start), stop + 16 - start);
    break;
  }
  if (modinfo.empty())
    return std::nullopt;

  auto looks_like_version = [](std::string_view text) {
    std::string_view rest = text;
    if (rest.rfind("devel ", 0) == 0)
      rest.remove_prefix(6);
    if (rest.size() < 5 || rest.rfind("go1.", 0) != 0 ||
        !std::isdigit(static_cast<unsigned char>(rest[4])))
      return false;
    for (char ch : text)
      if (!std::isprint(static_cast<unsigned char>(ch)))
        return false;
    return true;
  };
  const int ps = image.ptr_size;
  std::string version;
  for (const Chunk &c : chunks) {
    if (!(c.seg->flags & PF_W))
      continue;
    for (uint64_t at = (ps - c.seg->vaddr % ps) % ps; at + 2 * ps <= c.seg->file_size; at += ps) {
      uint64_t ptr = read_uint(c.bytes + at, ps, false);
      uint64_t len = read_uint(c.bytes + at + ps, ps, false);
      if (len < 5 || len > 64)
        continue;
      const uint8_t *target = bytes_at(ptr, len);
      if (!target || (target[0] != 'g' && target[0] != 'd'))
        continue;
      std::string_view text(reinterpret_cast<const char *>(target), len);
      if (!looks_like_version(text))
        continue;
      if (!version.empty() && version != text)
        return std::nullopt; // two different candidates: do not guess
      version = text;
    }
  }
  if (version.empty())
    return std::nullopt;

  std::vector<uint8_t> blob(kHeaderSize, 0);
  std::memcpy(blob.data(), kMagic.data(), kMagic.size());
  blob[14] = static_cast<uint8_t>(ps);
  blob[15] = kFlagInline;
  auto append = [&](const std::string &text) {
    uint64_t size = text.size();
    do {
      uint8_t byte = size & 0x7f;
      size >>= 7;
      blob.push_back(byte | (size ? 0x80 : 0));
    } while (size);
    blob.insert(blob.end(), text.begin(), text.end());
  };
  append(version);
  append(modinfo);
  return blob;
}

} // namespace

std::optional<std::vector<uint8_t>> find_buildinfo_blob(Elf *elf, const BinaryImage &image) {
  // With section headers: the section named .go.buildinfo.
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
        continue;
      const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
      if (!name || std::strcmp(name, ".go.buildinfo") != 0)
        continue;
      Elf_Data *data = elf_rawdata(scn, nullptr);
      if (data && data->d_buf &&
          has_magic(static_cast<const uint8_t *>(data->d_buf), data->d_size)) {
        const auto *p = static_cast<const uint8_t *>(data->d_buf);
        return std::vector<uint8_t>(p, p + data->d_size);
      }
      break; // a damaged section: try the segment scan below
    }
  }

  // Without (or with a damaged) section: the writable, non-executable PT_LOADs, at 16-byte aligned
  // addresses (GO-ABI.md §3.1; the linker aligns the section to 16 and puts it first in the data
  // segment). Go's reader looks only at the first such segment; a PIE's first one is its relro
  // segment (.data.rel.ro*, see tests/pclntab) and the blob starts the second, so every writable
  // segment is searched, the first 64 KiB of each before the rest (an external link can put the
  // section deeper: golang/go#31861). The blob runs to the end of its segment's file-backed part,
  // not of the 64 KiB window: modinfo can be longer (golang/go#61644).
  for (uint64_t window : {kScanWindow, UINT64_MAX}) {
    for (const LoadSegment &seg : image.segments) {
      if ((seg.flags & (PF_W | PF_X)) != PF_W || seg.file_size < kHeaderSize)
        continue;
      uint64_t size = std::min(seg.file_size, window);
      Elf_Data *data =
          elf_getdata_rawchunk(elf, static_cast<int64_t>(seg.file_offset), size, ELF_T_BYTE);
      if (!data || !data->d_buf)
        continue;
      const auto *p = static_cast<const uint8_t *>(data->d_buf);
      for (size_t at = (16 - seg.vaddr % 16) % 16; at + kHeaderSize <= data->d_size; at += 16) {
        if (!has_magic(p + at, data->d_size - at))
          continue;
        uint64_t rest = std::min<uint64_t>(seg.file_size - at, kMaxBlobSize);
        Elf_Data *whole =
            elf_getdata_rawchunk(elf, static_cast<int64_t>(seg.file_offset + at), rest, ELF_T_BYTE);
        if (!whole || !whole->d_buf)
          return std::vector<uint8_t>(p + at, p + data->d_size);
        const auto *w = static_cast<const uint8_t *>(whole->d_buf);
        return std::vector<uint8_t>(w, w + whole->d_size);
      }
    }
  }
  return recover_from_runtime_variables(elf, image);
}

std::optional<GoBuildInfo> parse_buildinfo(const std::vector<uint8_t> &blob, int ptr_size,
                                           const BinaryImage &image, const std::string &path) {
  if (!has_magic(blob.data(), blob.size()))
    return std::nullopt;
  uint8_t flags = blob[15];
  GoBuildInfo info;
  std::optional<std::string> version, modinfo;
  if (flags & kFlagInline) {
    // Go >= 1.18: bytes 16..31 are zero, the strings follow the header.
    size_t pos = kHeaderSize;
    version = read_varint_string(blob, pos);
    modinfo = read_varint_string(blob, pos);
  } else {
    // Go 1.13-1.17: two pointers to string headers (runtime.buildVersion, runtime.modinfo).
    // The header's own pointer size wins; the ELF class is the fallback for a damaged byte.
    int size = blob[14] == 4 || blob[14] == 8 ? blob[14] : ptr_size;
    bool big_endian = flags & kFlagBigEndian;
    if (size != 4 && size != 8)
      return std::nullopt;
    uint64_t version_addr = read_uint(blob.data() + 16, size, big_endian);
    uint64_t modinfo_addr = read_uint(blob.data() + 16 + size, size, big_endian);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return std::nullopt;
    version = read_go_string(fd, image, version_addr, size, big_endian);
    modinfo = read_go_string(fd, image, modinfo_addr, size, big_endian);
    close(fd);
  }
  if (!version || version->empty())
    return std::nullopt;
  info.go_version = *version;
  if (modinfo)
    parse_modinfo(*modinfo, info);
  return info;
}

GoVersion parse_go_version(const std::string &text) {
  // "go1.19.8", "go1.21rc2", "go1.22beta1", "devel go1.22-abc123 Tue ...": take the first "goN"
  // at the start of the text or of a word, then ".M" if present.
  std::string_view view(text);
  for (size_t at = view.find("go"); at != std::string_view::npos; at = view.find("go", at + 1)) {
    if (at > 0 && !std::isspace(static_cast<unsigned char>(view[at - 1])))
      continue;
    size_t pos = at + 2;
    int major = parse_number(view, pos);
    if (major < 0)
      continue;
    int minor = 0;
    if (pos < view.size() && view[pos] == '.') {
      ++pos;
      minor = parse_number(view, pos);
      if (minor < 0)
        minor = 0;
    }
    return GoVersion{major, minor};
  }
  return {};
}

} // namespace weave
