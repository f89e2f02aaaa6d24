// Loader: puts the manifest's probes into the kernel with libbpf and takes them out again.
//
// The straight line of libbpf-bootstrap: open the object, check it against the manifest, load,
// configure, attach, and at the end detach. One BPF program serves all attach points of a probe;
// the attach point's cookie (bpf_get_attach_cookie) tells them apart, so a probe with many RETs
// still costs one verified program.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "manifest.h"

struct bpf_object;
struct bpf_program;
struct bpf_map;
struct bpf_link;

namespace weave {

// Routes libbpf's messages through libbpf_set_print. verbosity 0: kept in a backlog that
// show_libbpf_backlog() prints after a failure; 1: warnings and info printed as they come;
// 2: debug output too.
void setup_libbpf_logging(int verbosity);
void show_libbpf_backlog();

class Loader {
public:
  explicit Loader(const Manifest &manifest) : manifest_(manifest) {}
  ~Loader(); // detaches what is still attached and closes the object
  Loader(const Loader &) = delete;
  Loader &operator=(const Loader &) = delete;

  // Opens `object`, checks that it has every program the manifest names and the maps weave_bpf.h
  // defines, and loads it. `object` must stay alive until load() returns.
  bool load(std::string_view object, std::string &error);

  // Writes struct weave_config into `weave_config` (key 0); tgid 0 traces every process.
  bool set_target_tgid(uint32_t tgid, std::string &error);

  // Attaches every probe at every attach point in `binary_path` (`display` names it in messages).
  // Stops at the first failure; what was attached stays until detach() or destruction.
  bool attach(const std::string &binary_path, const std::string &display, std::string &error);

  // Destroys every link in one pass. Each perf-event link costs ~100 ms to close on this kernel
  // (DESIGN.md), which a later uprobe_multi link will remove.
  void detach();

  size_t link_count() const { return links_.size(); }
  int events_fd() const;

  // Events the BPF side could not reserve (ring buffer full), per probe id, summed over CPUs.
  bool lost_per_probe(std::vector<uint64_t> &lost, std::string &error) const;

private:
  const Manifest &manifest_;
  bpf_object *object_ = nullptr;
  std::vector<bpf_program *> programs_; // by probe id
  bpf_map *events_ = nullptr;
  bpf_map *config_ = nullptr;
  bpf_map *lost_ = nullptr;
  std::vector<bpf_link *> links_;
};

} // namespace weave
