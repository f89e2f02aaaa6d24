// Unwinding a copy of a goroutine's stack with .gopclntab's SP-delta (pcsp) tables: the way the Go
// runtime's own traceback finds each caller, so it needs no frame pointers (386 has none) and no
// symbols or DWARF (stripped binaries keep .gopclntab).
//
// The input is what a probe with stack_mode: window records (struct weave_stack_window): the PC and
// SP where the probe fired, arm64's link register, and `len` bytes of the stack copied from SP. At
// a PC in a function, pcsp says how far SP is below the function's entry SP (its "delta"); then
//   amd64, 386: the return address is at SP + delta and the caller's SP is SP + delta + ptr_size
//   arm64:      the return address is in LR while the innermost frame has pushed nothing (delta 0),
//               else at SP (the prologue stores LR at the new SP); the caller's SP is SP + delta
// (GO-ABI.md; Go's runtime/traceback.go unwinder reads frames the same way). The walk stops where
// the runtime's does, at a top frame (runtime.goexit, mstart, rt0_go: funcFlag TopFrame) or a
// frame that switches stacks (funcFlag SPWrite: systemstack, mcall, asmcgocall; not
// runtime.cgocallback, whose frame on the goroutine's stack returns to where the goroutine called
// into C, so that a callback from C unwinds as runtime.Callers sees it), and otherwise
// says why it stopped: the next word lies past the copied window, or a PC has no .gopclntab entry
// (C code, a damaged stack). Never a guessed frame.
#pragma once

#include "gobinary/binary.h"
#include "gobinary/pclntab.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weave {

struct StackWindow {
  uint64_t pc = 0; // where the probe fired, as the process sees it
  uint64_t sp = 0;
  uint64_t lr = 0; // arm64's link register (0 elsewhere)
  const uint8_t *bytes = nullptr; // the stack from sp
  uint32_t len = 0;               // bytes of it read
};

struct UnwoundStack {
  // The return addresses of the callers, innermost first, as the process sees them (what a
  // frame-pointer walk records, and what Symbolizer::frames takes).
  std::vector<uint64_t> return_addresses;
  enum class End {
    Top,       // reached the goroutine's (or thread's) first frame: the stack is complete
    Depth,     // max_frames reached
    Switch,    // a frame that switches stacks (systemstack, mcall, asmcgocall...): not crossed
    Truncated, // the next return address lies past the copied window
    Unknown,   // a PC .gopclntab has no function or no SP delta for
  };
  End end = End::Top;
  std::string function; // Switch, Unknown: the function (or "0x...") the walk stopped at
};

// Unwinds up to max_frames callers. `bias` is the binary's load bias in the process (a PIE's, else
// 0). Reads only inside window.bytes[0, len).
UnwoundStack unwind_go_stack(const Pclntab &pcln, Arch arch, uint64_t bias, const StackWindow &window,
                             uint32_t max_frames);

} // namespace weave
