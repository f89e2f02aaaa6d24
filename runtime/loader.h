// Loader: puts the manifest's probes into the kernel with libbpf and takes them out again.
//
// The straight line of libbpf-bootstrap: open the object, check it against the manifest, load,
// configure, attach, and at the end detach. One BPF program serves every probe of one shape (the
// manifest's probes name it) at all their attach points; the attach point's cookie
// (bpf_get_attach_cookie) says which probe it is, so a wildcard over 1,000 functions of one
// signature costs two verified programs and two links.
//
// Two ways to attach (DESIGN.md, "Measured on this machine"):
//  - uprobe_multi: one BPF_TRACE_UPROBE_MULTI link per program holds the attach points of all its
//    probes with their cookies (Linux >= 6.6). Attaching 1,000 offsets this way takes ~17 ms.
//  - perf events: one perf-event uprobe link per attach point (any kernel with the uprobe PMU).
// A program verified for uprobe_multi (expected attach type BPF_TRACE_UPROBE_MULTI) cannot be
// attached through a perf event and the other way round, so the choice is made before load():
// by default by asking the kernel (probe_uprobe_multi), or forced by the caller.
//
// Closing a link of either kind waits for an RCU grace period in the kernel (~50 ms for a
// uprobe_multi link, ~100 ms for a perf-event link on this machine) and the waits of concurrent
// closes overlap, so detach() closes links from many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "manifest.h"
#include "stats.h"

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

enum class AttachMethod {
  Auto,  // uprobe_multi when the kernel has it, else perf events
  Multi, // uprobe_multi links, or fail
  Perf,  // perf-event links
};

// Whether this kernel creates BPF_TRACE_UPROBE_MULTI links. Loads a two-instruction program with
// that expected attach type and asks for a link on "/", which a kernel that knows uprobe_multi
// refuses with EBADF (not a regular file) and an older one with EINVAL (unknown attach type) —
// the probe libbpf itself uses (libbpf.c: probe_uprobe_multi_link, libbpf >= 1.3). Nothing is
// attached. When false, `why` says what failed. Needs the privileges that loading BPF needs.
bool probe_uprobe_multi(std::string &why);

// Runs task(0) .. task(n - 1), each once, on up to `max_threads` threads with small stacks, and
// returns when all are done. For work that mostly sleeps in the kernel, such as closing links.
// Signals stay with the calling thread.
void run_in_parallel(size_t n, size_t max_threads, void (*task)(void *context, size_t i),
                     void *context);

class Loader {
public:
  explicit Loader(const Manifest &manifest) : manifest_(manifest) {}
  ~Loader(); // detaches what is still attached and closes the object
  Loader(const Loader &) = delete;
  Loader &operator=(const Loader &) = delete;

  // Opens `object`, checks that it has every program the manifest names and the maps weave_bpf.h
  // defines, decides how to attach (see above), and loads it. `object` must stay alive until
  // load() returns.
  bool load(std::string_view object, std::string &error, AttachMethod method = AttachMethod::Auto);

  // Before load(): the events ring buffer's size in bytes (a power of two of whole pages); 0 keeps
  // kDefaultRingSize. After load(): the size it has.
  void set_ring_size(uint64_t bytes) { ring_size_ = bytes; }
  uint64_t ring_size() const { return ring_size_ ? ring_size_ : kDefaultRingSize; }
  // 8 MiB, by measurement (bench/service.sh, README "A real service"): Caddy under hey (20,000
  // requests, concurrency 20) with 7 probes and their returns, 14 events a request, the tracer on
  // two cores shared with builds: 0 lost with 4 MiB and more in every run; 2 MiB lost 7,555 events
  // in one round, a backlog near 4 MB, which 8 MiB holds twice. The mapping costs twice its size in
  // RSS from the attach on. The tracer takes more when 128 of a spec's largest records need it
  // (main.cpp: default_ring_size).
  static constexpr uint64_t kDefaultRingSize = 8u << 20;

  // After load(): Multi or Perf, and why (e.g. "the kernel has it", "forced with --attach perf").
  AttachMethod method() const { return method_; }
  const std::string &method_reason() const { return method_reason_; }

  // Writes struct weave_config into `weave_config` (key 0); tgid 0 traces every process.
  bool set_target_tgid(uint32_t tgid, std::string &error);

  // Turns on the kernel's run-time accounting of BPF programs (bpf_enable_stats, system-wide,
  // until this loader goes away; costs two clock reads per program run). Call before attach() so
  // that every run is counted.
  bool enable_run_time_stats(std::string &error);

  // Attaches every probe at every attach point in `binary_path` (`display` names it in messages).
  // Stops at the first failure; what was attached stays until detach() or destruction.
  bool attach(const std::string &binary_path, const std::string &display, std::string &error);

  // Closes every link, many at a time (see above). Returns once all are closed, so no program
  // runs any more.
  void detach();

  // The probes' links and points; the spawn probe's apart (spawn_point_count).
  size_t link_count() const { return multi_links_.size() + perf_links_.size() - spawn_links_; }
  size_t spawn_point_count() const { return spawn_points_; }
  size_t attach_point_count() const { return attached_points_; }
  double attach_seconds() const { return attach_seconds_; }
  double detach_seconds() const { return detach_seconds_; }
  int events_fd() const;

  // Events the BPF side could not reserve (ring buffer full), per probe id, summed over CPUs.
  bool lost_per_probe(std::vector<uint64_t> &lost, std::string &error) const;
  // Of those, the events a program could not build because every per-CPU scratch record of its CPU
  // was busy (weave_scratch_busy; all 0 for an object without it).
  bool busy_per_probe(std::vector<uint64_t> &busy, std::string &error) const;
  // Probe runs for a traced process (after the pid filter), per probe id, summed over CPUs. False
  // with an empty `error` when the object has no weave_hits map (built by an older weave).
  bool hits_per_probe(std::vector<uint64_t> &hits, std::string &error) const;
  // Events when: conditions dropped, and events limits: dropped; false (nothing read) for an
  // object without the map.
  bool filtered_per_probe(std::vector<uint64_t> &filtered, std::string &error) const;
  bool limited_per_probe(std::vector<uint64_t> &limited, std::string &error) const;
  // min_duration: held entries the pairing maps could not keep, and entries held now (calls in
  // flight); false (nothing read) for an object without the maps.
  bool evicted_per_probe(std::vector<uint64_t> &evicted, std::string &error) const;
  bool held_per_probe(std::vector<uint64_t> &held, std::string &error) const;
  // Run counts and times (struct bpf_prog_info) per program (see program_of_probe); false when the statistics are unavailable (see
  // enable_run_time_stats).
  bool run_stats_per_program(std::vector<ProgramStats> &stats, std::string &error) const;
  size_t program_count() const { return programs_.size(); }
  // The spawn probe's programs (Manifest::spawn), entry and return: their run counts and times,
  // false when there is none or statistics are unavailable. Each goroutine made runs both once.
  bool spawn_run_stats(ProgramStats &entry, ProgramStats &ret, std::string &error) const;
  bool has_spawn() const { return spawn_programs_[0] != nullptr; }
  // After load(): the index of the program that serves probe `id`.
  const std::vector<size_t> &program_of_probe() const { return program_of_probe_; }

private:
  uint64_t ring_size_ = 0;
  bool read_counters(bpf_map *map, const char *name, std::vector<uint64_t> &out,
                     std::string &error) const;
  bool attach_multi(size_t program, const std::string &path, const std::string &display,
                    std::string &error);
  bool attach_perf(size_t probe, const std::string &path, const std::string &display,
                   std::string &error);

  const Manifest &manifest_;
  bpf_object *object_ = nullptr;
  std::vector<bpf_program *> programs_;   // each once, in the order the manifest names them
  std::vector<size_t> program_of_probe_; // by probe id: index into programs_
  std::vector<std::vector<size_t>> probes_of_program_; // the probe ids each program serves
  bpf_program *spawn_programs_[2] = {nullptr, nullptr}; // the spawn probe's entry and return programs
  size_t spawn_links_ = 0, spawn_points_ = 0;
  bool attach_spawn(const std::string &path, const std::string &display, bool returns, std::string &error);
  bpf_map *events_ = nullptr;
  bpf_map *config_ = nullptr;
  bpf_map *lost_ = nullptr;
  bpf_map *hits_ = nullptr; // optional
  bpf_map *filtered_ = nullptr; // optional: objects older than when: have none
  bpf_map *limited_ = nullptr;  // optional: objects older than limits: have none
  bpf_map *evicted_ = nullptr;  // optional: objects older than min_duration have none
  bpf_map *held_ = nullptr;     // optional, likewise
  bpf_map *busy_ = nullptr;     // optional, likewise: weave_scratch_busy
  AttachMethod method_ = AttachMethod::Auto;
  std::string method_reason_;
  int stats_fd_ = -1;
  std::vector<int> multi_links_;       // link fds
  std::vector<bpf_link *> perf_links_; // one per attach point
  size_t attached_points_ = 0;
  double attach_seconds_ = 0;
  double detach_seconds_ = 0;
};

} // namespace weave
