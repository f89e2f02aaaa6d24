#include "symbolize.h"

#include "common/diag.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits.h>
#include <sstream>
#include <sys/stat.h>

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

// The kernel maps a PIE wherever it likes: the bias is where the mapping of file offset 0 starts,
// less the link address of the first PT_LOAD (page-aligned), which is what the PCs are relative to.
uint64_t Symbolizer::bias(uint32_t pid) {
  if (!image_ || !image_->pie)
    return 0;
  auto cached = bias_.find(pid);
  if (cached != bias_.end())
    return cached->second;
  struct stat want;
  uint64_t result = 0;
  if (stat(path_.c_str(), &want) == 0) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      unsigned long long start = 0, end = 0, offset = 0, inode = 0;
      char perms[8] = {0}, dev[16] = {0};
      if (sscanf(line.c_str(), "%llx-%llx %7s %llx %15s %llu", &start, &end, perms, &offset, dev, &inode) != 6)
        continue;
      if (inode == want.st_ino && offset == 0) {
        uint64_t first = UINT64_MAX;
        for (const auto &seg : image_->segments)
          first = std::min(first, seg.vaddr);
        result = start - (first & ~uint64_t{0xfff});
        break;
      }
    }
  }
  bias_[pid] = result;
  return result;
}

const std::vector<Pclntab::Frame> &Symbolizer::frames(uint32_t pid, uint64_t return_address) {
  if (!pcln_ || return_address == 0)
    return none_;
  // A return address points after the call; the call itself, and so its line and inline tree, is
  // at the byte before (as runtime.CallersFrames does).
  uint64_t pc = return_address - bias(pid) - 1;
  auto it = cache_.find(pc);
  if (it != cache_.end())
    return it->second;
  return cache_.emplace(pc, pcln_->symbolize(pc)).first->second;
}

std::string Symbolizer::function_at(uint32_t pid, uint64_t pc) {
  if (!pcln_ || pc == 0)
    return {};
  const PclnFunction *fn = pcln_->at_pc(pc - bias(pid));
  return fn ? fn->name : std::string();
}

} // namespace weave
