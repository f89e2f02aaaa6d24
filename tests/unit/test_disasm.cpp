// The decoding that places probes: every RET of every function in the fixture, checked against
// `go tool objdump`, and the end of the stack-growth check that makes entry probes fire once (x86
// with Zydis; arm64 by its two fixed encodings, over every function of the arm64 fixture).
#include "gobinary/binary.h"
#include "debuginfo/debuginfo.h"
#include "disasm/disasm.h"

#include <doctest/doctest.h>

#include <algorithm>

#include <cstdio>
#include <map>
#include <optional>
#include <regex>
#include <set>

using namespace weave;

namespace {

struct Instruction {
  uint64_t address;
  std::string text; // "MOVD 16(R28), R16", "RET"
};

// Every instruction of the functions matching `pattern`, as Go's own disassembler prints them.
std::map<std::string, std::vector<Instruction>> objdump(const std::string &binary, const std::string &pattern) {
  std::map<std::string, std::vector<Instruction>> out;
  std::string cmd = std::string(WEAVE_GO_TOOL) + " tool objdump -s '" + pattern + "' " + binary;
  FILE *pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe);
  char line[4096];
  std::string function;
  static const std::regex text_line(R"(^TEXT (.+)\(SB\))"); // names may hold spaces: [2]interface {}
  static const std::regex insn_line(R"(^\s+\S+:\d+\s+0x([0-9a-f]+)\s+[0-9a-f]+\s+(.*\S))");
  std::cmatch m;
  while (fgets(line, sizeof line, pipe)) {
    if (std::regex_search(line, m, text_line)) {
      function = m[1];
      out[function];
    } else if (std::regex_search(line, m, insn_line)) {
      out[function].push_back({std::stoull(m[1], nullptr, 16), m[2]});
    }
  }
  pclose(pipe);
  return out;
}

// RET addresses per function.
std::map<std::string, std::set<uint64_t>> objdump_returns(const std::string &binary) {
  std::map<std::string, std::set<uint64_t>> out;
  for (const auto &[function, insns] : objdump(binary, "^main\\.")) {
    out[function];
    for (const Instruction &insn : insns)
      if (insn.text == "RET")
        out[function].insert(insn.address);
  }
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
  for (const auto &entry : expected) {
    // Named, not a structured binding: clang 14 (the asan preset) cannot capture one in CAPTURE.
    const auto &name = entry.first;
    const auto &rets = entry.second;
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

TEST_CASE("arm64: the stack check's end and every RET agree with go tool objdump, all functions") {
  std::string path = std::string(WEAVE_FIXTURE_DIR) + "/fixture_arm64";
  BinaryImage image = load_binary(path);
  auto listing = objdump(path, ".");
  REQUIRE(listing.size() > 1000);
  size_t compared = 0, checked = 0, returns = 0;
  for (const ElfSymbol &fn : image.functions) {
    auto it = listing.find(fn.name);
    if (it == listing.end() || it->second.empty() || fn.size == 0)
      continue;
    const std::vector<Instruction> &insns = it->second;
    // objdump's view: the body starts after the BLS that follows the stackguard load.
    std::optional<uint64_t> want;
    if (insns[0].text == "MOVD 16(R28), R16")
      for (size_t i = 1; i < insns.size() && i < 8; ++i)
        if (insns[i].text.rfind("BLS ", 0) == 0) {
          want = insns[i].address + 4;
          break;
        }
    std::set<uint64_t> want_returns;
    for (const Instruction &insn : insns)
      if (insn.text == "RET")
        want_returns.insert(insn.address);
    CodeFacts facts = analyze_arm64(read_bytes(image, fn.address, fn.size), fn.address);
    CAPTURE(fn.name);
    CHECK(facts.after_stack_check == want);
    CHECK(std::set<uint64_t>(facts.returns.begin(), facts.returns.end()) == want_returns);
    ++compared;
    checked += want.has_value();
    returns += want_returns.size();
  }
  CHECK(compared > 1000);
  CHECK(checked > compared / 2); // most functions check their stack; NOSPLIT ones do not
  MESSAGE(compared << " arm64 functions: " << checked << " stack checks and " << returns
                   << " RETs agree with go tool objdump");
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

TEST_CASE("386 and amd64: the stack check's end agrees with go tool objdump, all functions") {
  // objdump's view: the body starts after the first JBE that follows the compare of SP, or of a
  // register just computed from SP, with g.stackguard0 (0x8(CX) on 386, 0x10(R14) or 0x10(CX) on amd64).
  struct Case {
    std::string file;
    bool i386;
  };
  for (const Case &c : {Case{"fixture_386", true}, Case{"fixture", false}}) {
    std::string path = std::string(WEAVE_FIXTURE_DIR) + "/" + c.file;
    CAPTURE(path);
    BinaryImage image = load_binary(path);
    auto listing = objdump(path, ".");
    REQUIRE(listing.size() > 1000);
    // Go's objdump has printed the operands in either order over the versions.
    static const std::regex compare(R"(^CMP[LQ] (?:0x(8|10)\((?:CX|R14)\), (SP|[A-Z0-9]+)|(SP|[A-Z0-9]+), 0x(8|10)\((?:CX|R14)\))$)");
    static const std::regex sp_copy(R"(^(LEA[LQ] -?0x[0-9a-f]+\(SP\)|MOV[LQ] SP), ([A-Z0-9]+)$)");
    size_t compared = 0, checked = 0;
    for (const ElfSymbol &fn : image.functions) {
      auto it = listing.find(fn.name);
      if (it == listing.end() || it->second.empty() || fn.size == 0)
        continue;
      const std::vector<Instruction> &insns = it->second;
      std::optional<uint64_t> want;
      std::string derived = "SP";
      std::smatch m;
      for (size_t i = 0; i + 2 < insns.size() && i < 8 && !want; ++i) {
        if (std::regex_match(insns[i].text, m, sp_copy))
          derived = m[2];
        if (std::regex_match(insns[i].text, m, compare)) {
          std::string guard = m[1].matched ? m[1].str() : m[4].str();
          std::string reg = m[1].matched ? m[2].str() : m[3].str();
          if (guard == (c.i386 ? "8" : "10") && (reg == "SP" || reg == derived) &&
              insns[i + 1].text.rfind("JBE ", 0) == 0)
            want = insns[i + 2].address;
        }
      }
      std::vector<uint8_t> code = read_bytes(image, fn.address, fn.size);
      CodeFacts facts = c.i386 ? analyze_i386(code, fn.address) : analyze_x86_64(code, fn.address);
      if (!facts.error.empty())
        continue;
      CAPTURE(fn.name);
      CAPTURE(want.value_or(0));
      CAPTURE(facts.after_stack_check.value_or(0));
      CHECK(facts.after_stack_check == want);
      ++compared;
      checked += want.has_value();
    }
    CHECK(compared > 1000);
    CHECK(checked > compared / 2);
    MESSAGE(c.file << ": " << compared << " functions, " << checked << " stack checks agree with go tool objdump");
  }
}

TEST_CASE("what moved code writes: registers by DWARF number, SP-relative slots, stores through pointers") {
  // LEAQ (CX)(CX*2), DX; MOVQ DX, 0x20(SP)
  std::vector<uint8_t> code = {0x48, 0x8d, 0x14, 0x49, 0x48, 0x89, 0x54, 0x24, 0x20};
  Writes w = x86_64_writes(code, 0x1000, 0x1000, 0x1000 + code.size());
  CHECK(w.regs == std::vector<int>{1}); // RDX is DWARF 1
  REQUIRE(w.stack.size() == 1);
  CHECK(w.stack[0] == std::pair<int64_t, int64_t>{0x20, 0x28});
  CHECK(!w.unknown_stack);
  // Only the range asked for: the store alone writes no register.
  CHECK(x86_64_writes(code, 0x1000, 0x1004, 0x1009).regs.empty());
  // MOVQ CX, 0(AX): through a pointer, which may hold a local's address.
  std::vector<uint8_t> store = {0x48, 0x89, 0x08};
  CHECK(x86_64_writes(store, 0x1000, 0x1000, 0x1003).unknown_stack);
  // CALL: every register but SP, and any slot.
  std::vector<uint8_t> call = {0xe8, 0, 0, 0, 0};
  Writes c = x86_64_writes(call, 0x1000, 0x1000, 0x1005);
  CHECK(c.regs.size() == 15);
  CHECK(std::find(c.regs.begin(), c.regs.end(), 7) == c.regs.end());
  CHECK(c.unknown_stack);
  // 386: MOVL DX, 0x10(SP) writes a slot; LEAL (CX)(CX*2), DX writes EDX, DWARF 2 there.
  std::vector<uint8_t> x86 = {0x8d, 0x14, 0x49, 0x89, 0x54, 0x24, 0x10};
  Writes w32 = i386_writes(x86, 0x1000, 0x1000, 0x1007);
  CHECK(w32.regs == std::vector<int>{2});
  REQUIRE(w32.stack.size() == 1);
  CHECK(w32.stack[0] == std::pair<int64_t, int64_t>{0x10, 0x14});
  // A range outside the code: everything may be written.
  CHECK(x86_64_writes(code, 0x1000, 0x2000, 0x2004).unknown_stack);
}

TEST_CASE("arm64: jumps and calls of runtime.newproc.func1 (Go 1.19) as go tool objdump shows them") {
  // The closure's words from Go 1.19's arm64 build of tests/e2e/spawn, at 0x4d950; what Go's
  // disassembler says of each branch in the comments.
  const uint32_t words[] = {
      0xf9400b90, 0xeb3063ff, 0x540002c9, // MOVD 16(R28), R16; CMP R16, RSP; BLS 22(PC)
      0xf81d0ffe, 0xf81f83fd, 0xd10023fd, 0xf9400b41, 0xf9400f42, 0xf9400740,
      0x94000013,                         // CALL runtime.newproc1(SB) at 0x4d9c0
      0xf9401b83, 0xf9406863, 0xaa0003e1, 0xb24003e2, 0xaa0303e0,
      0x9400115d,                         // CALL runtime.runqput(SB) at 0x51f00
      0x90000b7b, 0x911fb77b, 0x39400363,
      0x36000043,                         // TBZ $0, R3, 2(PC)
      0x97ffefd8,                         // CALL runtime.wakep(SB) at 0x49900
      0xa97ffbfd, 0x9100c3ff, 0xd65f03c0, // LDP; ADD; RET
      0xaa1e03e3, 0x94008183,             // MOVD R30, R3; CALL runtime.morestack.abi0(SB) at 0x6dfc0
      0x17ffffe6,                         // JMP runtime.newproc.func1(SB)
      0x00000000};
  std::vector<uint8_t> code;
  for (uint32_t w : words)
    for (int b = 0; b < 4; ++b)
      code.push_back(static_cast<uint8_t>(w >> (8 * b)));
  Jumps j = arm64_jumps(code, 0x4d950);
  CHECK(j.error.empty());
  CHECK_FALSE(j.computed);
  using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;
  CHECK(j.calls == Pairs{{0x4d974, 0x4d9c0}, {0x4d98c, 0x51f00}, {0x4d9a0, 0x49900}, {0x4d9b4, 0x6dfc0}});
  CHECK(j.jumps == Pairs{{0x4d958, 0x4d9b0}, {0x4d99c, 0x4d9a4}, {0x4d9b8, 0x4d950}});
  // CBZ/CBNZ forward and back; BLR is a call through a register and RET a return: neither is a
  // jump. BR is a jump whose target is unknown.
  auto one = [](uint32_t w) {
    std::vector<uint8_t> c;
    for (int b = 0; b < 4; ++b)
      c.push_back(static_cast<uint8_t>(w >> (8 * b)));
    return arm64_jumps(c, 0x1000);
  };
  CHECK(one(0xb4000040).jumps == Pairs{{0x1000, 0x1008}}); // cbz x0, +8
  CHECK(one(0x35ffffe1).jumps == Pairs{{0x1000, 0xffc}});  // cbnz w1, -4
  CHECK(one(0xb7f80041).jumps == Pairs{{0x1000, 0x1008}}); // tbnz x1, #63, +8
  Jumps blr = one(0xd63f0060), ret = one(0xd65f03c0), br = one(0xd61f0060);
  CHECK((blr.jumps.empty() && blr.calls.empty() && !blr.computed));
  CHECK((ret.jumps.empty() && !ret.computed));
  CHECK(br.computed);
  CHECK_FALSE(arm64_jumps({0x00, 0x00}, 0x1000).error.empty()); // not whole instructions
}
