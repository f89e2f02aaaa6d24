// runtime/cframes.h without libdw (the arm64 tracer when its sysroot has no libdw): no CFI, so a
// cgo callback's walk ends at its first C frame ("no CFI"); C frames are named from the symbol
// table.
#include "cframes.h"

#include <algorithm>

namespace weave {

struct CFrames::Impl {
  const std::vector<ElfSymbol> *symbols = nullptr;
};

CFrames::CFrames(const std::string &, Arch, const std::vector<ElfSymbol> *symbols)
    : impl_(std::make_unique<Impl>()) {
  impl_->symbols = symbols;
}

CFrames::~CFrames() = default;

CUnwinder::Step CFrames::step(CFrameRegs &, const std::function<bool(uint64_t, uint64_t &)> &) const {
  return Step::NoCfi;
}

std::optional<uint64_t> CFrames::vaddr_of_offset(uint64_t) const { return std::nullopt; }

bool CFrames::has_cfi() const { return false; }

std::vector<Pclntab::Frame> CFrames::frames(uint64_t return_address) const {
  std::vector<Pclntab::Frame> out;
  if (!impl_->symbols || return_address == 0 || return_address - 1 < bias_)
    return out;
  uint64_t pc = return_address - 1 - bias_;
  const auto &syms = *impl_->symbols;
  auto it = std::upper_bound(syms.begin(), syms.end(), pc, [](uint64_t a, const ElfSymbol &s) { return a < s.address; });
  if (it != syms.begin() && pc < std::prev(it)->address + std::max<uint64_t>(std::prev(it)->size, 1)) {
    Pclntab::Frame f;
    f.function = std::prev(it)->name;
    f.file = "?";
    out.push_back(f);
  }
  return out;
}

} // namespace weave
