// C frames of a cgo program, for stack_mode: window: unwound with the binary's call frame
// information (.eh_frame, what the C compiler emits for every function, -fomit-frame-pointer or
// not) and named from its DWARF (inlined calls expanded) or else its ELF symbols. Both through
// elfutils' libdw, the Debian library weave already reads DWARF with: dwarf_cfi_addrframe gives the
// CFA and register rules at a PC, which this walks over the copied stack only (no process memory,
// no ptrace), so a frame it cannot recover ends the walk instead of being guessed. (libdw's own
// dwfl_getthread_frames falls back to a frame-pointer chain on x86-64 where CFI is missing, which in
// -fomit-frame-pointer code invents frames; and libunwind would read the live process.)
//
// The binary's own code, and shared libraries' (libc...) by the process's /proc/PID/maps
// (runtime/symbolize.h): each file's CFI and names, at its load bias.
#pragma once

#include "gobinary/binary.h"
#include "gobinary/pclntab.h"
#include "gobinary/unwind.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weave {

class CFrames : public CUnwinder {
public:
  // Opens `path` (the traced binary). Without .eh_frame, every step is NoCfi; without DWARF,
  // frames are named from `symbols` (the binary's STT_FUNC symbols, sorted by address), which must
  // outlive this.
  CFrames(const std::string &path, Arch arch, const std::vector<ElfSymbol> *symbols);
  ~CFrames() override;
  CFrames(const CFrames &) = delete;
  CFrames &operator=(const CFrames &) = delete;

  // The binary's load bias in the process the next steps and frames are for (a PIE's, else 0).
  void set_bias(uint64_t bias) { bias_ = bias; }

  Step step(CFrameRegs &regs, const std::function<bool(uint64_t, uint64_t &)> &read) const override;

  // The link-time address of file offset `offset` (by the PT_LOAD that maps it), for a shared
  // library's load bias from a /proc/PID/maps line; nullopt when no segment maps it.
  std::optional<uint64_t> vaddr_of_offset(uint64_t offset) const;
  bool has_cfi() const;

  // The source frames of the call that returns to `return_address` (innermost first, the physical
  // function last), or none when neither DWARF nor a symbol covers it.
  std::vector<Pclntab::Frame> frames(uint64_t return_address) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint64_t bias_ = 0;
};

} // namespace weave
