// Stage 2 — binary: what the ELF file says, read with libelf. Knows nothing of specs or DWARF.
//
// Virtual addresses become file offsets through the PT_LOAD program headers (the mapping the
// kernel itself uses for uprobes), never through section headers, which may be missing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weave {

enum class Arch { X86_64, Arm64, I386 };
const char *arch_name(Arch arch); // "amd64", "arm64", "386" (Go's GOARCH spelling)

struct LoadSegment {
  uint64_t vaddr = 0;
  uint64_t file_offset = 0;
  uint64_t file_size = 0;
  uint64_t mem_size = 0;
  uint32_t flags = 0; // PF_X | PF_W | PF_R
};

// GoBuildInfo is the content of .go.buildinfo (both the pointer format of Go < 1.18 and the
// inline varint format of Go >= 1.18).
struct GoBuildInfo {
  std::string go_version;  // "go1.19.8"
  std::string main_path;   // modinfo "path" line: the main package's import path
  std::string module_path; // modinfo "mod" line
  std::vector<std::pair<std::string, std::string>> settings; // "build" lines, in file order
};

struct ElfSymbol {
  std::string name;
  uint64_t address = 0;
  uint64_t size = 0;
};

struct BinaryImage {
  std::string path; // as given
  Arch arch = Arch::X86_64;
  int ptr_size = 8;
  bool pie = false; // ET_DYN
  std::vector<LoadSegment> segments;
  std::string build_id;      // Go build id (.note.go.buildid) or else GNU build id as hex
  std::optional<GoBuildInfo> buildinfo;
  bool has_dwarf = false;    // .debug_info or .zdebug_info present (here or in debug_path)
  std::string debug_path;    // a separate file holding the DWARF and symbols (gobinary/debugfile.h)
  std::vector<ElfSymbol> functions; // STT_FUNC symbols from .symtab, sorted by address then name
  // runtime.types: where the type descriptors start; DWARF's go_runtime_type is relative to it.
  std::optional<uint64_t> types_base;
  // The thread-local segment (PT_TLS), 0 when there is none, and runtime.tlsg's offset in it: where
  // ABI0 code finds g (GO-ABI.md §5).
  uint64_t tls_memsz = 0;
  uint64_t tls_align = 0;
  std::optional<uint64_t> tlsg;
};

// Reads everything above. Throws UserError: [binary-unreadable] (missing, permission),
// [not-elf], [unsupported-arch], [unsupported-os] (a program for another GOOS), [not-go] (no
// .go.buildinfo and no Go symbols).
//
// `functions` says what of .symtab's functions it keeps: all of them (the generator), or only
// runtime.text (the tracer: sorting Caddy's 89,000 symbols was most of its start-up CPU, and
// holding them 8 MB, for C frames it may never meet; it reads them with load_function_symbols when
// it does).
enum class FunctionSymbols { All, RuntimeTextOnly };
BinaryImage load_binary(const std::string &path, FunctionSymbols functions = FunctionSymbols::All);

// load_binary(path).functions: every STT_FUNC symbol of .symtab, sorted by address then name.
std::vector<ElfSymbol> load_function_symbols(const std::string &path);

// File offset of a virtual address inside a PT_LOAD segment's file-backed part.
std::optional<uint64_t> file_offset(const BinaryImage &image, uint64_t vaddr);

// Parses the raw bytes of a .go.buildinfo blob (header first). The pointers of the old format are
// followed through `image.segments` into the file at `path`; the blob's own pointer-size byte wins
// over `ptr_size`. nullopt when the blob is malformed. Exposed for unit tests of both formats.
std::optional<GoBuildInfo> parse_buildinfo(const std::vector<uint8_t> &blob, int ptr_size,
                                           const BinaryImage &image, const std::string &path);

// "go1.19.8" -> {1, 19}; {0, 0} when unparsable.
struct GoVersion {
  int major = 0;
  int minor = 0;
};
GoVersion parse_go_version(const std::string &text);

} // namespace weave

namespace weave {

// The file-backed bytes of [vaddr, vaddr + size), read from the file at image.path; throws
// UserError [bad-address] when the range is not inside one PT_LOAD's file-backed part.
std::vector<uint8_t> read_bytes(const BinaryImage &image, uint64_t vaddr, uint64_t size);

} // namespace weave
