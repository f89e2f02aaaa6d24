#include "symbolize.h"

#include <filesystem>

#include "common/diag.h"

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>
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
    // On demand: the tracer's memory must not grow with the binary (an 82 MB Caddy's segments
    // read whole were 122 MB); a lookup reads the few blocks it needs.
    pcln_ = Pclntab::load(*image_, Pclntab::Reading::OnDemand);
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
  auto it = cache_.find(pc);
  if (it != cache_.end())
    return it->second;
  // A record found damaged as it is read names nothing: the PC is shown bare.
  std::vector<Pclntab::Frame> frames;
  try {
    const PclnFunction *at = pcln_->at_pc(pc);
    frames = pcln_->symbolize(!at || at->entry != pc ? pc - 1 : pc);
  } catch (const UserError &e) {
    if (error_.empty())
      error_ = e.what();
  }
  return cache_.emplace(pc, std::move(frames)).first->second;
}

namespace {

// A /proc file (size 0 to stat), read whole up to 4 MiB.
bool read_small_file(const std::string &path, std::string &out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0 || out.size() > (4u << 20))
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

// The binary's CFI first; a PC it has none for, the CFI of the shared library mapped there.
class ProcessUnwinder : public CUnwinder {
public:
  ProcessUnwinder(CFrames *binary, uint64_t bias, std::function<const CFrames *(uint64_t pc)> library)
      : binary_(binary), bias_(bias), library_(std::move(library)) {}
  Step step(CFrameRegs &regs, const std::function<bool(uint64_t, uint64_t &)> &read) const override {
    binary_->set_bias(bias_);
    Step s = binary_->step(regs, read);
    if (s != Step::NoCfi)
      return s;
    const CFrames *lib = library_(regs.pc);
    return lib ? lib->step(regs, read) : Step::NoCfi;
  }

private:
  CFrames *binary_;
  uint64_t bias_;
  std::function<const CFrames *(uint64_t pc)> library_;
};

} // namespace

UnwoundStack Symbolizer::unwind(uint64_t bias, const StackWindow &window, uint32_t max_frames, uint32_t pid) {
  if (!pcln_ || !image_) {
    UnwoundStack none;
    none.end = UnwoundStack::End::Unknown;
    return none;
  }
  try {
    return unwind_pcln(bias, window, max_frames, pid);
  } catch (const UserError &e) { // a record found damaged as it is read: the walk ends unknown
    if (error_.empty())
      error_ = e.what();
    UnwoundStack none;
    none.end = UnwoundStack::End::Unknown;
    return none;
  }
}

UnwoundStack Symbolizer::unwind_pcln(uint64_t bias, const StackWindow &window, uint32_t max_frames, uint32_t pid) {
  if (!c_)
    return unwind_go_stack(*pcln_, image_->arch, bias, window, max_frames, nullptr);
  ProcessUnwinder unwinder(c_.get(), bias, [this, pid](uint64_t pc) -> const CFrames * {
    const Library *lib = pid ? library_at(pid, pc - 1) : nullptr;
    if (!lib)
      return nullptr;
    lib->c->set_bias(lib->bias);
    return lib->c;
  });
  return unwind_go_stack(*pcln_, image_->arch, bias, window, max_frames, &unwinder);
}

void Symbolizer::read_maps(uint32_t pid) {
  std::vector<Library> &libs = maps_[pid];
  libs.clear();
  std::string text;
  if (!read_small_file("/proc/" + std::to_string(pid) + "/maps", text))
    return;
  size_t pos = 0;
  while (pos < text.size() && libs.size() < 4096) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    // start-end perms offset dev inode path
    unsigned long long start = 0, stop = 0, offset = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &stop, perms, &offset, &path_at) < 4 ||
        perms[2] != 'x' || path_at <= 0 || static_cast<size_t>(path_at) >= line.size() || line[path_at] != '/')
      continue;
    std::string path = line.substr(static_cast<size_t>(path_at));
    if (path == module_ || path == path_)
      continue; // the binary itself: c_
    auto &lib = libraries_[path];
    if (!lib)
      lib = std::make_unique<CFrames>(path, image_->arch, nullptr);
    std::optional<uint64_t> vaddr = lib->vaddr_of_offset(offset);
    if (!vaddr || !lib->has_cfi())
      continue;
    libs.push_back(Library{start, stop, start - *vaddr, path, lib.get()});
  }
}

const Symbolizer::Library *Symbolizer::library_at(uint32_t pid, uint64_t pc) {
  if (!image_)
    return nullptr;
  auto find = [&]() -> const Library * {
    for (const Library &lib : maps_[pid])
      if (pc >= lib.start && pc < lib.end)
        return &lib;
    return nullptr;
  };
  if (!maps_.count(pid))
    read_maps(pid);
  const Library *lib = find();
  if (!lib) { // mapped since (dlopen): read again
    read_maps(pid);
    lib = find();
  }
  return lib;
}

const std::vector<Pclntab::Frame> &Symbolizer::c_frames(uint64_t bias, uint64_t return_address, uint32_t pid,
                                                        const std::string **module) {
  if (return_address <= bias || !load_functions() || !c_)
    return none_;
  uint64_t key = return_address - bias;
  auto it = c_cache_.find(key);
  if (it != c_cache_.end() && !it->second.empty())
    return it->second;
  c_->set_bias(bias);
  auto &own = c_cache_.emplace(key, c_->frames(return_address)).first->second;
  if (!own.empty() || !pid)
    return own;
  const Library *lib = library_at(pid, return_address - 1);
  if (!lib)
    return none_;
  if (module)
    *module = &lib->path;
  std::string lib_key = lib->path + "@" + std::to_string(return_address - lib->bias);
  auto at = library_cache_.find(lib_key);
  if (at != library_cache_.end())
    return at->second;
  lib->c->set_bias(lib->bias);
  return library_cache_.emplace(lib_key, lib->c->frames(return_address)).first->second;
}

std::string Symbolizer::function_at(uint64_t bias, uint64_t pc) {
  if (pc == 0 || !load_functions())
    return {};
  try {
    const PclnFunction *fn = pcln_->at_pc(pc - bias);
    return fn ? fn->name : std::string();
  } catch (const UserError &e) {
    if (error_.empty())
      error_ = e.what();
    return {};
  }
}

} // namespace weave
