#include "symbolize.h"

#include "common/diag.h"

#include <cstdio>
#include <cstdlib>

namespace weave {

Symbolizer::Symbolizer(const std::string &binary_path) : path_(binary_path) {
  try {
    image_ = load_binary(binary_path);
    pcln_ = Pclntab::load(*image_);
    if (!pcln_)
      error_ = binary_path + " has no .gopclntab";
  } catch (const UserError &e) {
    error_ = e.what();
  } catch (const std::exception &e) {
    error_ = e.what();
  }
}

const std::vector<Pclntab::Frame> &Symbolizer::frames(uint64_t bias, uint64_t return_address) {
  if (!pcln_ || return_address == 0)
    return none_;
  // A return address points after the call; the call itself, and so its line and inline tree, is
  // at the byte before (as runtime.CallersFrames does).
  uint64_t pc = return_address - bias - 1;
  auto it = cache_.find(pc);
  if (it != cache_.end())
    return it->second;
  return cache_.emplace(pc, pcln_->symbolize(pc)).first->second;
}

UnwoundStack Symbolizer::unwind(uint64_t bias, const StackWindow &window, uint32_t max_frames) const {
  if (!pcln_ || !image_) {
    UnwoundStack none;
    none.end = UnwoundStack::End::Unknown;
    return none;
  }
  return unwind_go_stack(*pcln_, image_->arch, bias, window, max_frames);
}

std::string Symbolizer::function_at(uint64_t bias, uint64_t pc) {
  if (!pcln_ || pc == 0)
    return {};
  const PclnFunction *fn = pcln_->at_pc(pc - bias);
  return fn ? fn->name : std::string();
}

const Pclntab::RuntimeType *Symbolizer::type_at(uint64_t bias, uint64_t address) {
  if (!pcln_ || address < bias)
    return nullptr;
  uint64_t vaddr = address - bias;
  auto it = types_.find(vaddr);
  if (it == types_.end())
    it = types_.emplace(vaddr, pcln_->type_at(vaddr)).first;
  return it->second ? &*it->second : nullptr;
}

} // namespace weave
