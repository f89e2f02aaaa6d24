// The x86 decoding that places probes: every RET of every function in the fixture, checked against
// `go tool objdump`, and the end of the stack-growth check that makes entry probes fire once.
#include "binary/binary.h"
#include "debuginfo/debuginfo.h"
#include "disasm/disasm.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <regex>
#include <set>

using namespace weave;

namespace {

// RET addresses per function, as Go's own disassembler prints them.
std::map<std::string, std::set<uint64_t>> objdump_returns(const std::string &binary) {
  std::map<std::string, std::set<uint64_t>> out;
  std::string cmd = "go tool objdump -s '^main\\.' " + binary;
  FILE *pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  char line[4096];
  std::string function;
  static const std::regex text_line(R"(^TEXT (\S+)\(SB\))");
  static const std::regex insn_line(R"(^\s+\S+:\d+\s+0x([0-9a-f]+)\s+[0-9a-f]+\s+(\S+))");
  std::cmatch m;
  while (fgets(line, sizeof line, pipe)) {
    if (std::regex_search(line, m, text_line)) {
      function = m[1];
      out[function];
    } else if (std::regex_search(line, m, insn_line) && m[2] == "RET") {
      out[function].insert(std::stoull(m[1], nullptr, 16));
    }
  }
  pclose(pipe);
  return out;
}

} // namespace

TEST_CASE("RETs found by decoding agree with go tool objdump for every main.* function") {
  std::string path = std::string(WEAVE_FIXTURE_DIR) + "/fixture";
  BinaryImage image = load_binary(path);
  auto debug = DebugInfo::open(path, image.ptr_size);
  auto expected = objdump_returns(path);
  REQUIRE(expected.size() >= 10);
  size_t functions = 0, returns = 0;
  for (const auto &[name, rets] : expected) {
    const GoFunction *fn = debug->find_function(name);
    REQUIRE_MESSAGE(fn, name);
    CodeFacts facts = analyze_x86_64(read_bytes(image, fn->low_pc, fn->high_pc - fn->low_pc), fn->low_pc);
    CAPTURE(name);
    CHECK(facts.error.empty());
    CHECK(std::set<uint64_t>(facts.returns.begin(), facts.returns.end()) == rets);
    ++functions;
    returns += rets.size();
  }
  MESSAGE(functions << " functions, " << returns << " RETs agree with go tool objdump");
}

TEST_CASE("the entry probe goes after the stack-growth check when there is one") {
  std::string path = std::string(WEAVE_FIXTURE_DIR) + "/fixture";
  BinaryImage image = load_binary(path);
  auto debug = DebugInfo::open(path, image.ptr_size);
  auto facts_of = [&](const char *name) {
    const GoFunction *fn = debug->find_function(name);
    REQUIRE(fn);
    return std::make_pair(fn->low_pc,
                          analyze_x86_64(read_bytes(image, fn->low_pc, fn->high_pc - fn->low_pc), fn->low_pc));
  };
  // Deep has a large frame, so its prologue checks g.stackguard0 against SP minus the frame:
  // LEAQ -n(SP), R12 (8 bytes); CMPQ R12, 16(R14) (4); JBE rel32 (6).
  auto [deep_entry, deep] = facts_of("main.Deep");
  REQUIRE(deep.after_stack_check);
  CHECK(*deep.after_stack_check > deep_entry);
  CHECK(*deep.after_stack_check == deep_entry + 18);
  // SpillOver is a leaf without a frame: no check, the probe stays at the entry.
  auto [spill_entry, spill] = facts_of("main.SpillOver");
  CHECK_FALSE(spill.after_stack_check);
  CHECK(spill.returns.size() == 1);
}

TEST_CASE("hand-made code: RET forms, and bytes that only look like RET") {
  // MOV RBX, RAX (48 89 c3) contains a c3 byte that is not a RET; then RET imm16, then RET.
  std::vector<uint8_t> code = {0x48, 0x89, 0xc3, 0xc2, 0x08, 0x00, 0xc3};
  CodeFacts facts = analyze_x86_64(code, 0x1000);
  CHECK(facts.error.empty());
  CHECK(facts.returns == std::vector<uint64_t>{0x1003, 0x1006});
  // A truncated instruction cannot be decoded: the function is refused, not guessed.
  CodeFacts bad = analyze_x86_64({0x48, 0x8b}, 0x2000);
  CHECK_FALSE(bad.error.empty());
  CHECK(bad.returns.empty());
}
