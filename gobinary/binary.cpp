// Stage 2 — binary: reads the ELF headers, segments, symbols, build id and Go build info.
//
// Every libelf call can fail on a damaged file and is checked: a truncated or corrupt file must
// end in a [not-elf] error, never in a crash or a read past the end of the mapping.
#include "gobinary/binary.h"
#include "gobinary/elf_symbols.h"
#include "gobinary/buildinfo_internal.h"
#include "common/diag.h"
#include "gobinary/elf_notes.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weave {

const char *arch_name(Arch arch) {
  switch (arch) {
  case Arch::X86_64:
    return "amd64";
  case Arch::Arm64:
    return "arm64";
  case Arch::I386:
    return "386";
  }
  return "unknown";
}

namespace {

// OpenElf owns the descriptor and the libelf handle for the duration of load_binary.
struct OpenElf {
  int fd = -1;
  Elf *elf = nullptr;
  ~OpenElf() {
    if (elf)
      elf_end(elf);
    if (fd >= 0)
      close(fd);
  }
};

[[noreturn]] void fail(const char *id, const std::string &path, const std::string &message,
                       std::string hint = {}) {
  throw UserError(id, message, SourceLoc{path, 0, 0}, std::move(hint));
}

[[noreturn]] void fail_corrupt(const std::string &path, const std::string &what) {
  const char *detail = elf_errmsg(-1);
  fail("not-elf", path,
       path + ": not an ELF file (" + what + (detail ? std::string(": ") + detail : "") + ")");
}

// A file that is not ELF: a program for another system is named as one, with its GOOS.
[[noreturn]] void not_elf(int fd, const std::string &path) {
  unsigned char magic[4] = {};
  bool read_all = pread(fd, magic, sizeof magic, 0) == static_cast<ssize_t>(sizeof magic);
  const char *os_hint = "uprobes are a Linux kernel feature: build the program with GOOS=linux";
  if (read_all && magic[0] == 'M' && magic[1] == 'Z')
    fail("unsupported-os", path, path + ": a Windows program (PE format, GOOS=windows), not a Linux ELF binary",
         os_hint);
  uint32_t word = uint32_t(magic[0]) | uint32_t(magic[1]) << 8 | uint32_t(magic[2]) << 16 | uint32_t(magic[3]) << 24;
  if (read_all && (word == 0xfeedfaceu || word == 0xfeedfacfu || word == 0xcefaedfeu || word == 0xcffaedfeu ||
                   word == 0xbebafecau))
    fail("unsupported-os", path, path + ": a macOS program (Mach-O format, GOOS=darwin or ios), not a Linux ELF binary",
         os_hint);
  fail("not-elf", path, path + ": not an ELF file");
}

// The operating system an ELF file was built for, when it is not Linux: Go's linker marks FreeBSD in
// the ELF header's OS ABI byte, and from Go 1.18 every binary's build info says its GOOS. Empty for
// Linux (and for files that say nothing, as ELF's default, System V, is what Linux uses).
std::string foreign_goos(const GElf_Ehdr &ehdr, const std::optional<GoBuildInfo> &info) {
  if (info)
    for (const auto &[key, value] : info->settings)
      if (key == "GOOS" && value != "linux")
        return value;
  switch (ehdr.e_ident[EI_OSABI]) {
  case ELFOSABI_FREEBSD:
    return "freebsd";
  case ELFOSABI_NETBSD:
    return "netbsd";
  case ELFOSABI_OPENBSD:
    return "openbsd";
  case ELFOSABI_SOLARIS:
    return "solaris";
  default:
    return {};
  }
}

std::string machine_name(unsigned machine) {
  std::string number = " (e_machine " + std::to_string(machine) + ")";
  switch (machine) {
  case EM_ARM:
    return "ARM (32-bit)" + number;
  case EM_PPC:
    return "PowerPC" + number;
  case EM_PPC64:
    return "PowerPC64" + number;
  case EM_S390:
    return "s390x" + number;
  case EM_MIPS:
    return "MIPS" + number;
  case EM_RISCV:
    return "RISC-V" + number;
  case EM_SPARCV9:
    return "SPARC v9" + number;
  case 258:
    return "LoongArch" + number; // EM_LOONGARCH, missing from older elf.h
  case EM_NONE:
    return "none (e_machine 0)";
  default:
    return "with e_machine " + std::to_string(machine);
  }
}

bool is_go_runtime_symbol(const char *name) {
  // Present in every Go executable that keeps .symtab (go1.19: runtime/proc.go, runtime/extern.go).
  return std::strcmp(name, "runtime.main") == 0 || std::strcmp(name, "runtime.buildVersion") == 0;
}

} // namespace

BinaryImage load_binary(const std::string &path, FunctionSymbols functions) {
  if (elf_version(EV_CURRENT) == EV_NONE)
    throw std::logic_error(std::string("libelf initialisation failed: ") + elf_errmsg(-1));

  BinaryImage image;
  image.path = path;
  OpenElf file;
  // A FIFO or a device would block open() or read forever: only regular files are binaries.
  struct stat kind;
  if (stat(path.c_str(), &kind) == 0 && !S_ISREG(kind.st_mode) && !S_ISDIR(kind.st_mode))
    fail("binary-unreadable", path, "cannot read " + path + ": it is not a regular file (a FIFO, socket or device)");
  file.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (file.fd < 0)
    fail("binary-unreadable", path, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (fstat(file.fd, &st) != 0)
    fail("binary-unreadable", path, "cannot stat " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    fail("binary-unreadable", path, "cannot read " + path + ": it is a directory");
  if (st.st_size == 0)
    fail("not-elf", path, path + ": not an ELF file (the file is empty)");

  // Read, never mapped (here and wherever weave or the tracer opens a binary with libelf or libdw):
  // a file truncated while it is read gives libelf a short read, an error, where a mapping gave
  // SIGBUS. Go's DWARF is compressed and copied out anyway: walking every DIE of cmd/compile (24 MB)
  // took 0.38-0.58 s read against 0.48-0.62 s mapped, with 29 MB RSS against 35 MB.
  file.elf = elf_begin(file.fd, ELF_C_READ, nullptr);
  if (!file.elf || elf_kind(file.elf) != ELF_K_ELF)
    not_elf(file.fd, path);
  Elf *elf = file.elf;

  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr))
    fail_corrupt(path, "corrupt ELF header");
  int elf_class = gelf_getclass(elf);
  image.ptr_size = elf_class == ELFCLASS64 ? 8 : 4;
  switch (ehdr.e_machine) {
  case EM_X86_64:
    image.arch = Arch::X86_64;
    break;
  case EM_AARCH64:
    image.arch = Arch::Arm64;
    break;
  case EM_386:
    image.arch = Arch::I386;
    break;
  default:
    fail("unsupported-arch", path,
         path + ": unsupported architecture " + machine_name(ehdr.e_machine),
         "weave supports amd64, arm64 and 386 Go binaries");
  }
  // x32 (EM_X86_64 in a 32-bit file) and the like are other ABIs; Go produces neither.
  int expected_class = image.arch == Arch::I386 ? ELFCLASS32 : ELFCLASS64;
  if (elf_class != expected_class)
    fail("unsupported-arch", path,
         path + ": unsupported architecture " + std::string(arch_name(image.arch)) + " in a " +
             (elf_class == ELFCLASS64 ? "64" : "32") + "-bit ELF file",
         "weave supports amd64, arm64 and 386 Go binaries");
  if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)
    fail("not-elf", path,
         path + ": not an executable (ELF type " + std::to_string(ehdr.e_type) + ")");
  image.pie = ehdr.e_type == ET_DYN;

  // libelf quietly clamps the header tables to what fits in the file, so a truncated file would
  // look like one without segments or sections; check the header's claims ourselves. (PN_XNUM
  // and e_shnum == 0 with e_shoff != 0 mean the real count lives in section 0: libelf checks it.)
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  auto table_fits = [&](uint64_t offset, uint64_t count, uint64_t entry_size) {
    return offset <= file_size && count * entry_size <= file_size - offset;
  };
  if (ehdr.e_phnum != PN_XNUM && !table_fits(ehdr.e_phoff, ehdr.e_phnum, ehdr.e_phentsize))
    fail("not-elf", path,
         path + ": not an ELF file (truncated: the program headers extend past "
                "the end of the file)");
  if (ehdr.e_shnum != 0 && !table_fits(ehdr.e_shoff, ehdr.e_shnum, ehdr.e_shentsize))
    fail("not-elf", path,
         path + ": not an ELF file (truncated: the section headers extend past "
                "the end of the file)");

  // Program headers: the address -> file mapping uprobes use (GO-ABI.md §7). A segment that
  // claims bytes past the end of the file means a truncated file.
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) != 0)
    fail_corrupt(path, "corrupt program header count");
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf, static_cast<int>(i), &phdr))
      fail_corrupt(path, "truncated or corrupt program header " + std::to_string(i));
    if (phdr.p_type == PT_TLS) {
      image.tls_memsz = phdr.p_memsz;
      image.tls_align = phdr.p_align;
    }
    if (phdr.p_type != PT_LOAD)
      continue;
    if (phdr.p_offset > file_size || phdr.p_filesz > file_size - phdr.p_offset)
      fail("not-elf", path,
           path + ": not an ELF file (truncated: segment " + std::to_string(i) +
               " extends past the end of the file)");
    image.segments.push_back(LoadSegment{phdr.p_vaddr, phdr.p_offset, phdr.p_filesz, phdr.p_memsz,
                                         static_cast<uint32_t>(phdr.p_flags)});
  }
  if (image.segments.empty())
    fail("not-elf", path, path + ": not an executable (no loadable segments)");

  // Section headers are optional (a stripped-by-hand binary may have none); everything here has
  // a fallback without them.
  bool go_section = false;
  bool go_symbol = false;
  size_t shnum = 0;
  if (elf_getshdrnum(elf, &shnum) != 0)
    fail_corrupt(path, "corrupt section header count");
  if (shnum > 0) {
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
      fail_corrupt(path, "corrupt section header string table index");
    for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr))
        fail_corrupt(path, "corrupt section header");
      const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
      if (!name)
        continue;
      if (!std::strcmp(name, ".debug_info") || !std::strcmp(name, ".zdebug_info"))
        image.has_dwarf = true;
      // GO-ABI.md §6.2: .gopclntab, or .data.rel.ro.gopclntab in PIEs.
      if (!std::strcmp(name, ".gopclntab") || !std::strcmp(name, ".data.rel.ro.gopclntab") ||
          !std::strcmp(name, ".go.buildinfo"))
        go_section = true;
      if (shdr.sh_type != SHT_SYMTAB)
        continue;
      bool readable = for_each_symbol(elf, scn, shdr, [&](const char *sym_name, const GElf_Sym &sym) {
        if (is_go_runtime_symbol(sym_name))
          go_symbol = true;
        if (GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF) {
          if (functions == FunctionSymbols::All || std::strcmp(sym_name, "runtime.text") == 0)
            image.functions.push_back(ElfSymbol{sym_name, sym.st_value, sym.st_size});
        }
        else if (std::strcmp(sym_name, "runtime.types") == 0)
          image.types_base = sym.st_value;
        else if (std::strcmp(sym_name, "runtime.tlsg") == 0)
          image.tlsg = sym.st_value;
        return true;
      });
      if (!readable)
        fail_corrupt(path, "unreadable symbol table");
    }
  }
  std::sort(image.functions.begin(), image.functions.end(),
            [](const ElfSymbol &a, const ElfSymbol &b) {
              return a.address != b.address ? a.address < b.address : a.name < b.name;
            });

  image.build_id = read_build_id(elf);

  auto blob = find_buildinfo_blob(elf, image);
  if (blob)
    image.buildinfo = parse_buildinfo(*blob, image.ptr_size, image, path);

  // A Go build id note (not the GNU one, which C toolchains write) is also proof enough.
  bool go_build_id = !image.build_id.empty() && image.build_id.rfind("gnu:", 0) != 0;
  if (!blob && !go_section && !go_symbol && !go_build_id)
    fail("not-go", path,
         path + ": not a Go binary (no .go.buildinfo, .gopclntab or Go runtime symbols)",
         "weave traces programs built by the Go toolchain");
  // Another system's program shares the ELF format and the architecture, but neither its system
  // calls nor its thread-local storage (where g lives) are Linux's: a tracer would read wrong values.
  if (std::string goos = foreign_goos(ehdr, image.buildinfo); !goos.empty())
    fail("unsupported-os", path,
         path + ": built for GOOS=" + goos + ", not Linux",
         "uprobes are a Linux kernel feature: build the program with GOOS=linux");
  return image;
}

std::vector<ElfSymbol> load_function_symbols(const std::string &path) {
  return load_binary(path).functions;
}

std::optional<uint64_t> file_offset(const BinaryImage &image, uint64_t vaddr) {
  // GO-ABI.md §7: the PT_LOAD whose file-backed part holds vaddr. Addresses in the zero-filled
  // tail (p_filesz <= off < p_memsz, .bss) have no file offset.
  for (const LoadSegment &seg : image.segments)
    if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.file_size)
      return vaddr - seg.vaddr + seg.file_offset;
  return std::nullopt;
}

} // namespace weave

namespace weave {

std::vector<uint8_t> read_bytes(const BinaryImage &image, uint64_t vaddr, uint64_t size) {
  for (const LoadSegment &seg : image.segments) {
    if (vaddr < seg.vaddr || vaddr + size > seg.vaddr + seg.file_size)
      continue;
    std::vector<uint8_t> bytes(size);
    int fd = open(image.path.c_str(), O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : pread(fd, bytes.data(), size, static_cast<off_t>(vaddr - seg.vaddr + seg.file_offset));
    int err = errno;
    if (fd >= 0)
      close(fd);
    if (n != static_cast<ssize_t>(size))
      throw UserError("binary-unreadable",
                      "cannot read " + std::to_string(size) + " bytes of code: " + strerror(err),
                      SourceLoc{image.path});
    return bytes;
  }
  throw UserError("bad-address", "code range is outside the file-backed part of every PT_LOAD",
                  SourceLoc{image.path});
}

} // namespace weave
