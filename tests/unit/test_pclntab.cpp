// Tests of the .gopclntab reader against the Go fixtures (built by tests/CMakeLists.txt with the
// machine's Go 1.19.8) and against Go's own tools run on them: the symbol table of the unstripped
// build, `go tool objdump` for RET sites, `go tool addr2line` for file:line, and the fixture
// tests/pclntab/inline, which prints what runtime.CallersFrames says about its own stack. Other Go
// versions are covered by tests/npm/test_npm_binaries.cpp on real esbuild releases.
#include "gobinary/binary.h"
#include "gobinary/pclntab.h"
#include "common/diag.h"
#include "debuginfo/debuginfo.h"
#include "debuginfo/locations.h"

#include <doctest/doctest.h>

#include "test_support.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

using namespace weave;
namespace fs = std::filesystem;
using namespace weave_test;

namespace {

const std::string kInline = kFixtures + "/pcln_inline";
const std::string kInlinePie = kFixtures + "/pcln_inline_pie";
const std::string kInlineStripped = kFixtures + "/pcln_inline_stripped";

std::string fmt_copy(const std::string &function, const std::string &physical, uint64_t pc) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%#llx", static_cast<unsigned long long>(pc));
  return function + " in " + physical + " at " + buffer;
}



std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::string hex(uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%#llx", static_cast<unsigned long long>(value));
  return buffer;
}

Pclntab load_table(const std::string &path) {
  BinaryImage image = load_binary(path);
  auto table = Pclntab::load(image);
  REQUIRE_MESSAGE(table.has_value(), path << " has no pclntab");
  return std::move(*table);
}

// A copy of an ELF file without section headers (e_shoff = e_shnum = e_shstrndx = 0), so
// everything must be found through the program headers.
std::string without_sections(const TempDir &tmp, const std::string &path, const std::string &name) {
  std::vector<uint8_t> bytes = read_file(path);
  REQUIRE(bytes.size() > sizeof(Elf64_Ehdr));
  if (bytes[EI_CLASS] == ELFCLASS64) {
    Elf64_Ehdr ehdr;
    std::memcpy(&ehdr, bytes.data(), sizeof ehdr);
    ehdr.e_shoff = 0;
    ehdr.e_shnum = 0;
    ehdr.e_shstrndx = 0;
    std::memcpy(bytes.data(), &ehdr, sizeof ehdr);
  } else {
    Elf32_Ehdr ehdr;
    std::memcpy(&ehdr, bytes.data(), sizeof ehdr);
    ehdr.e_shoff = 0;
    ehdr.e_shnum = 0;
    ehdr.e_shstrndx = 0;
    std::memcpy(bytes.data(), &ehdr, sizeof ehdr);
  }
  std::string out = tmp.file(name);
  write_file(out, bytes);
  return out;
}

// The file offset of the pclntab, through the PT_LOAD mapping.
uint64_t table_file_offset(const std::string &path, const Pclntab &table) {
  BinaryImage image = load_binary(path);
  auto offset = file_offset(image, table.address());
  REQUIRE(offset.has_value());
  return *offset;
}

std::string frames_text(const std::vector<Pclntab::Frame> &frames) {
  std::string out;
  for (const auto &f : frames)
    out += f.function + " " + f.file + ":" + std::to_string(f.line) +
           (f.inlined ? " (inlined)" : "") + "\n";
  return out;
}

} // namespace

TEST_CASE("wrapper funcIDs per Go version") {
  CHECK(Pclntab::wrapper_func_id_for({1, 13}) == -1);
  CHECK(Pclntab::wrapper_func_id_for({1, 15}) == 21);
  CHECK(Pclntab::wrapper_func_id_for({1, 16}) == 22);
  CHECK(Pclntab::wrapper_func_id_for({1, 17}) == 22);
  CHECK(Pclntab::wrapper_func_id_for({1, 18}) == 21);
  CHECK(Pclntab::wrapper_func_id_for({1, 19}) == 21); // GO-ABI.md §2.2 [V]
  CHECK(Pclntab::wrapper_func_id_for({1, 21}) == 21);
  CHECK(Pclntab::wrapper_func_id_for({1, 22}) == 22);
  CHECK(Pclntab::wrapper_func_id_for({1, 24}) == 22);
  CHECK(Pclntab::wrapper_func_id_for({1, 25}) == 23);
  CHECK(Pclntab::wrapper_func_id_for({1, 26}) == 23);
  CHECK(Pclntab::wrapper_func_id_for({0, 0}) == -1);
}

TEST_CASE("fixtures: header, location, text start, moduledata") {
  struct Case {
    std::string path;
    int quantum, ptr_size;
    std::string found_by, text_from;
  };
  for (const Case &c :
       {Case{kFixture, 1, 8, "section .gopclntab", "symbol runtime.text"},
        Case{kStripped, 1, 8, "section .gopclntab", "moduledata.text"},
        Case{kFixture386, 1, 4, "section .gopclntab", "symbol runtime.text"},
        Case{kFixtureArm64, 4, 8, "section .gopclntab", "symbol runtime.text"},
        Case{kInlinePie, 1, 8, "section .data.rel.ro.gopclntab", "symbol runtime.text"}}) {
    CAPTURE(c.path);
    Pclntab table = load_table(c.path);
    CHECK(table.magic() == 0xfffffff0u); // Go 1.18–1.19
    CHECK(table.quantum() == c.quantum);
    CHECK(table.ptr_size() == c.ptr_size);
    CHECK(std::string(table.found_by()) == c.found_by);
    CHECK(std::string(table.text_start_from()) == c.text_from);
    CHECK(table.go_version().minor == 19);
    CHECK(table.wrapper_func_id() == 21);
    CHECK(table.moduledata() != 0);
    CHECK(table.gofunc() != 0);
    REQUIRE(!table.functions().empty());
    CHECK(std::is_sorted(
        table.functions().begin(), table.functions().end(),
        [](const PclnFunction &a, const PclnFunction &b) { return a.entry < b.entry; }));
    for (size_t i = 0; i + 1 < table.functions().size(); ++i)
      REQUIRE(table.functions()[i].end == table.functions()[i + 1].entry);
  }
  // With symbols, the text start from runtime.text, moduledata.text and the header agree.
  BinaryImage image = load_binary(kFixture);
  Pclntab table = load_table(kFixture);
  for (const ElfSymbol &sym : image.functions)
    if (sym.name == "runtime.text")
      CHECK(table.text_start() == sym.address);
  // runtime.firstmoduledata (an STT_OBJECT, so not in image.functions): go tool nm knows it.
  std::string nm = run(std::string(WEAVE_GO_TOOL) + " tool nm '" + kFixture + "' | grep ' runtime.firstmoduledata$'");
  CHECK(std::stoull(nm, nullptr, 16) == table.moduledata());
  CHECK(load_table(kStripped).text_start() == table.text_start());
}

TEST_CASE("the function list of a stripped build equals the symbols of the unstripped build") {
  // .symtab names an ABI0 body "x.abi0" when an ABIInternal "x" exists (GO-ABI.md §2.2); the
  // pclntab has no suffix and lists both copies. Everything else must match name for name and
  // address for address, in both directions.
  struct Pair {
    std::string unstripped, stripped;
  };
  for (const Pair &p : {Pair{kFixture, kStripped}, Pair{kInline, kInlineStripped},
                        Pair{kFixture386, kFixture386}, Pair{kFixtureArm64, kFixtureArm64}}) {
    CAPTURE(p.stripped);
    BinaryImage image = load_binary(p.unstripped);
    Pclntab table = load_table(p.stripped);
    std::set<std::pair<std::string, uint64_t>> from_symbols, from_table;
    size_t abi0 = 0;
    size_t collapsed = 0;
    for (const ElfSymbol &sym : image.functions) {
      std::string name = sym.name;
      if (name.size() > 5 && name.compare(name.size() - 5, 5, ".abi0") == 0) {
        name.resize(name.size() - 5);
        ++abi0;
      }
      // The table writes everything from the first '[' to the last ']' as "[...]" (go1.19
      // cmd/link/internal/ld/pcln.go nameParts): "type..eq.[2]runtime.Frame" is
      // "type..eq.[...]runtime.Frame" there.
      size_t open = name.find('['), close = name.rfind(']');
      if (open != std::string::npos && close != std::string::npos && close > open) {
        name = name.substr(0, open) + "[...]" + name.substr(close + 1);
        ++collapsed;
      }
      from_symbols.emplace(name, sym.address);
    }
    for (const PclnFunction &fn : table.functions())
      from_table.emplace(fn.name, fn.entry);
    std::vector<std::pair<std::string, uint64_t>> only_symbols, only_table;
    std::set_difference(from_symbols.begin(), from_symbols.end(), from_table.begin(),
                        from_table.end(), std::back_inserter(only_symbols));
    std::set_difference(from_table.begin(), from_table.end(), from_symbols.begin(),
                        from_symbols.end(), std::back_inserter(only_table));
    // The linker's own text markers are symbols, not functions of the table.
    std::erase_if(only_symbols, [](const auto &s) {
      return s.first == "runtime.text" || s.first == "runtime.etext" || s.first == "go.buildid" ||
             s.first == "go:buildid";
    });
    std::string report;
    for (const auto &[name, addr] : only_symbols)
      report += "only in .symtab: " + name + " " + hex(addr) + "\n";
    for (const auto &[name, addr] : only_table)
      report += "only in .gopclntab: " + name + " " + hex(addr) + "\n";
    CHECK_MESSAGE(report.empty(), report);
    CHECK(from_table.size() == table.functions().size()); // no (name, entry) twice
    MESSAGE(p.stripped << ": " << table.functions().size() << " functions agree with the "
                       << image.functions.size() << " STT_FUNC symbols (" << abi0
                       << " named .abi0, " << collapsed << " with [...])");
    CHECK(table.functions().size() > 1000);
  }
}

TEST_CASE("find prefers the real body over its ABI wrapper; duplicates are exactly wrapper pairs") {
  for (const std::string &path : {kFixture, kFixtureArm64}) {
    CAPTURE(path);
    Pclntab table = load_table(path);
    auto copies = table.find_all("runtime.asmcgocall");
    REQUIRE(copies.size() == 2);
    const PclnFunction *best = table.find("runtime.asmcgocall");
    REQUIRE(best != nullptr);
    CHECK(best->func_id == 2);    // funcID_asmcgocall (go1.19 runtime/symtab.go)
    CHECK((best->flag & 4) != 0); // FuncFlagAsm: the assembly body
    // Every name that appears twice is one body plus one wrapper (funcID 21 in Go 1.19).
    std::map<std::string, std::vector<const PclnFunction *>> by_name;
    for (const PclnFunction &fn : table.functions())
      by_name[fn.name].push_back(&fn);
    size_t pairs = 0;
    for (const auto &entry : by_name) {
      // Named, not a structured binding: clang 14 (the asan preset) cannot capture one in CAPTURE.
      const auto &name = entry.first;
      const auto &fns = entry.second;
      if (fns.size() == 1)
        continue;
      CAPTURE(name);
      REQUIRE(fns.size() == 2);
      // The ABI wrapper: funcID wrapper, code at <autogenerated>:1.
      auto generated = [&](const PclnFunction *fn) {
        auto frames = table.symbolize(fn->entry, true);
        return frames.back().file == "<autogenerated>" && frames.back().line == 1;
      };
      const PclnFunction *wrapper = generated(fns[0]) ? fns[0] : fns[1];
      const PclnFunction *body = wrapper == fns[0] ? fns[1] : fns[0];
      CHECK(generated(wrapper));
      CHECK_FALSE(generated(body));
      CHECK(wrapper->func_id == table.wrapper_func_id());
      CHECK(table.find(name) == body);
      // Only reflect.callMethod/callReflect are wrappers by name (for panic/recover).
      if (body->func_id == table.wrapper_func_id())
        CHECK((name == "reflect.callMethod" || name == "reflect.callReflect"));
      ++pairs;
    }
    MESSAGE(path << ": " << pairs << " names with an ABI wrapper copy");
    CHECK(pairs > 10);
    CHECK(table.find("main.NoSuchFunction") == nullptr);
    CHECK(table.find("") == nullptr);
  }
  // 386 has no register ABI, so no ABI wrappers.
  Pclntab table386 = load_table(kFixture386);
  CHECK(table386.find_all("runtime.asmcgocall").size() == 1);
}

TEST_CASE("args is the ABI's argument area size") {
  // By hand from GO-ABI.md §1.3 (ABIInternal: registers, spill area for register arguments; 386:
  // ABI0, every argument and result on the stack, int64/float64 4-aligned):
  //   Ints(int8,int16,int32,int64,uint8,uint16,uint32,uint64,int,uint,uintptr,bool) int
  //     amd64: 9 in registers; j,k,ok on the stack = 24; spill a..i = 40          -> 64
  //     arm64: all 12 in registers; spill a..ok = 57, aligned                      -> 64
  //     386:   a0 b2 c4 d8 e16 f18 g20 h24 i32 j36 k40 ok44, result 48            -> 52
  //   SpillOver(8 ints, s string, y int) int
  //     amd64: s on the stack (16), spill 8 ints + y = 72                          -> 88
  //     arm64: all in registers, spill 64 + 16 + 8                                  -> 88
  //     386:   32 + 8 + 4, result 4                                                 -> 48
  //   Strings(s, empty, long string) int: spill 48; 386: 24 + 4                    -> 48 / 28
  //   Divmod(a, b int) (q, r int, desc string): spill 16; 386: 8 + 4 + 4 + 8      -> 16 / 24
  //   Floats(f float64, n int) float64: spill 16; 386: f0 n8 result12            -> 16 / 20
  struct Expect {
    const char *name;
    int amd64, arm64, i386;
  };
  const Expect expected[] = {{"main.Ints", 64, 64, 52},
                             {"main.SpillOver", 88, 88, 48},
                             {"main.Strings", 48, 48, 28},
                             {"main.Divmod", 16, 16, 24},
                             {"main.Floats", 16, 16, 20}};
  Pclntab amd64 = load_table(kStripped), arm64 = load_table(kFixtureArm64),
          i386 = load_table(kFixture386);
  for (const Expect &e : expected) {
    CAPTURE(e.name);
    REQUIRE(amd64.find(e.name) != nullptr);
    REQUIRE(arm64.find(e.name) != nullptr);
    REQUIRE(i386.find(e.name) != nullptr);
    CHECK(amd64.find(e.name)->args == e.amd64);
    CHECK(arm64.find(e.name)->args == e.arm64);
    CHECK(i386.find(e.name)->args == e.i386);
  }
  MESSAGE("main.Ints args: amd64 " << amd64.find("main.Ints")->args << ", arm64 "
                                   << arm64.find("main.Ints")->args << ", 386 "
                                   << i386.find("main.Ints")->args);
}

TEST_CASE("sp_delta is 0 at entry and at every RET that go tool objdump shows") {
  for (const std::string &path : {kFixture, kFixtureArm64, kFixture386}) {
    CAPTURE(path);
    BinaryImage image = load_binary(path);
    Pclntab table = load_table(path);
    // All main.* functions, so that functions with frames are covered too (main.Ints has none).
    std::string out = run(std::string(WEAVE_GO_TOOL) + " tool objdump -s '^main\\.' '" + path + "'");
    std::string current;
    size_t rets = 0, ints_rets = 0;
    std::map<std::string, int32_t> max_delta;
    for (const std::string &line : lines(out)) {
      if (line.rfind("TEXT ", 0) == 0) {
        current = line.substr(5, line.find("(SB)") - 5);
        continue;
      }
      // "  main.go:43\t\t0x4a3b60\t\tc3\t\t\tRET\t\t\t"
      std::vector<std::string> fields;
      std::istringstream in(line);
      for (std::string f; std::getline(in, f, '\t');)
        if (!f.empty())
          fields.push_back(f);
      if (fields.size() < 4 || fields[1].rfind("0x", 0) != 0)
        continue;
      uint64_t pc = std::stoull(fields[1], nullptr, 16);
      const PclnFunction *fn = table.at_pc(pc);
      REQUIRE(fn != nullptr);
      CHECK(fn->name == current);
      auto delta = table.sp_delta(*fn, pc);
      REQUIRE(delta.has_value());
      max_delta[current] = std::max(max_delta[current], *delta);
      if (fields[3].rfind("RET", 0) != 0)
        continue;
      CAPTURE(current);
      CAPTURE(hex(pc));
      CHECK(*delta == 0);
      // The bytes are a return: C3 (amd64, 386), d65f03c0 (arm64).
      std::vector<uint8_t> code = read_bytes(image, pc, image.arch == Arch::Arm64 ? 4 : 1);
      if (image.arch == Arch::Arm64)
        CHECK((code[0] | code[1] << 8 | code[2] << 16 | static_cast<uint32_t>(code[3]) << 24) ==
              0xd65f03c0u);
      else
        CHECK(code[0] == 0xc3);
      ++rets;
      if (current == "main.Ints")
        ++ints_rets;
    }
    CHECK(ints_rets >= 1);
    CHECK(rets > 20);
    const PclnFunction *ints = table.find("main.Ints");
    CHECK(table.sp_delta(*ints, ints->entry) == 0);
    CHECK_FALSE(table.sp_delta(*ints, ints->end).has_value());
    CHECK_FALSE(table.sp_delta(*ints, ints->entry - 1).has_value());
    // Functions with frames push something: main.main does.
    CHECK(max_delta["main.main"] > 0);
    MESSAGE(path << ": " << rets << " RETs in main.* (" << ints_rets
                 << " in main.Ints), sp_delta 0 at each; main.main's frame is "
                 << max_delta["main.main"] << " bytes");
  }
}

TEST_CASE("symbolize agrees with go tool addr2line") {
  // addr2line (debug/gosym) prints the physical function and the innermost file:line, without
  // inline expansion: compare with the last frame's name and the first frame's position.
  for (const std::string &path : {kFixture, kStripped, kFixtureArm64, kFixture386, kInline}) {
    CAPTURE(path);
    Pclntab table = load_table(path);
    const auto &fns = table.functions();
    std::vector<uint64_t> pcs;
    uint32_t state = 2024;
    auto next = [&] {
      state = state * 1103515245u + 12345u;
      return state >> 8;
    };
    // Every 8th function's entry, middle and last byte, then random PCs over the whole text, plus
    // addresses before and after it.
    for (size_t i = 0; i < fns.size(); i += 8) {
      pcs.push_back(fns[i].entry);
      pcs.push_back(fns[i].entry + (fns[i].end - fns[i].entry) / 2);
      pcs.push_back(fns[i].end - 1);
    }
    uint64_t lo = fns.front().entry, span = fns.back().end - lo;
    for (int i = 0; i < 300; ++i)
      pcs.push_back(lo + (static_cast<uint64_t>(next()) * 977 + next()) % span);
    pcs.push_back(lo - 1);
    pcs.push_back(fns.back().end);

    TempDir tmp;
    std::string input;
    for (uint64_t pc : pcs)
      input += hex(pc) + "\n";
    std::string in_path = tmp.file("pcs");
    write_file(in_path, std::vector<uint8_t>(input.begin(), input.end()));
    std::vector<std::string> out = lines(run(std::string(WEAVE_GO_TOOL) + " tool addr2line '" + path + "' < " + in_path));
    REQUIRE(out.size() == 2 * pcs.size());

    size_t agree = 0, inlined = 0;
    for (size_t i = 0; i < pcs.size(); ++i) {
      CAPTURE(hex(pcs[i]));
      std::string name = out[2 * i], position = out[2 * i + 1];
      auto frames = table.symbolize(pcs[i], true);
      if (frames.empty()) {
        CHECK(name == "?");
        CHECK(position == "?:0");
        agree += name == "?";
        continue;
      }
      if (frames.size() > 1)
        ++inlined;
      std::string ours = frames.front().file + ":" + std::to_string(frames.front().line);
      // No position (padding after a function's code, where its tables end): the runtime says
      // "?", 0 (funcline1); debug/gosym, under addr2line, says "", -1.
      if (ours == "?:0" && position == ":-1")
        position = ours;
      CHECK(frames.back().function == name);
      CHECK(ours == position);
      agree += frames.back().function == name && ours == position;
    }
    MESSAGE(path << ": symbolize agrees with go tool addr2line on " << agree << " of " << pcs.size()
                 << " PCs (" << inlined << " inside inlined calls)");
    CHECK(agree == pcs.size());
    CHECK(inlined > 20);
  }
}

namespace {

// One "stack" block of the inline fixture's output.
struct Stack {
  std::string label;
  uint64_t self = 0; // runtime entry of main.report
  std::vector<uint64_t> pcs;
  struct Printed {
    uint64_t pc;
    std::string function, file;
    int line;
  };
  std::vector<Printed> frames;
};

std::vector<Stack> run_inline_fixture(const std::string &path) {
  std::vector<Stack> stacks;
  for (const std::string &line : lines(run("'" + path + "'"))) {
    if (line.rfind("stack ", 0) == 0) {
      stacks.push_back(Stack{line.substr(6)});
    } else if (line.rfind("self ", 0) == 0) {
      stacks.back().self = std::stoull(line.substr(5), nullptr, 16);
    } else if (line.rfind("pc ", 0) == 0) {
      stacks.back().pcs.push_back(std::stoull(line.substr(3), nullptr, 16));
    } else if (line.rfind("frame ", 0) == 0) {
      // "frame 0x482f32 main.middle.func1\tweave.test/pclninline/main.go\t56"
      std::string rest = line.substr(6);
      size_t space = rest.find(' ');
      size_t tab1 = rest.find('\t'), tab2 = rest.rfind('\t');
      REQUIRE(space != std::string::npos);
      REQUIRE(tab1 != tab2);
      stacks.back().frames.push_back(Stack::Printed{
          std::stoull(rest.substr(0, space), nullptr, 16), rest.substr(space + 1, tab1 - space - 1),
          rest.substr(tab1 + 1, tab2 - tab1 - 1), std::stoi(rest.substr(tab2 + 1))});
    }
  }
  return stacks;
}

} // namespace

TEST_CASE("symbolize matches runtime.CallersFrames, inlined frames included") {
  for (const std::string &path : {kInline, kInlinePie, kInlineStripped}) {
    CAPTURE(path);
    Pclntab table = load_table(path);
    std::vector<Stack> stacks = run_inline_fixture(path);
    REQUIRE(stacks.size() == 2);
    const PclnFunction *report = table.find("main.report");
    REQUIRE(report != nullptr);
    size_t compared = 0, inlined = 0, deepest = 0;
    for (const Stack &stack : stacks) {
      CAPTURE(stack.label);
      // A PIE runs at a random base; the runtime's own address of main.report gives the bias.
      const uint64_t bias = stack.self - report->entry;
      if (path != kInlinePie)
        CHECK(bias == 0);
      REQUIRE(stack.pcs.size() == stack.frames.size());
      // runtime.Callers lists one PC per frame, inlined ones included (a PC in the caller's body
      // for each); CallersFrames looks each up at pc-1. symbolize() of a physical frame's PC
      // yields that frame and all the inlined frames above it, in the same order.
      for (size_t i = 0; i < stack.pcs.size();) {
        auto chain = table.symbolize(stack.pcs[i] - 1 - bias);
        CAPTURE(frames_text(chain));
        REQUIRE(!chain.empty());
        REQUIRE(i + chain.size() <= stack.frames.size());
        for (size_t k = 0; k < chain.size(); ++k) {
          const Stack::Printed &printed = stack.frames[i + k];
          CAPTURE(printed.function);
          CHECK(chain[k].function == printed.function);
          CHECK(chain[k].file == printed.file);
          CHECK(chain[k].line == printed.line);
          CHECK(chain[k].inlined == (k + 1 < chain.size()));
          CHECK(printed.pc == stack.pcs[i + k] - 1);
          // The runtime's PC for an inlined caller frame is entry + parentPc: its own lookup
          // starts with that frame.
          auto own = table.symbolize(stack.pcs[i + k] - 1 - bias);
          REQUIRE(!own.empty());
          CHECK(own.front().function == printed.function);
          ++compared;
        }
        inlined += chain.size() - 1;
        deepest = std::max(deepest, chain.size());
        i += chain.size();
      }
    }
    MESSAGE(path << ": " << compared << " frames equal runtime.CallersFrames' (" << inlined
                 << " inlined; deepest chain " << deepest << " frames)");
    CHECK(inlined >= 5); // middle.func1 + sub.Leaf; scale + pick + choose; outer
    CHECK(deepest >= 4); // scale -> pick -> choose -> deep
  }
}

TEST_CASE("without section headers the table is found by scanning the segments") {
  TempDir tmp;
  for (const std::string &path : {kInline, kInlinePie, kFixture386, kFixtureArm64}) {
    CAPTURE(path);
    std::string bare = without_sections(tmp, path, fs::path(path).filename().string());
    BinaryImage image = load_binary(bare);
    REQUIRE(image.buildinfo.has_value()); // a PIE keeps it in its second writable segment
    CHECK(image.buildinfo->go_version == "go1.19.8");
    Pclntab scanned = load_table(bare);
    Pclntab original = load_table(path);
    CHECK(std::string(scanned.found_by()) == "segment scan");
    CHECK(scanned.address() == original.address());
    CHECK(std::string(scanned.text_start_from()) == "moduledata.text");
    CHECK(scanned.text_start() == original.text_start());
    CHECK(scanned.moduledata() == original.moduledata());
    CHECK(scanned.gofunc() == original.gofunc());
    REQUIRE(scanned.functions().size() == original.functions().size());
    for (size_t i = 0; i < scanned.functions().size(); ++i) {
      const PclnFunction &a = scanned.functions()[i], &b = original.functions()[i];
      REQUIRE(a.name == b.name);
      REQUIRE(a.entry == b.entry);
      REQUIRE(a.end == b.end);
      REQUIRE(a.args == b.args);
    }
    for (size_t i = 0; i < original.functions().size(); i += 37) {
      uint64_t pc = original.functions()[i].entry + 1;
      CHECK(frames_text(scanned.symbolize(pc)) == frames_text(original.symbolize(pc)));
    }
  }
}

TEST_CASE("a PIE whose pointers are 0 in the file: the RELATIVE relocations' addends") {
  // An external linker may leave a relocated pointer's bytes 0 and put the value only in the
  // R_X86_64_RELATIVE addend. Go's internal linker writes both, so zero moduledata's words on disk
  // (and drop the section headers and symbols): moduledata, its text and gofunc must still come
  // from .rela via PT_DYNAMIC.
  TempDir tmp;
  Pclntab original = load_table(kInlinePie);
  REQUIRE(original.moduledata() != 0);
  std::string bare = without_sections(tmp, kInlinePie, "pie-zeroed");
  BinaryImage image = load_binary(bare);
  auto md_offset = file_offset(image, original.moduledata());
  REQUIRE(md_offset.has_value());
  std::vector<uint8_t> bytes = read_file(bare);
  std::fill(bytes.begin() + static_cast<long>(*md_offset),
            bytes.begin() + static_cast<long>(*md_offset + 48 * 8), 0);
  write_file(bare, bytes);

  Pclntab table = load_table(bare);
  CHECK(table.moduledata() == original.moduledata());
  CHECK(std::string(table.text_start_from()) == "moduledata.text");
  CHECK(table.text_start() == original.text_start());
  CHECK(table.gofunc() == original.gofunc());
  const PclnFunction *deep = table.find("main.deep");
  REQUIRE(deep != nullptr);
  bool inlined = false;
  for (uint64_t pc = deep->entry; pc < deep->end; ++pc)
    inlined |= table.symbolize(pc).size() >= 4; // scale -> pick -> choose -> deep
  CHECK(inlined);
}

TEST_CASE("the Go 1.2-1.15 layout (0xfffffffb): names, entries, argument sizes") {
  // No toolchain here writes it, so a table is built by hand in the fixture's .gopclntab
  // (go1.15 runtime/symtab.go, debug/gosym go12 layout): header {magic, 0, 0, quantum, ptrsize,
  // nfunctab uintptr}, functab {entry, funcoff uintptr} x n, end PC, filetab offset u32; _func
  // {entry uintptr, nameoff int32, args int32, ...}, offsets from the table's start.
  TempDir tmp;
  Pclntab good = load_table(kStripped);
  const uint64_t table_offset = table_file_offset(kStripped, good);
  std::vector<uint8_t> bytes = read_file(kStripped);
  std::vector<uint8_t> t(0x200, 0);
  auto put = [&](size_t at, uint64_t value, int size) {
    for (int i = 0; i < size; ++i)
      t[at + i] = static_cast<uint8_t>(value >> (8 * i));
  };
  const uint64_t f0 = good.functions()[10].entry, f1 = good.functions()[11].entry,
                 end = good.functions()[11].end;
  put(0, 0xfffffffb, 4);
  t[6] = 1;
  t[7] = 8;
  put(8, 2, 8);                                            // nfunctab
  put(16, f0, 8), put(24, 0x80, 8);                        // functab[0]
  put(32, f1, 8), put(40, 0xc0, 8);                        // functab[1]
  put(48, end, 8);                                         // end PC
  put(56, 0x1f0, 4);                                       // filetab offset
  put(0x80, f0, 8), put(0x88, 0x100, 4), put(0x8c, 24, 4); // _func: entry, nameoff, args
  put(0xc0, f1, 8), put(0xc8, 0x110, 4), put(0xcc, 40, 4);
  std::memcpy(t.data() + 0x100, "main.first", 11);
  std::memcpy(t.data() + 0x110, "main.second", 12);
  std::copy(t.begin(), t.end(), bytes.begin() + static_cast<long>(table_offset));
  std::string path = tmp.file("go12");
  write_file(path, bytes);

  for (const std::string &file : {path, without_sections(tmp, path, "go12-bare")}) {
    CAPTURE(file);
    Pclntab table = load_table(file);
    CHECK(table.magic() == 0xfffffffbu);
    REQUIRE(table.functions().size() == 2);
    const PclnFunction &a = table.functions()[0], &b = table.functions()[1];
    CHECK(a.name == "main.first");
    CHECK(a.entry == f0);
    CHECK(a.end == f1);
    CHECK(a.args == 24);
    CHECK(b.name == "main.second");
    CHECK(b.entry == f1);
    CHECK(b.end == end);
    CHECK(b.args == 40);
    CHECK(table.find("main.second") == &b);
    CHECK(table.at_pc(f1 + 1) == &b);
    CHECK(table.text_start() == 0);
    // The pc-value tables sit in a _func whose layout changed too often in 1.2-1.15 to find.
    CHECK_FALSE(table.sp_delta(a, f0).has_value());
    auto frames = table.symbolize(f0 + 1);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].function == "main.first");
    CHECK(frames[0].file == "?");
  }
}

TEST_CASE("a binary without a table, and damaged tables") {
  TempDir tmp;
  Pclntab good = load_table(kStripped);
  const uint64_t table_offset = table_file_offset(kStripped, good);
  const std::vector<uint8_t> original = read_file(kStripped);
  std::string path = tmp.file("damaged");

  auto expect_bad = [&](std::vector<uint8_t> bytes, const std::string &needle) {
    write_file(path, bytes);
    BinaryImage image = load_binary(path);
    try {
      Pclntab::load(image);
      FAIL("no error for a damaged table; wanted: " << needle);
    } catch (const UserError &error) {
      CHECK(error.id == "bad-pclntab");
      CHECK_MESSAGE(std::string(error.what()).find(needle) != std::string::npos, error.what());
      CHECK(error.loc.file == path);
    }
  };
  auto put32 = [](std::vector<uint8_t> &bytes, uint64_t at, uint32_t value) {
    for (int i = 0; i < 4; ++i)
      bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
  };

  SUBCASE("no table at all: nullopt") {
    std::string bare = without_sections(tmp, kStripped, "bare");
    std::vector<uint8_t> bytes = read_file(bare);
    put32(bytes, table_offset, 0); // the magic
    write_file(bare, bytes);
    BinaryImage image = load_binary(bare);
    CHECK_FALSE(Pclntab::load(image).has_value());
  }
  SUBCASE("a bad magic in the section") {
    std::vector<uint8_t> bytes = original;
    put32(bytes, table_offset, 0xfffffff5);
    expect_bad(bytes, "bad header");
  }
  SUBCASE("an impossible function count") {
    std::vector<uint8_t> bytes = original;
    put32(bytes, table_offset + 8, 0xfffffff0);
    expect_bad(bytes, "do not fit");
  }
  SUBCASE("an offset past the end") {
    std::vector<uint8_t> bytes = original;
    put32(bytes, table_offset + 8 + 3 * 8, 0x7fffffff); // funcnameOffset
    expect_bad(bytes, "funcnametab offset");
  }
  SUBCASE("an index entry that disagrees with its record") {
    std::vector<uint8_t> bytes = original;
    uint64_t functab = table_offset + good.functions()[0].offset_in_table; // first _func
    put32(bytes, functab, 0x12345);                                        // its entryoff
    expect_bad(bytes, "the index says entry");
  }
}

TEST_CASE("damaged tables never crash the reader") {
  // Deterministic byte flips all over the table (header, function index, _func records, pc-value
  // tables, names, file table) and in the inline trees outside it: every outcome must be a table
  // that answers (possibly wrongly) or a UserError, never a crash or a hang.
  TempDir tmp;
  Pclntab good = load_table(kStripped);
  const uint64_t table_offset = table_file_offset(kStripped, good);
  const std::vector<uint8_t> original = read_file(kStripped);
  std::string path = tmp.file("fuzz");
  uint32_t state = 777;
  auto next = [&] {
    state = state * 1103515245u + 12345u;
    return state >> 8;
  };
  std::vector<uint64_t> pcs;
  for (size_t i = 0; i < good.functions().size(); i += 13)
    pcs.push_back(good.functions()[i].entry +
                  (good.functions()[i].end - good.functions()[i].entry) / 3);
  int loaded = 0, rejected = 0, failed_later = 0;
  for (int round = 0; round < 250; ++round) {
    std::vector<uint8_t> bytes = original;
    int flips = 1 + static_cast<int>(next() % 8);
    for (int f = 0; f < flips; ++f) {
      // Mostly the first pages (header, index, names), sometimes anywhere in the table.
      uint64_t span = next() % 4 == 0 ? good.size() : std::min<uint64_t>(good.size(), 0x4000);
      bytes[table_offset + next() % span] = static_cast<uint8_t>(next());
    }
    write_file(path, bytes);
    BinaryImage image = load_binary(path);
    std::optional<Pclntab> table;
    try {
      table = Pclntab::load(image);
    } catch (const UserError &error) {
      CHECK(error.id == "bad-pclntab");
      ++rejected;
      continue;
    }
    ++loaded;
    try {
      if (!table)
        continue;
      for (uint64_t pc : pcs) {
        (void)table->symbolize(pc);
        if (const PclnFunction *fn = table->at_pc(pc))
          (void)table->sp_delta(*fn, pc);
      }
      (void)table->find("main.Ints");
    } catch (const UserError &error) {
      CHECK(error.id == "bad-pclntab");
      ++failed_later;
    }
  }
  MESSAGE("damaged tables: " << loaded << " loaded (" << failed_later
                             << " of them reported damage when read), " << rejected
                             << " rejected at load");
  CHECK(loaded + rejected == 250);
  CHECK(rejected > 0);
}

TEST_CASE("runtime type descriptors name every type DWARF lists, as DWARF names it") {
  // DWARF's go_runtime_type attributes are the oracle: for each, the descriptor read from the binary
  // alone has DWARF's kind, size and name. The stripped and PIE builds of the same program are read
  // at the same link addresses (the PIE through its relocations), with no DWARF to help.
  struct Case {
    std::string path, without_dwarf;
  };
  for (const Case &c : {Case{kFixture, kStripped}, Case{kFixture386, ""}, Case{kFixtureArm64, ""},
                        Case{kFixtures + "/fixture_pie", ""}, Case{kInlinePie, ""}}) {
    CAPTURE(c.path);
    BinaryImage image = load_binary(c.path);
    Pclntab table = load_table(c.path);
    REQUIRE(image.types_base);
    CHECK(table.types_start() == *image.types_base);
    REQUIRE(table.types_end() > table.types_start());
    auto debug = DebugInfo::open(c.path, image.ptr_size);
    REQUIRE(debug);
    std::optional<Pclntab> stripped;
    if (!c.without_dwarf.empty())
      stripped = load_table(c.without_dwarf);
    size_t types = 0, same = 0;
    std::map<uint64_t, size_t> differ; // by kind: unnamed structs, funcs, interfaces spell packages short
    std::set<uint64_t> starts;
    size_t absolute = 0;
    for (const RuntimeType &t : debug->runtime_types()) {
      uint64_t at = *image.types_base + t.address;
      if (at >= table.types_end() && t.address >= table.types_start() && t.address < table.types_end()) {
        // The linker's own base types (uintptr, unsafe.Pointer) carry an absolute address where
        // every other type has an offset from runtime.types.
        at = t.address;
        ++absolute;
      }
      starts.insert(at);
      CAPTURE(t.name);
      CAPTURE(hex(at));
      auto got = table.type_at(at);
      REQUIRE(got);
      CHECK((t.kind == 0 || got->kind == t.kind)); // the linker's own pointer types have no go_kind
      CHECK((t.size == 0 || got->size == t.size)); // DWARF gives pointers no byte_size
      ++types;
      if (got->name == t.name) {
        ++same;
      } else {
        // Only structs, funcs, interfaces and maps (and types made of them) may be spelled the
        // runtime's way, with package names instead of paths; everything else is named as DWARF does.
        bool composite = t.name.find("struct {") != std::string::npos || t.name.find("func(") != std::string::npos ||
                         t.name.find("interface {") != std::string::npos || t.name.find("map[") != std::string::npos ||
                         t.name.rfind("noalg.", 0) == 0; // map buckets: the compiler's own, never in an interface
        CHECK_MESSAGE(composite, got->name << " != DWARF's " << t.name);
        ++differ[t.kind];
      }
      if (stripped) {
        auto s = stripped->type_at(at);
        REQUIRE(s);
        CHECK(s->name == got->name);
        CHECK(s->kind == got->kind);
      }
    }
    CHECK(types > 300);
    CHECK(absolute <= 2);
    CHECK(same * 10 > types * 9);
    std::string by_kind;
    for (auto [kind, n] : differ)
      by_kind += " kind " + std::to_string(kind) + ": " + std::to_string(n);
    MESSAGE(c.path << ": " << types << " descriptors, " << same << " named exactly as DWARF; spelled the "
                   << "runtime's way:" << (by_kind.empty() ? " none" : by_kind));

    // Addresses that are not where a descriptor starts are never named: inside one, before the
    // types, at their end, a function's code.
    size_t inside = 0;
    for (uint64_t at : starts)
      for (uint64_t delta : {uint64_t{1}, uint64_t{4}, uint64_t(image.ptr_size), uint64_t(2 * image.ptr_size),
                             uint64_t(3 * image.ptr_size)})
        if (!starts.count(at + delta)) {
          CAPTURE(hex(at + delta));
          CHECK_FALSE(table.type_at(at + delta));
          ++inside;
        }
    CHECK(inside > 1000);
    CHECK_FALSE(table.type_at(table.types_start() - static_cast<uint64_t>(image.ptr_size)));
    CHECK_FALSE(table.type_at(table.types_end()));
    CHECK_FALSE(table.type_at(table.functions().front().entry));
    CHECK_FALSE(table.type_at(0));
  }
}

TEST_CASE("inline_sites: every inlined frame the runtime reports, under the function holding it") {
  for (const std::string &path : {kInline, kInlinePie, kInlineStripped}) {
    CAPTURE(path);
    Pclntab table = load_table(path);
    std::map<std::string, std::vector<std::string>> sites = table.inline_sites();
    std::vector<Stack> stacks = run_inline_fixture(path);
    REQUIRE(stacks.size() == 2);
    const uint64_t bias = stacks[0].self - table.find("main.report")->entry;
    size_t checked = 0;
    for (const Stack &stack : stacks)
      for (size_t i = 0; i < stack.pcs.size(); ++i) {
        // The runtime's frames (symbolize equals them: the test above) name each inlined callee
        // and, last, the physical function its copy lives in.
        auto chain = table.symbolize(stack.pcs[i] - 1 - bias);
        for (size_t k = 0; k + 1 < chain.size(); ++k) {
          CAPTURE(chain[k].function);
          const std::vector<std::string> &into = sites[chain[k].function];
          CHECK(std::find(into.begin(), into.end(), chain.back().function) != into.end());
          ++checked;
        }
      }
    CHECK(checked >= 5);
    // Inlined into their only caller, they have no body; main.report (noinline) is never inlined.
    for (const char *callee : {"main.scale", "main.pick", "main.choose"}) {
      CAPTURE(callee);
      CHECK(table.find(callee) == nullptr);
      CHECK(sites[callee] == std::vector<std::string>{"main.deep"});
    }
    CHECK(sites.count("main.report") == 0);
    // Each holder is listed once, however many times it inlines the callee.
    for (const auto &[callee, into] : sites)
      CHECK(std::set<std::string>(into.begin(), into.end()).size() == into.size());
  }
}

// The inline tree and DWARF describe inlined copies independently (the linker writes one from the
// PC tables, the compiler the other): each DW_TAG_inlined_subroutine's lowest address must be the
// first PC the inline tree gives the same copy, in the same function, or weave would read DWARF's
// parameter locations at an instruction they were not written for. Copies in autogenerated
// wrappers have no DWARF entries (Go writes none for them); those are counted apart.
TEST_CASE("inlined copies: the inline tree's first PCs are DWARF's low_pc, copy for copy") {
  for (const std::string &path : {kFixtures + "/inlined", kInline, kFixtures + "/compile_amd64"}) {
    CAPTURE(path);
    BinaryImage image = load_binary(path);
    auto table = Pclntab::load(image);
    REQUIRE(table);
    std::vector<Pclntab::InlinedCopy> copies = table->inlined_copies();
    std::vector<InlinedCopyLocations> dwarf = read_inlined_locations(path, nullptr);
    std::set<std::tuple<std::string, std::string, uint64_t>> tree;
    for (const auto &c : copies)
      tree.insert({c.function, c.physical, c.first_pc});
    size_t matched = 0, generic = 0;
    std::vector<std::string> missing;
    for (const auto &d : dwarf) {
      if (tree.count({d.function, d.physical, d.low_pc})) {
        ++matched;
      } else if (d.function.find('[') != std::string::npos || d.physical.find('[') != std::string::npos) {
        ++generic; // .gopclntab writes shape instances as "F[...]", DWARF spells the shape
      } else if (missing.size() < 5) {
        missing.push_back(fmt_copy(d.function, d.physical, d.low_pc));
      }
    }
    size_t unmatched = dwarf.size() - matched - generic;
    MESSAGE(path << ": " << copies.size() << " copies in the inline tree, " << dwarf.size()
                 << " in DWARF, " << matched << " at the same first PC, " << generic
                 << " generic (named differently), " << unmatched << " not found");
    CHECK(matched > 0);
    std::string first_missing = missing.empty() ? std::string() : missing.front();
    CHECK_MESSAGE(unmatched == 0, first_missing);
  }
}

TEST_CASE("inline records whose parent PC lies inside themselves: Go 1.21+ package initializers") {
  // tests/e2e/initinline built by Go 1.26 (WEAVE_GO_NEWER): sem's package-level variables are
  // initialised through kv.Key.Int, which the compiler inlines into sem.init with every record's
  // parent PC 0, and the init's first instructions are the first copy's own. Go's own unwinder
  // (runtime/symtabinl.go) would go round that record forever; it is read as a copy whose call site
  // was not recorded.
  const std::string path = kFixtures + "/initinline";
  if (!fs::exists(path)) {
    MESSAGE("skipped: no fixture built by a Go newer than the pinned one (WEAVE_GO_NEWER)");
    return;
  }
  BinaryImage image = load_binary(path);
  std::optional<Pclntab> table = Pclntab::load(image);
  REQUIRE(table);
  const PclnFunction *init = table->find("initinline/sem.init");
  REQUIRE(init);
  // The init's first instruction: the constructor's code, then the init, whose position there is
  // not known (the record's parent PC is the instruction itself).
  std::vector<Pclntab::Frame> frames = table->symbolize(init->entry, true);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0].function == "initinline/kv.Key.Int");
  CHECK(frames[0].inlined);
  CHECK(frames[1].function == "initinline/sem.init");
  CHECK_FALSE(frames[1].inlined);
  CHECK(frames[1].file == "?");
  std::vector<Pclntab::Problem> problems;
  auto copies = table->inlined_copies([](std::string_view name) { return name == "initinline/kv.Key.Int"; },
                                      &problems);
  CHECK(problems.empty());
  std::set<uint64_t> in_init;
  size_t in_main = 0;
  for (const Pclntab::InlinedCopy &copy : copies) {
    CAPTURE(fmt_copy(copy.function, copy.physical, copy.first_pc));
    if (copy.physical == "initinline/sem.init") {
      CHECK_FALSE(copy.call_site_known);
      CHECK(copy.caller == "initinline/sem.init"); // not another copy of the constructor
      CHECK(copy.file == "?");
      CHECK(copy.first_pc >= init->entry);
      CHECK(copy.first_pc < init->end);
      in_init.insert(copy.first_pc);
    } else {
      CHECK(copy.call_site_known);
      in_main += copy.physical == "main.main";
    }
  }
  CHECK(in_init.size() == 3); // Ok, Canceled, Unknown: three copies, each at its own instructions
  CHECK(in_init.count(init->entry) == 1);
  CHECK(in_main == 1);
  problems.clear();
  auto sites = table->inline_sites(&problems);
  CHECK(problems.empty());
  const auto &into = sites["initinline/kv.Key.Int"];
  CHECK(std::find(into.begin(), into.end(), "initinline/sem.init") != into.end());
}

TEST_CASE("read on demand: every function, frame and SP delta as the whole load gives, from a small part of the file") {
  // The tracer reads the table on demand (Pclntab::Reading::OnDemand): each lookup reads the few
  // blocks it needs. Its answers must be the whole load's, and what it reads must stay a small part
  // of the file. Lookups go through at_pc only (the tracer's path); functions() would list all.
  for (const std::string &path : {kFixture, kStripped, kFixtureArm64, kFixture386, kInline, kInlinePie}) {
    CAPTURE(path);
    BinaryImage image = load_binary(path);
    auto whole = Pclntab::load(image);
    auto lazy = Pclntab::load(image, Pclntab::Reading::OnDemand);
    REQUIRE(whole.has_value());
    REQUIRE(lazy.has_value());
    CHECK(lazy->address() == whole->address());
    CHECK(lazy->text_start() == whole->text_start());
    CHECK(lazy->moduledata() == whole->moduledata());
    CHECK(lazy->gofunc() == whole->gofunc());
    CHECK(lazy->wrapper_func_id() == whole->wrapper_func_id());
    CHECK(lazy->types_start() == whole->types_start());
    const uint64_t file_size = fs::file_size(path);
    const uint64_t at_load = lazy->bytes_read();
    size_t frames = 0, inlined = 0;
    for (const PclnFunction &fn : whole->functions()) {
      for (uint64_t pc : {fn.entry, fn.entry + (fn.end - fn.entry) / 2, fn.end - 1}) {
        const PclnFunction *found = lazy->at_pc(pc);
        REQUIRE(found != nullptr);
        CHECK(found->name == fn.name);
        CHECK(found->entry == fn.entry);
        CHECK(found->end == fn.end);
        CHECK(found->args == fn.args);
        CHECK(found->func_id == fn.func_id);
        CHECK(found->flag == fn.flag);
        CHECK(lazy->sp_delta(*found, pc) == whole->sp_delta(fn, pc));
        auto a = lazy->symbolize(pc, true), b = whole->symbolize(pc, true);
        REQUIRE(frames_text(a) == frames_text(b));
        frames += a.size();
        inlined += a.size() - 1;
      }
    }
    CHECK(lazy->at_pc(whole->functions().front().entry - 1) == nullptr);
    CHECK(lazy->at_pc(whole->functions().back().end) == nullptr);
    MESSAGE(path << ": " << frames << " frames (" << inlined << " inlined) equal; read " << at_load
                 << " bytes to load, " << lazy->bytes_read() << " after every lookup, of " << file_size
                 << " (the whole load: " << whole->bytes_read() << ")");
    CHECK(inlined > 20);
    // Loading reads the header, the index, the records the wrapper id needs (and without a
    // moduledata symbol, the data segment it is found in); every lookup of every function, the
    // table's parts they use. Both well under the file, which the whole load reads most of.
    CHECK(at_load < file_size / 2);
    CHECK(lazy->bytes_read() < file_size / 2);
    CHECK(whole->bytes_read() > file_size / 2);
  }
}

TEST_CASE("read on demand: one lookup reads a few blocks, and a truncated file is an error, not a crash") {
  const std::string path = kFixture;
  BinaryImage image = load_binary(path);
  auto whole = Pclntab::load(image);
  REQUIRE(whole.has_value());
  const PclnFunction *target = whole->find("main.main");
  REQUIRE(target != nullptr);
  auto lazy = Pclntab::load(image, Pclntab::Reading::OnDemand);
  REQUIRE(lazy.has_value());
  const uint64_t before = lazy->bytes_read();
  auto frames = lazy->symbolize(target->entry + 1);
  REQUIRE(!frames.empty());
  CHECK(frames.back().function == "main.main");
  // The binary search over the index, the record, its name, pcfile, pcln, the file name: blocks.
  CHECK(lazy->bytes_read() - before <= 40 * 4096);

  // The same table, the file cut short after it was opened: lookups past the cut fail cleanly.
  TempDir tmp;
  std::string copy = tmp.file("cut");
  std::vector<uint8_t> bytes = read_file(path);
  write_file(copy, bytes);
  BinaryImage copied = load_binary(copy);
  auto opened = Pclntab::load(copied, Pclntab::Reading::OnDemand);
  REQUIRE(opened.has_value());
  REQUIRE(truncate(copy.c_str(), static_cast<off_t>(table_file_offset(copy, *opened) + 64)) == 0);
  size_t failed = 0;
  for (size_t i = 0; i < whole->functions().size(); i += 7) {
    try {
      (void)opened->symbolize(whole->functions()[i].entry + 1);
    } catch (const UserError &error) {
      CHECK(error.id == "bad-pclntab");
      CHECK_MESSAGE(std::string(error.what()).find("cannot be read from the file") != std::string::npos, error.what());
      ++failed;
    }
  }
  CHECK(failed > 0);
}
