// Function bodies decoded with a real x86 decoder (Zydis): where the function returns, and where
// its body starts after Go's stack-growth check. Pure: bytes in, addresses out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weave {

struct CodeFacts {
  std::vector<uint64_t> returns; // address of every RET instruction
  // First instruction after the prologue's stack-bound check (`CMP SP, stackguard0(g); JBE
  // morestack`). A function whose stack must grow, or that is asked to yield, runs morestack and
  // jumps back to its entry, so a probe at the entry can fire twice for one call; a probe here
  // fires exactly once. Unset when the function has no such check (small leaf functions).
  std::optional<uint64_t> after_stack_check;
  std::string error; // set when the bytes could not be decoded: the function cannot be probed
};

// `code` holds the function's bytes, starting at `vaddr`, up to its end.
CodeFacts analyze_x86_64(const std::vector<uint8_t> &code, uint64_t vaddr);

// 386 (GOARCH=386): the same, decoded in 32-bit mode, where g.stackguard0 sits at 8(g).
CodeFacts analyze_i386(const std::vector<uint8_t> &code, uint64_t vaddr);

// arm64: fixed 4-byte words; a RET is exactly `ret x30` (0xd65f03c0, the only form Go emits), and
// literal-pool data never holds that word in Go code (GO-ABI.md §8.1). The stack check is the
// prologue cmd/internal/obj/arm64 emits: `MOVD 16(R28), R16` (g.stackguard0), a compare (after a
// SUB or SUBS/BLO for bigger frames), then a forward `BLS` to the morestack call; the body starts
// after that BLS. Two exact encodings are all it takes, so no arm64 decoder library is involved.
CodeFacts analyze_arm64(const std::vector<uint8_t> &code, uint64_t vaddr);

// What the amd64 instructions starting in [start, end) may write, for a line probe deciding whether
// code the compiler moved inside a line changes a value after the probe: registers by DWARF number
// (0-15; a CALL writes all but SP), stack bytes at SP + offset (stores based on SP), and
// `unknown_stack` for a store through BP, an index or any pointer (which may hold the address of a
// local of this frame), a CALL (whose callee may), or code that could not be decoded.
struct Writes {
  std::vector<int> regs;
  std::vector<std::pair<int64_t, int64_t>> stack; // [from, to) relative to SP
  bool unknown_stack = false;
};
Writes x86_64_writes(const std::vector<uint8_t> &code, uint64_t vaddr, uint64_t start, uint64_t end);
// The same for 386 code (32-bit mode), registers by the i386 DWARF numbers (0-7; SP is 4).
Writes i386_writes(const std::vector<uint8_t> &code, uint64_t vaddr, uint64_t start, uint64_t end);

// Every jump of an x86 (or arm64, below) function body (JMP and the conditional jumps, not CALL, which returns):
// (where it is, where it goes). `computed` when one jumps through a register or memory (a jump
// table), whose targets are unknown; `error` when the bytes could not be decoded.
struct Jumps {
  std::vector<std::pair<uint64_t, uint64_t>> jumps;
  std::vector<std::pair<uint64_t, uint64_t>> calls; // the direct CALLs (to an immediate target) likewise
  bool computed = false;
  std::string error;
};
Jumps x86_64_jumps(const std::vector<uint8_t> &code, uint64_t vaddr);
Jumps i386_jumps(const std::vector<uint8_t> &code, uint64_t vaddr);
// arm64: every 4-byte word decoded as an instruction (fixed width, so none is skipped; a literal-pool
// word that happens to look like a branch only adds a jump). B, B.cond, CBZ/CBNZ and TBZ/TBNZ are
// jumps, BL a call; a branch through a register other than a call or a return (BR, BRAA, ...) sets
// `computed`. BLR calls and RET are neither, as on x86.
Jumps arm64_jumps(const std::vector<uint8_t> &code, uint64_t vaddr);

} // namespace weave
