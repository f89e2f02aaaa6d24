#include "gobinary/debugfile.h"

#include "common/diag.h"
#include "gobinary/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

namespace weave {

namespace {

namespace fs = std::filesystem;

// What weave needs to know of one ELF file to decide whether it is the binary's debug file.
struct ElfFacts {
  bool elf = false;
  unsigned machine = 0;
  int elf_class = 0;
  std::string go_id, gnu_id;   // build ids, as they are written (Go: text; GNU: hex)
  bool has_dwarf = false;      // .debug_info/.zdebug_info with contents (not NOBITS)
  std::string debuglink;       // .gnu_debuglink's file name
  uint32_t debuglink_crc = 0;
  std::vector<ElfSymbol> functions;
  std::optional<uint64_t> types_base, tlsg;
  std::string error;           // why it could not be read
};

std::string hex(const char *bytes, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

void read_notes(Elf_Data *data, ElfFacts &facts) {
  size_t offset = 0, name_off = 0, desc_off = 0;
  GElf_Nhdr note;
  while ((offset = gelf_getnote(data, offset, &note, &name_off, &desc_off)) > 0) {
    const char *base = static_cast<const char *>(data->d_buf);
    std::string owner(base + name_off, strnlen(base + name_off, note.n_namesz));
    if (owner == "Go" && note.n_type == 4) // cmd/link's ELF_NOTE_GOBUILDID_TAG
      facts.go_id.assign(base + desc_off, strnlen(base + desc_off, note.n_descsz));
    else if (owner == "GNU" && note.n_type == NT_GNU_BUILD_ID)
      facts.gnu_id = hex(base + desc_off, note.n_descsz);
  }
}

// Reads the facts of an ELF file that must be a regular file: a FIFO or a device given as a
// debug file would otherwise block or never end.
ElfFacts read_facts(const std::string &path, bool with_symbols) {
  ElfFacts facts;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    facts.error = std::strerror(errno);
    return facts;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    facts.error = "not a regular file";
    close(fd);
    return facts;
  }
  elf_version(EV_CURRENT);
  Elf *elf = elf_begin(fd, ELF_C_READ, nullptr);
  GElf_Ehdr ehdr;
  if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
    facts.error = "not an ELF file";
    if (elf)
      elf_end(elf);
    close(fd);
    return facts;
  }
  facts.elf = true;
  facts.machine = ehdr.e_machine;
  facts.elf_class = gelf_getclass(elf);
  size_t shstrndx = 0;
  bool named = elf_getshdrstrndx(elf, &shstrndx) == 0;
  for (Elf_Scn *scn = elf_nextscn(elf, nullptr); named && scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr))
      continue;
    const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (!name)
      continue;
    if (shdr.sh_type == SHT_NOBITS)
      continue;
    if (shdr.sh_type == SHT_NOTE) {
      if (Elf_Data *data = elf_rawdata(scn, nullptr))
        read_notes(data, facts);
    } else if (!std::strcmp(name, ".debug_info") || !std::strcmp(name, ".zdebug_info")) {
      facts.has_dwarf = shdr.sh_size > 0;
    } else if (!std::strcmp(name, ".gnu_debuglink")) {
      // The file name, NUL, padding to 4 bytes, then the CRC32 in the file's byte order.
      Elf_Data *data = elf_rawdata(scn, nullptr);
      if (data && data->d_size >= 8) {
        const char *base = static_cast<const char *>(data->d_buf);
        size_t len = strnlen(base, data->d_size);
        size_t crc_at = (len + 4) & ~size_t{3};
        if (len > 0 && crc_at + 4 <= data->d_size) {
          facts.debuglink.assign(base, len);
          unsigned char b[4];
          std::memcpy(b, base + crc_at, 4);
          bool little = ehdr.e_ident[EI_DATA] == ELFDATA2LSB;
          facts.debuglink_crc = little ? (b[0] | b[1] << 8 | b[2] << 16 | uint32_t(b[3]) << 24)
                                       : (b[3] | b[2] << 8 | b[1] << 16 | uint32_t(b[0]) << 24);
        }
      }
    } else if (with_symbols && shdr.sh_type == SHT_SYMTAB) {
      for_each_symbol(elf, scn, shdr, [&](const char *sym_name, const GElf_Sym &sym) {
        if (GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF)
          facts.functions.push_back(ElfSymbol{sym_name, sym.st_value, sym.st_size});
        else if (!std::strcmp(sym_name, "runtime.types"))
          facts.types_base = sym.st_value;
        else if (!std::strcmp(sym_name, "runtime.tlsg"))
          facts.tlsg = sym.st_value;
        return true;
      });
    }
  }
  elf_end(elf);
  close(fd);
  return facts;
}

unsigned machine_of(Arch arch) {
  switch (arch) {
  case Arch::X86_64: return EM_X86_64;
  case Arch::Arm64: return EM_AARCH64;
  case Arch::I386: return EM_386;
  }
  return EM_NONE;
}

// Why `debug` is not the debug file of the binary described by `binary` and `image`; empty when
// it is. Every build id both carry must agree, and at least one must be there to compare.
std::string mismatch(const BinaryImage &image, const ElfFacts &binary, const ElfFacts &debug) {
  if (debug.machine != machine_of(image.arch))
    return "it is for another architecture than " + std::string(arch_name(image.arch));
  bool compared = false;
  if (!binary.go_id.empty() && !debug.go_id.empty()) {
    if (binary.go_id != debug.go_id)
      return "its Go build id is " + debug.go_id + ", the binary's " + binary.go_id;
    compared = true;
  }
  if (!binary.gnu_id.empty() && !debug.gnu_id.empty()) {
    if (binary.gnu_id != debug.gnu_id)
      return "its GNU build id is " + debug.gnu_id + ", the binary's " + binary.gnu_id;
    compared = true;
  }
  if (!compared)
    return "?unverified";
  return {};
}

// zlib's crc32, the checksum .gnu_debuglink records; read in bounded chunks.
std::optional<uint32_t> file_crc32(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return std::nullopt;
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buf(1 << 16);
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0)
      break;
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
  }
  close(fd);
  return static_cast<uint32_t>(crc);
}

void adopt(BinaryImage &image, const std::string &path, ElfFacts &debug) {
  image.debug_path = path;
  image.has_dwarf = true;
  // A stripped binary has no symbol table; its debug file's describes the same addresses.
  if (image.functions.empty()) {
    image.functions = std::move(debug.functions);
    std::sort(image.functions.begin(), image.functions.end(), [](const ElfSymbol &a, const ElfSymbol &b) {
      return a.address != b.address ? a.address < b.address : a.name < b.name;
    });
  }
  if (!image.types_base)
    image.types_base = debug.types_base;
  if (!image.tlsg)
    image.tlsg = debug.tlsg;
}

} // namespace

void find_debug_file(BinaryImage &image, const DebugSearch &search, std::vector<std::string> &notes) {
  if (search.file.empty() && image.has_dwarf)
    return;
  ElfFacts binary = read_facts(image.path, false);

  if (!search.file.empty()) {
    const std::string &path = search.file;
    SourceLoc loc{path, 0, 0};
    ElfFacts debug = read_facts(path, true);
    if (!debug.elf)
      throw UserError("debug-file-unreadable", path + ": cannot read it as a debug file: " + debug.error, loc);
    std::string why = mismatch(image, binary, debug);
    if (why == "?unverified")
      throw UserError("debug-file-unverified",
                      path + ": cannot check that it describes " + image.path +
                          ": the two have no build id in common to compare",
                      loc,
                      "build with a build id (Go writes one unless -buildid= is given; -ldflags=-B=gobuildid "
                      "adds a GNU one) and split the debug file off the same build (objcopy --only-keep-debug)");
    if (!why.empty())
      throw UserError("debug-file-mismatch", path + " is not the debug file of " + image.path + ": " + why, loc,
                      "give the debug file split off this very build");
    if (!debug.has_dwarf)
      throw UserError("debug-file-no-dwarf", path + ": has no DWARF (.debug_info)", loc);
    adopt(image, path, debug);
    return;
  }

  // Looking, as debuggers do: by .gnu_debuglink beside the binary, in its .debug directory and
  // under each debug directory; then by GNU build id under each debug directory.
  std::vector<std::string> dirs = search.dirs;
  if (dirs.empty())
    dirs.push_back("/usr/lib/debug");
  std::vector<std::pair<std::string, bool>> candidates; // path, found by debuglink
  if (!binary.debuglink.empty() && binary.debuglink.find('/') == std::string::npos) {
    fs::path dir = fs::absolute(image.path).lexically_normal().parent_path();
    candidates.push_back({(dir / binary.debuglink).string(), true});
    candidates.push_back({(dir / ".debug" / binary.debuglink).string(), true});
    for (const auto &root : dirs)
      candidates.push_back({(fs::path(root) / dir.relative_path() / binary.debuglink).string(), true});
  }
  if (binary.gnu_id.size() > 2)
    for (const auto &root : dirs)
      candidates.push_back({(fs::path(root) / ".build-id" / binary.gnu_id.substr(0, 2) /
                             (binary.gnu_id.substr(2) + ".debug"))
                                .string(),
                            false});
  for (const auto &[path, by_link] : candidates) {
    std::error_code ec;
    if (!fs::exists(path, ec) || fs::equivalent(path, image.path, ec))
      continue;
    ElfFacts debug = read_facts(path, true);
    std::string why;
    if (!debug.elf)
      why = debug.error;
    else if (by_link && file_crc32(path) != binary.debuglink_crc)
      why = "its CRC32 is not the one .gnu_debuglink records";
    else if (std::string m = mismatch(image, binary, debug); !m.empty() && !(m == "?unverified" && by_link))
      why = m == "?unverified" ? "no build id to compare" : m;
    else if (!debug.has_dwarf)
      why = "it has no DWARF";
    if (!why.empty()) {
      notes.push_back("debug file " + path + " passed over: " + why);
      continue;
    }
    adopt(image, path, debug);
    return;
  }
}

} // namespace weave
