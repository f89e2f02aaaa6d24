#include "gobinary/unwind.h"

#include <cstring>
#include <fmt/format.h>

namespace weave {

namespace {

constexpr uint8_t kFlagTopFrame = 1; // funcFlag_TOPFRAME (Go 1.17+)
constexpr uint8_t kFlagSPWrite = 2;  // funcFlag_SPWRITE: the function writes SP itself

bool is_top(const PclnFunction &fn) {
  if (fn.flag & kFlagTopFrame)
    return true;
  // Go before 1.17 marks top frames by funcID only; their names say the same.
  return fn.name == "runtime.goexit" || fn.name == "runtime.mstart" || fn.name == "runtime.rt0_go" ||
         fn.name == "runtime.mstart0";
}

} // namespace

UnwoundStack unwind_go_stack(const Pclntab &pcln, Arch arch, uint64_t bias, const StackWindow &window,
                             uint32_t max_frames, const CUnwinder *c) {
  UnwoundStack out;
  const uint64_t ptr = arch == Arch::I386 ? 4 : 8;
  const bool uses_lr = arch == Arch::Arm64;
  // A word of a copy of the stack from `base` at process address `addr`; false outside the copy.
  auto word_in = [ptr](uint64_t base, const uint8_t *bytes, uint32_t len, uint64_t addr, uint64_t &value) {
    if (!bytes || addr < base || addr - base > len || len - (addr - base) < ptr)
      return false;
    value = 0;
    std::memcpy(&value, bytes + (addr - base), ptr); // little-endian targets only
    return true;
  };
  // The stack the walk is on: the probe's, until a switch to the goroutine's (g0's systemstack).
  uint64_t base = window.sp;
  const uint8_t *bytes = window.bytes;
  uint32_t len = window.len;
  bool on_thread = false;
  auto word = [&](uint64_t addr, uint64_t &value) { return word_in(base, bytes, len, addr, value); };
  std::function<bool(uint64_t, uint64_t &)> thread_word = [&](uint64_t addr, uint64_t &value) {
    return word_in(window.thread_sp, window.thread_bytes, window.thread_len, addr, value);
  };
  auto unknown = [&](uint64_t pc) {
    out.end = UnwoundStack::End::Unknown;
    out.function = fmt::format("{:#x}", pc);
  };
  // The frames on the thread's stack between a callback into Go and the cgo call below it, from
  // runtime.cgocallback's frame there (at the SP it saved in m.g0.sched.sp, at the same PC as its
  // frame on the goroutine's stack): crosscall2, the C functions, up to runtime.asmcgocall, whose
  // return address is the last. True when the walk reached it (or the thread's first frame) and
  // goes on on the goroutine's stack; false with out.end saying why it ended here.
  bool crossed = false;
  auto thread_frames = [&](uint64_t pc) {
    const int sp_reg = arch == Arch::X86_64 ? 7 : arch == Arch::Arm64 ? 31 : 4;
    uint64_t sp = window.thread_sp;
    // arm64: the registers crosscall2 saved for its C caller, which that caller's CFI may need.
    CFrameRegs saved;
    for (bool first = true;; first = false) {
      const PclnFunction *fn = pc >= bias ? pcln.at_pc(pc - bias) : nullptr;
      if (fn && !first && (is_top(*fn) || (fn->flag & kFlagSPWrite)))
        return true; // asmcgocall: the goroutine's side has the rest
      if (out.return_addresses.size() >= max_frames) {
        out.end = UnwoundStack::End::Depth;
        return false;
      }
      uint64_t return_address = 0;
      if (fn) {
        std::optional<int32_t> delta = pcln.sp_delta(*fn, pc - bias);
        if (!delta || *delta < 0 || (uses_lr && *delta == 0)) {
          out.end = UnwoundStack::End::Unknown;
          out.function = fn->name;
          return false;
        }
        uint64_t at = uses_lr ? sp : sp + static_cast<uint64_t>(*delta);
        // arm64's crosscall2 is NOFRAME: it makes a frame of 24 words itself and keeps C's callee-
        // saved registers there, R19-R28 from word 4, R29 and R30 (LR) in words 22 and 23
        // (runtime/cgo/asm_arm64.s, Go 1.19 to 1.26 alike): LR is not at SP as in a Go frame.
        bool crosscall2_arm64 = uses_lr && fn->name == "crosscall2";
        if (crosscall2_arm64) {
          if (*delta != 24 * 8) {
            out.end = UnwoundStack::End::Unknown;
            out.function = fn->name;
            return false;
          }
          at = sp + 23 * 8;
          for (int r = 19; r <= 29; ++r) {
            uint64_t v = 0;
            if (thread_word(sp + (r == 29 ? 22 : r - 15) * 8, v))
              saved.set(r, v);
          }
        }
        if (!thread_word(at, return_address)) {
          out.end = UnwoundStack::End::Truncated;
          out.in_thread_window = true;
          return false;
        }
        sp = sp + static_cast<uint64_t>(*delta) + (uses_lr ? 0 : ptr);
      } else {
        if (!c) {
          unknown(pc);
          return false;
        }
        // C code: its CFI. Leaving Go code, only SP is known; the C frames restore what they saved.
        CFrameRegs regs = saved;
        regs.pc = pc;
        regs.sp = sp;
        regs.set(sp_reg, sp);
        switch (c->step(regs, thread_word)) {
        case CUnwinder::Step::Ok:
          break;
        case CUnwinder::Step::Top:
          return true;
        case CUnwinder::Step::NoCfi:
          out.end = UnwoundStack::End::NoCfi;
          out.function = fmt::format("{:#x}", pc);
          return false;
        case CUnwinder::Step::Lost:
          out.end = UnwoundStack::End::Lost;
          out.function = fmt::format("{:#x}", pc);
          return false;
        }
        // The next C frame goes on from all the registers this one recovered.
        for (;;) {
          return_address = regs.pc;
          sp = regs.sp;
          if (return_address == 0)
            return true;
          const PclnFunction *next = return_address >= bias ? pcln.at_pc(return_address - bias) : nullptr;
          if (next)
            break;
          if (out.return_addresses.size() >= max_frames) {
            out.end = UnwoundStack::End::Depth;
            return false;
          }
          out.return_addresses.push_back(return_address);
          regs.set(sp_reg, sp);
          switch (c->step(regs, thread_word)) {
          case CUnwinder::Step::Ok:
            continue;
          case CUnwinder::Step::Top:
            return true;
          case CUnwinder::Step::NoCfi:
            out.end = UnwoundStack::End::NoCfi;
            out.function = fmt::format("{:#x}", return_address);
            return false;
          case CUnwinder::Step::Lost:
            out.end = UnwoundStack::End::Lost;
            out.function = fmt::format("{:#x}", return_address);
            return false;
          }
        }
      }
      if (return_address == 0)
        return true;
      out.return_addresses.push_back(return_address);
      pc = return_address;
    }
  };

  uint64_t pc = window.pc, sp = window.sp;
  for (bool innermost = true;; innermost = false) {
    if (pc < bias) {
      unknown(pc);
      return out;
    }
    const PclnFunction *fn = pcln.at_pc(pc - bias);
    if (!fn) {
      unknown(pc);
      return out;
    }
    if (!innermost && is_top(*fn)) {
      out.end = UnwoundStack::End::Top;
      return out;
    }
    // runtime.cgocallback writes SP, to move from the thread's stack to the goroutine's, but builds
    // its frame on the goroutine's stack so that its return address is where the goroutine called
    // into C: the runtime's own unwinder crosses it (traceback.go), and so does this one.
    // A callback from C: its C frames first, from the thread's stack (once: m.g0.sched.sp is the
    // innermost callback's).
    if (!innermost && fn->name == "runtime.cgocallback" && window.thread_len && !window.thread_pc && !crossed) {
      crossed = true;
      if (!thread_frames(pc))
        return out;
    }
    // On g0, systemstack's caller is on the goroutine's stack: the walk goes on there, from the
    // PC and SP systemstack saved in its g.sched (once: only the innermost switch is known).
    if (!innermost && fn->name == "runtime.systemstack" && window.thread_pc && window.thread_len && !crossed) {
      crossed = true;
      if (out.return_addresses.size() >= max_frames) {
        out.end = UnwoundStack::End::Depth;
        return out;
      }
      out.return_addresses.push_back(window.thread_pc);
      pc = window.thread_pc;
      sp = window.thread_sp;
      base = window.thread_sp;
      bytes = window.thread_bytes;
      len = window.thread_len;
      on_thread = true;
      continue;
    }
    if (!innermost && (fn->flag & kFlagSPWrite) && fn->name != "runtime.cgocallback") {
      out.end = UnwoundStack::End::Switch;
      out.function = fn->name;
      return out;
    }
    if (out.return_addresses.size() >= max_frames) {
      out.end = UnwoundStack::End::Depth;
      return out;
    }
    std::optional<int32_t> delta = pcln.sp_delta(*fn, pc - bias);
    if (!delta || *delta < 0) {
      out.end = UnwoundStack::End::Unknown;
      out.function = fn->name;
      return out;
    }
    uint64_t return_address = 0, caller_sp = 0;
    if (uses_lr) {
      if (innermost && *delta == 0)
        return_address = window.lr;
      else if (!word(sp, return_address)) {
        out.end = UnwoundStack::End::Truncated;
        out.in_thread_window = on_thread;
        return out;
      }
      caller_sp = sp + static_cast<uint64_t>(*delta);
    } else {
      if (!word(sp + static_cast<uint64_t>(*delta), return_address)) {
        out.end = UnwoundStack::End::Truncated;
        out.in_thread_window = on_thread;
        return out;
      }
      caller_sp = sp + static_cast<uint64_t>(*delta) + ptr;
    }
    if (return_address == 0) { // the runtime's frames end so where they have no top-frame flag
      out.end = UnwoundStack::End::Top;
      return out;
    }
    out.return_addresses.push_back(return_address);
    pc = return_address;
    sp = caller_sp;
  }
}

} // namespace weave
