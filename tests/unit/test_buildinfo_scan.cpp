// Tests of the .go.buildinfo search without section headers, on small synthetic ELF files: a blob
// that is not in the first writable segment (a PIE's layout), a modinfo longer than the 64 KiB
// window Go's old reader used (golang/go#61644), and no blob at all, where the version and modinfo
// come from the runtime's own variables (as in esbuild 0.28.2, tests/npm). The real binaries these
// cases come from are covered by test_pclntab.cpp (PIE) and tests/npm/test_npm_binaries.cpp.
#include "gobinary/binary.h"
#include "common/diag.h"

#include <doctest/doctest.h>

#include "test_support.h"

#include <cstring>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace weave;
namespace fs = std::filesystem;
using namespace weave_test;

namespace {


// Segment is one PT_LOAD of a synthetic file: its flags, address and bytes.
struct Segment {
  uint32_t flags;
  uint64_t vaddr;
  std::vector<uint8_t> bytes;
};

// A minimal x86-64 ET_EXEC: ELF header, program headers, each segment's bytes at a page-aligned
// file offset congruent to its address. No section headers.
std::string write_elf(const std::string &path, const std::vector<Segment> &segments) {
  std::vector<uint8_t> file(0x1000, 0);
  std::vector<Elf64_Phdr> phdrs;
  for (const Segment &seg : segments) {
    uint64_t offset = (file.size() + 0xfff) & ~uint64_t{0xfff};
    offset += seg.vaddr & 0xfff;
    file.resize(offset, 0);
    file.insert(file.end(), seg.bytes.begin(), seg.bytes.end());
    Elf64_Phdr ph{};
    ph.p_type = PT_LOAD;
    ph.p_flags = seg.flags;
    ph.p_offset = offset;
    ph.p_vaddr = ph.p_paddr = seg.vaddr;
    ph.p_filesz = ph.p_memsz = seg.bytes.size();
    ph.p_align = 0x1000;
    phdrs.push_back(ph);
  }
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_entry = segments.front().vaddr;
  eh.e_phoff = sizeof eh;
  eh.e_ehsize = sizeof eh;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<uint16_t>(phdrs.size());
  eh.e_shentsize = sizeof(Elf64_Shdr);
  std::memcpy(file.data(), &eh, sizeof eh);
  std::memcpy(file.data() + sizeof eh, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(file.data()), static_cast<std::streamsize>(file.size()));
  REQUIRE(out.good());
  return path;
}

std::vector<uint8_t> inline_blob(const std::string &version, const std::string &modinfo) {
  std::vector<uint8_t> blob(32, 0);
  std::memcpy(blob.data(), "\xff Go buildinf:", 14);
  blob[14] = 8;
  blob[15] = 2; // inline strings
  append_varint_string(blob, version);
  append_varint_string(blob, modinfo);
  return blob;
}

void put64(std::vector<uint8_t> &bytes, size_t at, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

const std::vector<uint8_t> kCode(64, 0xcc);

} // namespace

TEST_CASE("build info in the second writable segment, with a modinfo longer than 64 KiB") {
  TempDir tmp;
  std::string lines = "path\texample.com/big\nmod\texample.com/big\t(devel)\t\n";
  while (lines.size() < 100 * 1024)
    lines += "dep\texample.com/dependency/number/" + std::to_string(lines.size()) +
             "\tv1.0.0\th1:abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG=\n";
  lines += "build\tGOARCH=amd64\n";
  std::vector<uint8_t> data = inline_blob("go1.22.4", framed_modinfo(lines));
  data.resize(data.size() + 4096, 0);
  // A PIE's first writable segment is its relro data (.data.rel.ro*); .go.buildinfo starts the
  // next.
  std::vector<uint8_t> relro(0x3000, 0x11);
  std::string path = write_elf(tmp.file("pie-like"), {{PF_R | PF_X, 0x401000, kCode},
                                                      {PF_R | PF_W, 0x500000, relro},
                                                      {PF_R | PF_W, 0x600000, data}});
  BinaryImage image = load_binary(path);
  REQUIRE(image.buildinfo.has_value());
  CHECK(image.buildinfo->go_version == "go1.22.4");
  CHECK(image.buildinfo->main_path == "example.com/big");
  REQUIRE(!image.buildinfo->settings.empty());
  CHECK(image.buildinfo->settings.back() == std::pair<std::string, std::string>("GOARCH", "amd64"));
}

TEST_CASE("build info deep inside a writable segment (external linking)") {
  TempDir tmp;
  std::vector<uint8_t> data(0x30000, 0x22);
  std::vector<uint8_t> blob = inline_blob("go1.21.0", framed_modinfo("path\tx/deep\n"));
  std::copy(blob.begin(), blob.end(), data.begin() + 0x20010);
  std::string path =
      write_elf(tmp.file("deep"), {{PF_R | PF_X, 0x401000, kCode}, {PF_R | PF_W, 0x600000, data}});
  BinaryImage image = load_binary(path);
  REQUIRE(image.buildinfo.has_value());
  CHECK(image.buildinfo->go_version == "go1.21.0");
  CHECK(image.buildinfo->main_path == "x/deep");
}

TEST_CASE("no .go.buildinfo: version and modinfo from the runtime's variables") {
  TempDir tmp;
  // Read-only data holding the version text and the framed modinfo; a data segment holding
  // runtime.buildVersion = {ptr, len} and some unrelated words.
  const std::string modinfo =
      framed_modinfo("path\tgithub.com/evanw/esbuild/cmd/esbuild\nmod\tgithub.com/evanw/esbuild\t"
                     "(devel)\t\nbuild\t-compiler=gc\n");
  std::vector<uint8_t> rodata(0x2000, 0);
  std::memcpy(rodata.data() + 0x100, "trad-chinese-informal", 21);
  std::memcpy(rodata.data() + 0x200, "go1.26.5", 8);
  std::memcpy(rodata.data() + 0x400, modinfo.data(), modinfo.size());
  std::vector<uint8_t> data(0x1000, 0);
  put64(data, 0x40, 0x700100), put64(data, 0x48, 21);             // another string
  put64(data, 0x80, 0x700200), put64(data, 0x88, 8);              // runtime.buildVersion
  put64(data, 0xc0, 0x700400), put64(data, 0xc8, modinfo.size()); // runtime.modinfo

  SUBCASE("found") {
    std::string path = write_elf(
        tmp.file("vars"),
        {{PF_R | PF_X, 0x401000, kCode}, {PF_R, 0x700000, rodata}, {PF_R | PF_W, 0x800000, data}});
    BinaryImage image = load_binary(path);
    REQUIRE(image.buildinfo.has_value());
    CHECK(image.buildinfo->go_version == "go1.26.5");
    CHECK(image.buildinfo->main_path == "github.com/evanw/esbuild/cmd/esbuild");
    CHECK(image.buildinfo->module_path == "github.com/evanw/esbuild");
    REQUIRE(image.buildinfo->settings.size() == 1);
    CHECK(image.buildinfo->settings[0].first == "-compiler");
  }
  SUBCASE("two different version strings: no guess") {
    std::memcpy(rodata.data() + 0x300, "go1.25.1", 8);
    put64(data, 0x100, 0x700300), put64(data, 0x108, 8);
    std::string path = write_elf(
        tmp.file("ambiguous"),
        {{PF_R | PF_X, 0x401000, kCode}, {PF_R, 0x700000, rodata}, {PF_R | PF_W, 0x800000, data}});
    // Nothing else marks it as Go, so it is not one.
    try {
      load_binary(path);
      FAIL("expected [not-go]");
    } catch (const UserError &error) {
      CHECK(error.id == "not-go");
    }
  }
  SUBCASE("no modinfo: nothing") {
    std::fill(rodata.begin() + 0x400, rodata.begin() + 0x410, 0);
    std::string path = write_elf(
        tmp.file("nomod"),
        {{PF_R | PF_X, 0x401000, kCode}, {PF_R, 0x700000, rodata}, {PF_R | PF_W, 0x800000, data}});
    try {
      load_binary(path);
      FAIL("expected [not-go]");
    } catch (const UserError &error) {
      CHECK(error.id == "not-go");
    }
  }
}
