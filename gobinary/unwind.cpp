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
                             uint32_t max_frames) {
  UnwoundStack out;
  const uint64_t ptr = arch == Arch::I386 ? 4 : 8;
  const bool uses_lr = arch == Arch::Arm64;
  // A word of the window at process address `addr`; false when it lies outside the copy.
  auto word = [&](uint64_t addr, uint64_t &value) {
    if (addr < window.sp || addr - window.sp > window.len || window.len - (addr - window.sp) < ptr)
      return false;
    value = 0;
    std::memcpy(&value, window.bytes + (addr - window.sp), ptr); // little-endian targets only
    return true;
  };
  auto unknown = [&](uint64_t pc) {
    out.end = UnwoundStack::End::Unknown;
    out.function = fmt::format("{:#x}", pc);
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
        return out;
      }
      caller_sp = sp + static_cast<uint64_t>(*delta);
    } else {
      if (!word(sp + static_cast<uint64_t>(*delta), return_address)) {
        out.end = UnwoundStack::End::Truncated;
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
