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
#include <functional>
#include <string>
#include <vector>

namespace weave {

struct StackWindow {
  uint64_t pc = 0; // where the probe fired, as the process sees it
  uint64_t sp = 0;
  uint64_t lr = 0; // arm64's link register (0 elsewhere)
  const uint8_t *bytes = nullptr; // the stack from sp
  uint32_t len = 0;               // bytes of it read
  // cgo binaries: the thread's own stack (g0's) from the SP runtime.cgocallback saved, where the C
  // frames between a callback into Go and the cgo call below it are (thread_len 0: none).
  // When the probe ran on g0 (through systemstack), the goroutine's stack instead, from where
  // systemstack left it: its sched.pc (nonzero only then) and sched.sp.
  uint64_t thread_pc = 0;
  uint64_t thread_sp = 0;
  const uint8_t *thread_bytes = nullptr;
  uint32_t thread_len = 0;
};

// A C frame's registers, by DWARF register number (x86-64: rsp 7, return address 16; arm64: sp 31,
// x30 the return address; 386: esp 4, return address 8), and which of them are known.
struct CFrameRegs {
  static constexpr int kCount = 34;
  uint64_t value[kCount] = {};
  uint64_t known = 0; // bit r: value[r] is the register's value in this frame
  uint64_t pc = 0;    // a return address (the frame's call is at pc - 1)
  uint64_t sp = 0;
  bool has(int r) const { return r >= 0 && r < kCount && (known >> r & 1); }
  void set(int r, uint64_t v) {
    if (r >= 0 && r < kCount) {
      value[r] = v;
      known |= uint64_t{1} << r;
    }
  }
};

// Steps from a C frame to its caller with the code's call frame information (CFI): what the walk
// asks for every PC .gopclntab has no function for. runtime/cframes.h has the libdw one.
class CUnwinder {
public:
  virtual ~CUnwinder() = default;
  enum class Step {
    Ok,        // regs is the caller's frame now
    Top,       // the CFI says there is no caller (the thread's first frame)
    NoCfi,     // no CFI covers the PC (not in a module with .eh_frame, or none for it)
    Lost,      // the CFI needs a register or a word the walk does not have
  };
  // `read(addr, value)` reads a word of the copied stack; false when it lies outside the copy.
  virtual Step step(CFrameRegs &regs, const std::function<bool(uint64_t, uint64_t &)> &read) const = 0;
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
    NoCfi,     // a C frame's PC no CFI covers
    Lost,      // a C frame's CFI needs a register or word the walk does not have
  };
  End end = End::Top;
  std::string function; // Switch, Unknown, NoCfi, Lost: the function (or "0x...") the walk stopped at
  bool in_thread_window = false; // Truncated: the thread's window ended, not the goroutine's
};

// Unwinds up to max_frames callers. `bias` is the binary's load bias in the process (a PIE's, else
// 0). Reads only inside window.bytes[0, len) and window.thread_bytes[0, thread_len). With a
// window of the thread's stack and `c`, a callback from C (runtime.cgocallback) is followed on the
// thread's stack first: crosscall2 and the C frames (by their CFI) down to runtime.asmcgocall,
// where the goroutine called into C; then the walk goes on on the goroutine's stack, from the cgo
// call, as without them. With a window of the goroutine's stack (thread_pc set: the probe ran on
// g0), runtime.systemstack is crossed to the goroutine's frames, from runtime.systemstack_switch
// (the PC the switch leaves in g.sched, as the runtime's own traceback shows it) down.
UnwoundStack unwind_go_stack(const Pclntab &pcln, Arch arch, uint64_t bias, const StackWindow &window,
                             uint32_t max_frames, const CUnwinder *c = nullptr);

} // namespace weave
