// Tests of the binary stage against the Go fixtures (built by tests/CMakeLists.txt with the
// machine's Go 1.19.8) and against synthetic and damaged files written to a temporary directory.
#include "gobinary/binary.h"
#include "common/diag.h"

#include <doctest/doctest.h>

#include "test_support.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace weave;
namespace fs = std::filesystem;
using namespace weave_test;

namespace {


std::vector<uint8_t> read_at(const std::string &path, uint64_t offset, size_t size) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<uint8_t> bytes(size);
  in.read(reinterpret_cast<char *>(bytes.data()), static_cast<std::streamsize>(size));
  REQUIRE(in.gcount() == static_cast<std::streamsize>(size));
  return bytes;
}



// The id of the UserError that `fn` throws ("" if it does not throw one).
template <typename F> UserError expect_error(F fn) {
  try {
    fn();
  } catch (const UserError &error) {
    return error;
  }
  FAIL("expected a UserError");
  return UserError("", "");
}

const ElfSymbol *find_symbol(const BinaryImage &image, const std::string &name) {
  for (const ElfSymbol &sym : image.functions)
    if (sym.name == name)
      return &sym;
  return nullptr;
}

std::string setting(const GoBuildInfo &info, const std::string &key) {
  for (const auto &[k, v] : info.settings)
    if (k == key)
      return v;
  return "<missing>";
}

// Independent of file_offset(): the section holding vaddr, read through the section headers.
std::vector<uint8_t> read_vaddr_via_sections(const std::string &path, uint64_t vaddr, size_t size) {
  std::vector<uint8_t> file = read_file(path);
  REQUIRE(file.size() >= sizeof(Elf64_Ehdr));
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, file.data(), sizeof ehdr);
  for (unsigned i = 0; i < ehdr.e_shnum; ++i) {
    Elf64_Shdr shdr;
    std::memcpy(&shdr, file.data() + ehdr.e_shoff + i * sizeof shdr, sizeof shdr);
    if (shdr.sh_type == SHT_PROGBITS && vaddr >= shdr.sh_addr &&
        vaddr + size <= shdr.sh_addr + shdr.sh_size) {
      uint64_t offset = shdr.sh_offset + (vaddr - shdr.sh_addr);
      return std::vector<uint8_t>(file.begin() + static_cast<long>(offset),
                                  file.begin() + static_cast<long>(offset + size));
    }
  }
  FAIL("no section holds the address");
  return {};
}

void put_le(std::vector<uint8_t> &bytes, size_t at, uint64_t value, int size) {
  for (int i = 0; i < size; ++i)
    bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

void put_be(std::vector<uint8_t> &bytes, size_t at, uint64_t value, int size) {
  for (int i = 0; i < size; ++i)
    bytes[at + i] = static_cast<uint8_t>(value >> (8 * (size - 1 - i)));
}

std::vector<uint8_t> buildinfo_header(uint8_t ptr_size, uint8_t flags) {
  std::vector<uint8_t> blob(32, 0);
  std::memcpy(blob.data(), "\xff Go buildinf:", 14);
  blob[14] = ptr_size;
  blob[15] = flags;
  return blob;
}

} // namespace

TEST_CASE("arch_name uses Go's GOARCH spelling") {
  CHECK(std::string(arch_name(Arch::X86_64)) == "amd64");
  CHECK(std::string(arch_name(Arch::Arm64)) == "arm64");
  CHECK(std::string(arch_name(Arch::I386)) == "386");
}

TEST_CASE("amd64 fixture: header, segments, symbols, build info") {
  BinaryImage image = load_binary(kFixture);
  CHECK(image.path == kFixture);
  CHECK(image.arch == Arch::X86_64);
  CHECK(image.ptr_size == 8);
  CHECK_FALSE(image.pie);
  CHECK(image.has_dwarf);

  // Go's internal linker writes three PT_LOADs: text (R E), rodata (R), data (RW, with .bss).
  REQUIRE(image.segments.size() == 3);
  CHECK(image.segments[0].flags == (PF_R | PF_X));
  CHECK(image.segments[0].vaddr == 0x400000);
  CHECK(image.segments[1].flags == PF_R);
  CHECK(image.segments[2].flags == (PF_R | PF_W));
  CHECK(image.segments[2].mem_size > image.segments[2].file_size); // .bss

  REQUIRE(image.buildinfo.has_value());
  CHECK(image.buildinfo->go_version == "go1.19.8");
  CHECK(image.buildinfo->main_path == "weave.test/fixture");
  CHECK(image.buildinfo->module_path == "weave.test/fixture");
  CHECK(setting(*image.buildinfo, "GOARCH") == "amd64");
  CHECK(setting(*image.buildinfo, "-compiler") == "gc");
  CHECK(setting(*image.buildinfo, "CGO_ENABLED") == "0");
  CHECK(image.buildinfo->settings.front().first == "-compiler"); // file order

  REQUIRE_FALSE(image.functions.empty());
  CHECK(std::is_sorted(image.functions.begin(), image.functions.end(),
                       [](const ElfSymbol &a, const ElfSymbol &b) {
                         return a.address != b.address ? a.address < b.address : a.name < b.name;
                       }));
  const ElfSymbol *ints = find_symbol(image, "main.Ints");
  REQUIRE(ints != nullptr);
  CHECK(ints->size > 0);
  CHECK(find_symbol(image, "main.(*Server).Handle") != nullptr);
  CHECK(find_symbol(image, "runtime.main") != nullptr);
  // ABI0 assembly bodies keep the .abi0 suffix in .symtab (GO-ABI.md §2.2).
  CHECK(find_symbol(image, "runtime.rt0_go.abi0") != nullptr);
  // Data symbols are not functions.
  CHECK(find_symbol(image, "runtime.buildVersion") == nullptr);
}

TEST_CASE("build ids match `go tool buildid`") {
  for (const std::string &path : {kFixture, kStripped, kFixture386, kFixtureArm64}) {
    CAPTURE(path);
    BinaryImage image = load_binary(path);
    std::string expected = run(std::string(WEAVE_GO_TOOL) + " tool buildid '" + path + "' 2>&1");
    while (!expected.empty() && (expected.back() == '\n' || expected.back() == '\r'))
      expected.pop_back();
    CHECK(!expected.empty());
    CHECK(image.build_id == expected);
  }
}

TEST_CASE("386 fixture") {
  BinaryImage image = load_binary(kFixture386);
  CHECK(image.arch == Arch::I386);
  CHECK(image.ptr_size == 4);
  CHECK(image.has_dwarf);
  REQUIRE(image.buildinfo.has_value());
  CHECK(image.buildinfo->go_version == "go1.19.8");
  CHECK(image.buildinfo->main_path == "weave.test/fixture");
  CHECK(setting(*image.buildinfo, "GOARCH") == "386");
  CHECK(find_symbol(image, "main.Ints") != nullptr);
}

TEST_CASE("arm64 fixture") {
  BinaryImage image = load_binary(kFixtureArm64);
  CHECK(image.arch == Arch::Arm64);
  CHECK(image.ptr_size == 8);
  REQUIRE(image.buildinfo.has_value());
  CHECK(image.buildinfo->go_version == "go1.19.8");
  CHECK(setting(*image.buildinfo, "GOARCH") == "arm64");
  const ElfSymbol *ints = find_symbol(image, "main.Ints");
  REQUIRE(ints != nullptr);
  // GO-ABI.md §7: arm64 text is mapped from file offset 0 at 0x10000.
  auto offset = file_offset(image, ints->address);
  REQUIRE(offset.has_value());
  CHECK(*offset == ints->address - 0x10000);
}

TEST_CASE("file_offset follows the PT_LOAD mapping") {
  for (const std::string &path : {kFixture, kFixtureArm64}) {
    CAPTURE(path);
    BinaryImage image = load_binary(path);
    const ElfSymbol *ints = find_symbol(image, "main.Ints");
    REQUIRE(ints != nullptr);

    const LoadSegment *text = nullptr;
    for (const LoadSegment &seg : image.segments)
      if (seg.flags & PF_X)
        text = &seg;
    REQUIRE(text != nullptr);
    auto offset = file_offset(image, ints->address);
    REQUIRE(offset.has_value());
    CHECK(*offset == ints->address - text->vaddr + text->file_offset);

    // The bytes at the file offset are the bytes the section headers place at the address.
    size_t size = static_cast<size_t>(std::min<uint64_t>(ints->size, 64));
    CHECK(read_at(path, *offset, size) == read_vaddr_via_sections(path, ints->address, size));
  }

  BinaryImage image = load_binary(kFixture);
  const LoadSegment &data = image.segments.back();
  // First and last file-backed bytes of a segment map; .bss and unmapped addresses do not.
  CHECK(file_offset(image, data.vaddr) == data.file_offset);
  CHECK(file_offset(image, data.vaddr + data.file_size - 1) ==
        data.file_offset + data.file_size - 1);
  CHECK_FALSE(file_offset(image, data.vaddr + data.file_size).has_value());
  CHECK_FALSE(file_offset(image, data.vaddr + data.mem_size - 1).has_value());
  CHECK_FALSE(file_offset(image, 0).has_value());
  CHECK_FALSE(file_offset(image, UINT64_MAX).has_value());

  BinaryImage empty;
  CHECK_FALSE(file_offset(empty, 0x401000).has_value());
}

TEST_CASE("stripped fixture: no symbols or DWARF, build info still found") {
  BinaryImage image = load_binary(kStripped);
  CHECK(image.functions.empty());
  CHECK_FALSE(image.has_dwarf);
  REQUIRE(image.buildinfo.has_value());
  CHECK(image.buildinfo->go_version == "go1.19.8");
  CHECK(image.buildinfo->main_path == "weave.test/fixture");
}

TEST_CASE("hello example is a Go binary too") {
  BinaryImage image = load_binary(kFixtures + "/hello");
  REQUIRE(image.buildinfo.has_value());
  CHECK(image.buildinfo->go_version == "go1.19.8");
  CHECK_FALSE(image.buildinfo->main_path.empty());
}

TEST_CASE("without section headers the build info is found by scanning the data segment") {
  TempDir tmp;
  SUBCASE("64-bit") {
    std::vector<uint8_t> bytes = read_file(kFixture);
    Elf64_Ehdr ehdr;
    std::memcpy(&ehdr, bytes.data(), sizeof ehdr);
    ehdr.e_shoff = 0;
    ehdr.e_shnum = 0;
    ehdr.e_shstrndx = 0;
    std::memcpy(bytes.data(), &ehdr, sizeof ehdr);
    std::string path = tmp.file("noshdr64");
    write_file(path, bytes);

    BinaryImage image = load_binary(path);
    CHECK(image.functions.empty());
    CHECK_FALSE(image.has_dwarf);
    CHECK(image.segments.size() == 3);
    CHECK(image.build_id == load_binary(kFixture).build_id); // PT_NOTE, not sections
    REQUIRE(image.buildinfo.has_value());
    CHECK(image.buildinfo->go_version == "go1.19.8");
    CHECK(image.buildinfo->main_path == "weave.test/fixture");
    CHECK(setting(*image.buildinfo, "GOARCH") == "amd64");
  }
  SUBCASE("32-bit") {
    std::vector<uint8_t> bytes = read_file(kFixture386);
    Elf32_Ehdr ehdr;
    std::memcpy(&ehdr, bytes.data(), sizeof ehdr);
    ehdr.e_shoff = 0;
    ehdr.e_shnum = 0;
    ehdr.e_shstrndx = 0;
    std::memcpy(bytes.data(), &ehdr, sizeof ehdr);
    std::string path = tmp.file("noshdr32");
    write_file(path, bytes);

    BinaryImage image = load_binary(path);
    CHECK(image.ptr_size == 4);
    REQUIRE(image.buildinfo.has_value());
    CHECK(image.buildinfo->go_version == "go1.19.8");
    CHECK(setting(*image.buildinfo, "GOARCH") == "386");
  }
}

TEST_CASE("parse_buildinfo: inline format (Go >= 1.18)") {
  BinaryImage image;
  std::vector<uint8_t> blob = buildinfo_header(8, 2);
  append_varint_string(blob, "go1.20.3");
  // Longer than 127 bytes, so the length takes two varint bytes.
  std::string lines = "path\texample.com/cmd/tool\n"
                      "mod\texample.com\tv1.2.3\th1:abc=\n"
                      "dep\tgolang.org/x/sys\tv0.1.0\th1:def=\n"
                      "build\t-compiler=gc\n"
                      "build\t-ldflags=\"-s -w -X main.v=1\"\n"
                      "build\t\"we=ird key\"=x=y\n"
                      "build\tvcs.revision=0123456789abcdef0123456789abcdef01234567\n";
  REQUIRE(lines.size() > 127);
  append_varint_string(blob, framed_modinfo(lines));
  blob.resize(blob.size() + 100, 0); // the rest of the data segment

  auto info = parse_buildinfo(blob, 8, image, "/nonexistent");
  REQUIRE(info.has_value());
  CHECK(info->go_version == "go1.20.3");
  CHECK(info->main_path == "example.com/cmd/tool");
  CHECK(info->module_path == "example.com");
  REQUIRE(info->settings.size() == 4);
  CHECK(info->settings[0] == std::pair<std::string, std::string>("-compiler", "gc"));
  CHECK(info->settings[1] == std::pair<std::string, std::string>("-ldflags", "-s -w -X main.v=1"));
  CHECK(info->settings[2] == std::pair<std::string, std::string>("we=ird key", "x=y"));
  CHECK(info->settings[3].first == "vcs.revision");

  SUBCASE("modinfo without sentinels is taken as is") {
    std::vector<uint8_t> plain = buildinfo_header(8, 2);
    append_varint_string(plain, "go1.18");
    append_varint_string(plain, "path\tx/y\n");
    auto parsed = parse_buildinfo(plain, 8, image, "/nonexistent");
    REQUIRE(parsed.has_value());
    CHECK(parsed->main_path == "x/y");
  }
  SUBCASE("truncated strings are rejected") {
    std::vector<uint8_t> cut(blob.begin(), blob.begin() + 32 + 1 + 4);
    CHECK_FALSE(parse_buildinfo(cut, 8, image, "/nonexistent").has_value());
    std::vector<uint8_t> endless = buildinfo_header(8, 2);
    endless.insert(endless.end(), 12, 0xff); // a varint that never ends
    CHECK_FALSE(parse_buildinfo(endless, 8, image, "/nonexistent").has_value());
  }
  SUBCASE("bad magic or short blob") {
    std::vector<uint8_t> bad = blob;
    bad[1] = 'X';
    CHECK_FALSE(parse_buildinfo(bad, 8, image, "/nonexistent").has_value());
    CHECK_FALSE(parse_buildinfo({}, 8, image, "/nonexistent").has_value());
    std::vector<uint8_t> short_blob(blob.begin(), blob.begin() + 20);
    CHECK_FALSE(parse_buildinfo(short_blob, 8, image, "/nonexistent").has_value());
  }
}

TEST_CASE("parse_buildinfo: pointer format (Go 1.13-1.17)") {
  TempDir tmp;
  // A fake data segment mapped at 0x1000 from file offset 0x200: two string headers, then the
  // strings they point to.
  const uint64_t base = 0x1000, file_base = 0x200;
  const std::string version = "go1.16.15";
  const std::string modinfo =
      framed_modinfo("path\told.example/cmd\nmod\told.example\t(devel)\t\n");

  for (int ptr_size : {8, 4}) {
    for (bool big_endian : {false, true}) {
      CAPTURE(ptr_size);
      CAPTURE(big_endian);
      auto put = big_endian ? put_be : put_le;
      std::vector<uint8_t> file(file_base + 0x400, 0xee);
      const uint64_t version_header = base, modinfo_header = base + 0x20;
      const uint64_t version_data = base + 0x40, modinfo_data = base + 0x80;
      put(file, file_base + 0x00, version_data, ptr_size);
      put(file, file_base + 0x00 + ptr_size, version.size(), ptr_size);
      put(file, file_base + 0x20, modinfo_data, ptr_size);
      put(file, file_base + 0x20 + ptr_size, modinfo.size(), ptr_size);
      std::memcpy(file.data() + file_base + 0x40, version.data(), version.size());
      std::memcpy(file.data() + file_base + 0x80, modinfo.data(), modinfo.size());
      std::string path = tmp.file("data");
      write_file(path, file);

      BinaryImage image;
      image.ptr_size = ptr_size;
      image.segments.push_back(LoadSegment{base, file_base, 0x400, 0x800, PF_R | PF_W});

      std::vector<uint8_t> blob =
          buildinfo_header(static_cast<uint8_t>(ptr_size), big_endian ? 1 : 0);
      put(blob, 16, version_header, ptr_size);
      put(blob, 16 + ptr_size, modinfo_header, ptr_size);
      auto info = parse_buildinfo(blob, ptr_size, image, path);
      REQUIRE(info.has_value());
      CHECK(info->go_version == version);
      CHECK(info->main_path == "old.example/cmd");
      CHECK(info->module_path == "old.example");
      CHECK(info->settings.empty());

      // A pointer outside every segment, or a string running past the file-backed part.
      std::vector<uint8_t> wild = blob;
      put(wild, 16, 0x9000, ptr_size);
      CHECK_FALSE(parse_buildinfo(wild, ptr_size, image, path).has_value());
      put(file, file_base + 0x00 + ptr_size, 0x1000, ptr_size);
      write_file(path, file);
      CHECK_FALSE(parse_buildinfo(blob, ptr_size, image, path).has_value());
      // The file is gone: no crash, no result.
      CHECK_FALSE(parse_buildinfo(blob, ptr_size, image, tmp.file("missing")).has_value());
    }
  }
}

TEST_CASE("parse_go_version") {
  auto check = [](const std::string &text, int major, int minor) {
    CAPTURE(text);
    GoVersion version = parse_go_version(text);
    CHECK(version.major == major);
    CHECK(version.minor == minor);
  };
  check("go1.19.8", 1, 19);
  check("go1.16", 1, 16);
  check("go1.21rc2", 1, 21);
  check("go1.22beta1", 1, 22);
  check("go1.21.0", 1, 21);
  check("go1.25.1 X:nodwarf5", 1, 25);
  check("devel go1.22-abc123 Tue Jan 2 15:04:05 2024 +0000", 1, 22);
  check("go1", 1, 0);
  check("", 0, 0);
  check("devel +abcdef", 0, 0);
  check("gopher", 0, 0);
  check("1.19.8", 0, 0);
}

TEST_CASE("errors carry stable ids and the path") {
  TempDir tmp;

  SUBCASE("missing file") {
    std::string path = tmp.file("does-not-exist");
    UserError error = expect_error([&] { load_binary(path); });
    CHECK(error.id == "binary-unreadable");
    CHECK(error.loc.file == path);
    CHECK(std::string(error.what()).find(std::strerror(ENOENT)) != std::string::npos);
  }
  SUBCASE("permission denied") {
    std::string path = tmp.file("unreadable");
    std::vector<uint8_t> bytes = read_file(kFixture);
    write_file(path, bytes);
    REQUIRE(chmod(path.c_str(), 0) == 0);
    if (geteuid() == 0) {
      // Root bypasses file permissions (CAP_DAC_OVERRIDE), so EACCES cannot be provoked here;
      // the open() failure path is the same one the missing-file case above exercises.
      MESSAGE("running as root: EACCES cannot be provoked, the file is readable");
      CHECK_NOTHROW(load_binary(path));
    } else {
      UserError error = expect_error([&] { load_binary(path); });
      CHECK(error.id == "binary-unreadable");
      CHECK(std::string(error.what()).find(std::strerror(EACCES)) != std::string::npos);
    }
  }
  SUBCASE("a directory") {
    UserError error = expect_error([&] { load_binary(tmp.path); });
    CHECK(error.id == "binary-unreadable");
    CHECK(std::string(error.what()).find("directory") != std::string::npos);
  }
  SUBCASE("an empty file") {
    std::string path = tmp.file("empty");
    write_file(path, "", 0);
    UserError error = expect_error([&] { load_binary(path); });
    CHECK(error.id == "not-elf");
    CHECK(std::string(error.what()).find("not an ELF file") != std::string::npos);
  }
  SUBCASE("a text file") {
    std::string path = tmp.file("text");
    std::string text = "#!/bin/sh\necho hello\n";
    write_file(path, text.data(), text.size());
    UserError error = expect_error([&] { load_binary(path); });
    CHECK(error.id == "not-elf");
    CHECK(error.loc.file == path);
  }
  SUBCASE("a truncated ELF file") {
    std::vector<uint8_t> bytes = read_file(kFixture);
    std::string path = tmp.file("truncated");
    write_file(path, bytes.data(), 100); // a whole ELF header, no program headers
    CHECK(expect_error([&] { load_binary(path); }).id == "not-elf");
    write_file(path, bytes.data(), 40); // half an ELF header
    CHECK(expect_error([&] { load_binary(path); }).id == "not-elf");
    write_file(path, bytes.data(), bytes.size() / 2); // segments past the end
    CHECK(expect_error([&] { load_binary(path); }).id == "not-elf");
  }
  SUBCASE("program headers past the end of the file") {
    std::vector<uint8_t> bytes = read_file(kFixture);
    Elf64_Ehdr ehdr;
    std::memcpy(&ehdr, bytes.data(), sizeof ehdr);
    ehdr.e_phoff = bytes.size() + 4096;
    std::memcpy(bytes.data(), &ehdr, sizeof ehdr);
    std::string path = tmp.file("badphdr");
    write_file(path, bytes);
    CHECK(expect_error([&] { load_binary(path); }).id == "not-elf");
  }
  SUBCASE("an ELF file that is not Go") {
    UserError error = expect_error([&] { load_binary("/bin/true"); });
    CHECK(error.id == "not-go");
    CHECK(std::string(error.what()).find("not a Go binary") != std::string::npos);
  }
  SUBCASE("an unsupported architecture") {
    std::vector<uint8_t> bytes = read_file(kFixture);
    Elf64_Ehdr ehdr;
    std::memcpy(&ehdr, bytes.data(), sizeof ehdr);
    ehdr.e_machine = EM_PPC64;
    std::memcpy(bytes.data(), &ehdr, sizeof ehdr);
    std::string path = tmp.file("ppc64");
    write_file(path, bytes);
    UserError error = expect_error([&] { load_binary(path); });
    CHECK(error.id == "unsupported-arch");
    CHECK(std::string(error.what()).find("PowerPC64") != std::string::npos);
    CHECK_FALSE(error.hint.empty());

    ehdr.e_machine = 0x4242;
    std::memcpy(bytes.data(), &ehdr, sizeof ehdr);
    write_file(path, bytes);
    error = expect_error([&] { load_binary(path); });
    CHECK(error.id == "unsupported-arch");
    CHECK(std::string(error.what()).find(std::to_string(0x4242)) != std::string::npos);
  }
}

TEST_CASE("damaged headers never crash the reader") {
  // Deterministic byte flips over the ELF header, program headers and notes (the first 4 KiB)
  // and truncations at many lengths: every outcome must be a BinaryImage or a UserError.
  TempDir tmp;
  const std::vector<uint8_t> original = read_file(kFixture);
  std::string path = tmp.file("fuzz");
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1103515245u + 12345u;
    return state >> 8;
  };
  int loaded = 0, rejected = 0;
  for (int round = 0; round < 150; ++round) {
    std::vector<uint8_t> bytes = original;
    int flips = 1 + static_cast<int>(next() % 4);
    for (int f = 0; f < flips; ++f)
      bytes[next() % 4096] = static_cast<uint8_t>(next());
    write_file(path, bytes);
    try {
      BinaryImage image = load_binary(path);
      for (const LoadSegment &seg : image.segments)
        (void)file_offset(image, seg.vaddr);
      ++loaded;
    } catch (const UserError &) {
      ++rejected;
    }
  }
  // The same over .go.buildinfo (the start of the data segment): lengths, varints, sentinels.
  const uint64_t data_offset = load_binary(kFixture).segments.back().file_offset;
  for (int round = 0; round < 100; ++round) {
    std::vector<uint8_t> bytes = original;
    int flips = 1 + static_cast<int>(next() % 3);
    for (int f = 0; f < flips; ++f)
      bytes[data_offset + 14 + next() % 0x110] = static_cast<uint8_t>(next());
    write_file(path, bytes);
    try {
      BinaryImage image = load_binary(path);
      ++loaded;
    } catch (const UserError &) {
      ++rejected;
    }
  }
  for (size_t size :
       {1ul, 4ul, 16ul, 52ul, 63ul, 64ul, 120ul, 232ul, 456ul, 4000ul, 4096ul, 100000ul}) {
    write_file(path, original.data(), size);
    try {
      load_binary(path);
      ++loaded;
    } catch (const UserError &) {
      ++rejected;
    }
  }
  MESSAGE("damaged files loaded: " << loaded << ", rejected: " << rejected);
  CHECK(loaded + rejected == 262);
}
