#include "symbolize.h"

#include <filesystem>

#include "common/diag.h"

#include <cstdio>
#include <cstdlib>

namespace weave {

Symbolizer::Symbolizer(const std::string &binary_path, const Manifest &manifest)
    : path_(binary_path),
      types_(binary_path, manifest.target.build_id, manifest.target.go_version,
             static_cast<int>(manifest.target.pointer_size ? manifest.target.pointer_size : 8),
             manifest.type_descriptors ? manifest.type_descriptors->start : 0,
             manifest.type_descriptors ? manifest.type_descriptors->end : 0) {
  module_ = path_;
  std::error_code ec;
  if (path_.rfind("/proc/", 0) == 0 && path_.size() > 4 && path_.compare(path_.size() - 4, 4, "/exe") == 0) {
    std::string target = std::filesystem::read_symlink(path_, ec).string();
    if (!ec && !target.empty())
      module_ = target;
  }
}

bool Symbolizer::load_functions() {
  if (loaded_)
    return pcln_.has_value();
  loaded_ = true;
  try {
    image_ = load_binary(path_);
    pcln_ = Pclntab::load(*image_);
    if (!pcln_)
      error_ = path_ + " has no .gopclntab";
    else
      c_ = std::make_unique<CFrames>(path_, image_->arch, &image_->functions);
  } catch (const UserError &e) {
    error_ = e.what();
  } catch (const std::exception &e) {
    error_ = e.what();
  }
  return pcln_.has_value();
}

const std::vector<Pclntab::Frame> &Symbolizer::frames(uint64_t bias, uint64_t return_address) {
  if (return_address == 0 || !load_functions())
    return none_;
  // A return address points after the call; the call itself, and so its line and inline tree, is
  // at the byte before (as runtime.CallersFrames does). Except at a function's first byte: the
  // runtime leaves such a "return address" where a goroutine switched stacks (the PC cgocallback
  // returns to is systemstack_switch's entry), and its traceback names the function there.
  uint64_t pc = return_address - bias;
  const PclnFunction *at = pcln_->at_pc(pc);
  if (!at || at->entry != pc)
    pc -= 1;
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
  if (c_)
    c_->set_bias(bias);
  return unwind_go_stack(*pcln_, image_->arch, bias, window, max_frames, c_.get());
}

const std::vector<Pclntab::Frame> &Symbolizer::c_frames(uint64_t bias, uint64_t return_address) {
  if (return_address <= bias || !load_functions() || !c_)
    return none_;
  uint64_t key = return_address - bias;
  auto it = c_cache_.find(key);
  if (it != c_cache_.end())
    return it->second;
  c_->set_bias(bias);
  return c_cache_.emplace(key, c_->frames(return_address)).first->second;
}

std::string Symbolizer::function_at(uint64_t bias, uint64_t pc) {
  if (pc == 0 || !load_functions())
    return {};
  const PclnFunction *fn = pcln_->at_pc(pc - bias);
  return fn ? fn->name : std::string();
}

} // namespace weave
