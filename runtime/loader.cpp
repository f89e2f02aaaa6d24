#include "loader.h"

#include <algorithm>
#include <atomic>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <linux/bpf.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unordered_map>

#include "event.h"

namespace weave {

namespace {

int g_verbosity = 0;
std::string g_backlog;
// The backlog only has to explain the latest failure; the verifier log of a large program is
// tens of KiB, so keep the last 256 KiB.
constexpr size_t kBacklogLimit = 256 * 1024;

int print_libbpf(enum libbpf_print_level level, const char *format, va_list args) {
  if (level == LIBBPF_DEBUG && g_verbosity < 2)
    return 0;
  if (g_verbosity > 0)
    return std::vfprintf(stderr, format, args);
  char line[1024];
  int n = std::vsnprintf(line, sizeof line, format, args);
  if (n > 0) {
    g_backlog.append(line, std::min<size_t>(static_cast<size_t>(n), sizeof line - 1));
    if (g_backlog.size() > kBacklogLimit)
      g_backlog.erase(0, g_backlog.size() - kBacklogLimit);
  }
  return n;
}

std::string errno_text(int err) {
  return std::strerror(err < 0 ? -err : err);
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

constexpr const char kPrivilegeHint[] = " — run as root (or with CAP_BPF and CAP_PERFMON)";

double monotonic_seconds() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// ---- uprobe_multi, by raw syscall ------------------------------------------------------------
// Debian 12's libbpf 1.1 and its linux-libc-dev 6.1 headers predate uprobe_multi (Linux 6.6), so
// the attach type and the link_create.uprobe_multi layout of union bpf_attr are spelled out here,
// from include/uapi/linux/bpf.h of Linux 6.6.
constexpr int kBpfLinkCreate = 28;            // enum bpf_cmd: BPF_LINK_CREATE
constexpr unsigned kBpfTraceUprobeMulti = 48; // enum bpf_attach_type: BPF_TRACE_UPROBE_MULTI

struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;       // unused: 0
  uint32_t attach_type;     // BPF_TRACE_UPROBE_MULTI
  uint32_t flags;           // link_create.flags: 0
  uint64_t path;            // const char *: the binary, resolved by the kernel like open(2)
  uint64_t offsets;         // const u64 *: file offsets
  uint64_t ref_ctr_offsets; // const u64 *: USDT semaphores; unused: 0
  uint64_t cookies;         // const u64 *: bpf_get_attach_cookie() at each offset
  uint32_t cnt;             // entries in each of the arrays
  uint32_t multi_flags;     // BPF_F_UPROBE_MULTI_RETURN would make them uretprobes: 0
  uint32_t pid;             // 0: every process; the BPF side filters by weave_config instead
  uint32_t zero;            // padding to the 8-byte alignment of the union; must be 0
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64, "link_create.uprobe_multi layout");

// Returns the link's fd, or -errno.
int create_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets,
                             const uint64_t *cookies, uint32_t count) {
  LinkCreateUprobeMulti attr;
  std::memset(&attr, 0, sizeof attr);
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uintptr_t>(path);
  attr.offsets = reinterpret_cast<uintptr_t>(offsets);
  attr.cookies = reinterpret_cast<uintptr_t>(cookies);
  attr.cnt = count;
  long fd = syscall(__NR_bpf, kBpfLinkCreate, &attr, sizeof attr);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

// Names `points` for a message: "0xa3b20", or "3 points (0xa3b20, 0xa3b87, 0xa3bc1)".
std::string describe_points(const std::vector<uint64_t> &offsets) {
  if (offsets.size() == 1)
    return hex(offsets[0]);
  std::string text = std::to_string(offsets.size()) + " points (";
  for (size_t i = 0; i < offsets.size() && i < 4; ++i)
    text += (i ? ", " : "") + hex(offsets[i]);
  return text + (offsets.size() > 4 ? ", ...)" : ")");
}

} // namespace

bool probe_uprobe_multi(std::string &why) {
  // r0 = 0; exit
  struct bpf_insn insns[2];
  std::memset(insns, 0, sizeof insns);
  insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
  insns[1].code = BPF_JMP | BPF_EXIT;
  LIBBPF_OPTS(bpf_prog_load_opts, opts,
              .expected_attach_type = static_cast<enum bpf_attach_type>(kBpfTraceUprobeMulti));
  int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "weave_probe", "GPL", insns, 2, &opts);
  if (prog < 0) {
    why = "loading a program for BPF_TRACE_UPROBE_MULTI failed: " + errno_text(errno);
    return false;
  }
  uint64_t offset = 0;
  int fd = create_uprobe_multi_link(prog, "/", &offset, nullptr, 1);
  close(prog);
  if (fd >= 0) { // cannot happen ("/" is a directory); do not trust the kernel's answer
    close(fd);
    why = "the kernel attached a uprobe_multi link to \"/\"";
    return false;
  }
  if (fd == -EBADF)
    return true;
  why = "BPF_LINK_CREATE with BPF_TRACE_UPROBE_MULTI: " + errno_text(fd) +
        (fd == -EINVAL ? " (the kernel predates uprobe_multi, Linux 6.6)" : "");
  return false;
}

namespace {
struct ParallelRun {
  void (*task)(void *, size_t);
  void *context;
  size_t n;
  std::atomic<size_t> next{0};
};

void *parallel_worker(void *arg) {
  auto *run = static_cast<ParallelRun *>(arg);
  for (size_t i; (i = run->next.fetch_add(1)) < run->n;)
    run->task(run->context, i);
  return nullptr;
}
} // namespace

void run_in_parallel(size_t n, size_t max_threads, void (*task)(void *context, size_t i),
                     void *context) {
  ParallelRun run;
  run.task = task;
  run.context = context;
  run.n = n;
  size_t helpers = std::min(n, std::max<size_t>(max_threads, 1)) - (n > 0 ? 1 : 0);
  // Workers block SIGINT and SIGTERM (they inherit the mask), so the handler keeps running on
  // the calling thread, where the main loop looks for it.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024); // they only make a syscall or two
  std::vector<pthread_t> threads;
  threads.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) {
    pthread_t thread;
    if (pthread_create(&thread, &attr, parallel_worker, &run) != 0)
      break; // out of threads: the ones running, and this one, share the rest
    threads.push_back(thread);
  }
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  parallel_worker(&run);
  for (pthread_t thread : threads)
    pthread_join(thread, nullptr);
}

void setup_libbpf_logging(int verbosity) {
  g_verbosity = verbosity;
  libbpf_set_print(print_libbpf);
}

void show_libbpf_backlog() {
  if (g_backlog.empty())
    return;
  std::fputs(g_backlog.c_str(), stderr);
  if (g_backlog.back() != '\n')
    std::fputc('\n', stderr);
  g_backlog.clear();
}

Loader::~Loader() {
  detach();
  bpf_object__close(object_);
  if (stats_fd_ >= 0)
    close(stats_fd_);
}

bool Loader::load(std::string_view object, std::string &error, AttachMethod method) {
  LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "weave_probes");
  object_ = bpf_object__open_mem(object.data(), object.size(), &opts);
  if (!object_) {
    error = "BPF object: cannot open: " + errno_text(errno);
    return false;
  }
  // Probes of one shape share a program (the attach point's cookie says which probe it is).
  std::unordered_map<std::string, size_t> program_index;
  for (const ManifestProbe &probe : manifest_.probes) {
    auto [it, added] = program_index.try_emplace(probe.program, programs_.size());
    if (added) {
      bpf_program *program = bpf_object__find_program_by_name(object_, probe.program.c_str());
      if (!program) {
        error = "probe '" + probe.name + "': program '" + probe.program +
                "' is not in the BPF object; the manifest and the object do not belong together";
        return false;
      }
      programs_.push_back(program);
    }
    program_of_probe_.push_back(it->second);
    if (added)
      probes_of_program_.emplace_back();
    probes_of_program_[it->second].push_back(program_of_probe_.size() - 1);
  }
  if (manifest_.spawn) {
    const std::string *names[2] = {&manifest_.spawn->entry_program, &manifest_.spawn->return_program};
    for (int i = 0; i < 2; ++i) {
      spawn_programs_[i] = bpf_object__find_program_by_name(object_, names[i]->c_str());
      if (!spawn_programs_[i]) {
        error = "the spawn probe's program '" + *names[i] +
                "' is not in the BPF object; the manifest and the object do not belong together";
        return false;
      }
    }
  }
  struct Wanted {
    const char *name;
    bpf_map **map;
    enum bpf_map_type type;
  } wanted[] = {{"weave_events", &events_, BPF_MAP_TYPE_RINGBUF},
                {"weave_config", &config_, BPF_MAP_TYPE_ARRAY},
                {"weave_lost", &lost_, BPF_MAP_TYPE_PERCPU_ARRAY}};
  for (const Wanted &w : wanted) {
    *w.map = bpf_object__find_map_by_name(object_, w.name);
    if (!*w.map || bpf_map__type(*w.map) != w.type) {
      error = std::string("BPF object: map '") + w.name +
              (*w.map ? "' has the wrong type" : "' is missing") + " (see templates/weave_bpf.h)";
      return false;
    }
  }
  if (int err = bpf_map__set_max_entries(events_, static_cast<__u32>(ring_size())); err) {
    error = "the events ring buffer cannot be " + std::to_string(ring_size()) + " bytes: " + errno_text(err);
    return false;
  }
  if (bpf_map__max_entries(lost_) < manifest_.probes.size()) {
    error = "BPF object: map 'weave_lost' has " + std::to_string(bpf_map__max_entries(lost_)) +
            " slots for " + std::to_string(manifest_.probes.size()) + " probes";
    return false;
  }
  // weave_hits came later than the other maps: an object without it still traces, and --stats
  // then says that hits are unknown.
  hits_ = bpf_object__find_map_by_name(object_, "weave_hits");
  if (hits_ && (bpf_map__type(hits_) != BPF_MAP_TYPE_PERCPU_ARRAY ||
                bpf_map__max_entries(hits_) < manifest_.probes.size())) {
    error = "BPF object: map 'weave_hits' has the wrong type or size (see templates/weave_bpf.h)";
    return false;
  }

  for (auto [map, name] : {std::pair{&filtered_, "weave_filtered"}, std::pair{&limited_, "weave_limited"},
                           std::pair{&evicted_, "weave_evicted"}, std::pair{&held_, "weave_held"},
                           std::pair{&busy_, "weave_scratch_busy"}}) {
    *map = bpf_object__find_map_by_name(object_, name);
    if (*map && (bpf_map__type(*map) != BPF_MAP_TYPE_PERCPU_ARRAY ||
                 bpf_map__max_entries(*map) < manifest_.probes.size())) {
      error = std::string("BPF object: map '") + name + "' has the wrong type or size (see templates/weave_bpf.h)";
      return false;
    }
  }

  // How to attach is settled now: the expected attach type is part of what the verifier checks
  // (bpf_get_attach_cookie reads a uprobe_multi link's cookies differently from a perf event's).
  method_ = method;
  if (method == AttachMethod::Perf) {
    method_reason_ = "forced with --attach perf";
  } else {
    std::string why;
    bool multi = probe_uprobe_multi(why);
    if (multi) {
      method_ = AttachMethod::Multi;
      method_reason_ = method == AttachMethod::Multi ? "forced with --attach multi"
                                                     : "the kernel has uprobe_multi";
    } else if (method == AttachMethod::Multi) {
      error = "--attach multi: this kernel cannot create uprobe_multi links (Linux 6.6 or later "
              "needed): " +
              why;
      if (why.find("Operation not permitted") != std::string::npos)
        error += kPrivilegeHint;
      return false;
    } else {
      method_ = AttachMethod::Perf;
      method_reason_ = "no uprobe_multi: " + why;
    }
  }
  if (method_ == AttachMethod::Multi)
    for (bpf_program *program : programs_)
      bpf_program__set_expected_attach_type(
          program, static_cast<enum bpf_attach_type>(kBpfTraceUprobeMulti));
  if (method_ == AttachMethod::Multi && manifest_.spawn)
    for (bpf_program *program : spawn_programs_)
      bpf_program__set_expected_attach_type(program, static_cast<enum bpf_attach_type>(kBpfTraceUprobeMulti));

  int err = bpf_object__load(object_);
  if (err) {
    if (err == -EPERM || (err == -EACCES && geteuid() != 0)) {
      error = "cannot load BPF programs: " + errno_text(err) + kPrivilegeHint;
      // libbpf's own explanation (RLIMIT_MEMLOCK, CONFIG_BPF_SYSCALL) misleads here.
      if (g_verbosity == 0)
        g_backlog.clear();
    } else
      error = "cannot load BPF programs: " + errno_text(err) +
              (g_verbosity ? "" : " (libbpf's messages follow)");
    return false;
  }
  return true;
}

bool Loader::set_target_tgid(uint32_t tgid, std::string &error) {
  uint32_t key = 0;
  struct weave_config config = {};
  config.target_tgid = tgid;
  int err = bpf_map__update_elem(config_, &key, sizeof key, &config, sizeof config, BPF_ANY);
  if (err) {
    error = "map 'weave_config': cannot set the pid filter: " + errno_text(err);
    return false;
  }
  return true;
}

bool Loader::enable_run_time_stats(std::string &error) {
  if (stats_fd_ >= 0)
    return true;
  int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd < 0) {
    error = "cannot enable BPF run-time statistics: " + errno_text(errno);
    return false;
  }
  stats_fd_ = fd;
  return true;
}

bool Loader::attach(const std::string &binary_path, const std::string &display,
                    std::string &error) {
  // libbpf searches $PATH (or the library path) for a name without a slash; the binary named
  // here is a file relative to the current directory, as the build id check read it.
  std::string path = binary_path.find('/') == std::string::npos ? "./" + binary_path : binary_path;
  double start = monotonic_seconds();
  if (multi_links_.empty() && perf_links_.empty())
    attached_points_ = spawn_links_ = spawn_points_ = 0; // attached again after detach() (BinaryWatch): count afresh
  bool ok = true;
  // Returns first, entries last. A function that is a single RET has its entry point and a return
  // point at one address, and the kernel runs the handlers of one address newest first (the
  // consumer list is prepended to: kernel/events/uprobes.c, consumer_add): this way such a call's
  // entry event comes before its return, which then finds the entry it pairs with.
  // e2e test_zerosize's main.Same checks the order on the kernel it runs on.
  auto is_return = [&](size_t probe_id) {
    const auto &attach = manifest_.probes[probe_id].attach;
    return !attach.empty() && attach.front().kind == AttachKind::Return;
  };
  for (bool returns : {true, false}) {
    // The spawn probe's RETs before its entry, as the probes': a goroutine made while attaching
    // is then either seen whole or not at all.
    if (ok && manifest_.spawn)
      ok = attach_spawn(path, display, returns, error);
    if (method_ == AttachMethod::Multi) {
      for (size_t i = 0; ok && i < programs_.size(); ++i)
        if (!probes_of_program_[i].empty() && is_return(probes_of_program_[i].front()) == returns)
          ok = attach_multi(i, path, display, error);
    } else {
      for (size_t i = 0; ok && i < manifest_.probes.size(); ++i)
        if (is_return(i) == returns)
          ok = attach_perf(i, path, display, error);
    }
  }
  attach_seconds_ = monotonic_seconds() - start;
  return ok;
}

// The spawn probe (Manifest::spawn): its entry program at the function's entry, or its return
// program at every RET, in one uprobe_multi link or one perf-event link per point. No cookie: the
// programs serve nothing else.
bool Loader::attach_spawn(const std::string &path, const std::string &display, bool returns, std::string &error) {
  const std::vector<uint64_t> &offsets = returns ? manifest_.spawn->return_offsets : manifest_.spawn->entry_offsets;
  bpf_program *program = spawn_programs_[returns ? 1 : 0];
  std::string what = "the spawn probe on " + manifest_.spawn->function + " (" + (returns ? "RET" : "entry") + ")";
  if (method_ == AttachMethod::Multi) {
    std::vector<uint64_t> cookies(offsets.size(), 0);
    int fd = create_uprobe_multi_link(bpf_program__fd(program), path.c_str(), offsets.data(), cookies.data(),
                                      static_cast<uint32_t>(offsets.size()));
    if (fd < 0) {
      error = what + ": attach at " + describe_points(offsets) + " in " + display + " failed: " + errno_text(fd);
      if (fd == -EPERM || fd == -EACCES)
        error += kPrivilegeHint;
      return false;
    }
    multi_links_.push_back(fd);
    ++spawn_links_;
    spawn_points_ += offsets.size();
    return true;
  }
  for (uint64_t offset : offsets) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = 0, .retprobe = false);
    bpf_link *link = bpf_program__attach_uprobe_opts(program, -1, path.c_str(), offset, &opts);
    if (!link) {
      int err = errno;
      error = what + ": attach at " + hex(offset) + " in " + display + " failed: " + errno_text(err);
      if (err == EPERM || err == EACCES)
        error += kPrivilegeHint;
      return false;
    }
    perf_links_.push_back(link);
    ++spawn_links_;
    ++spawn_points_;
  }
  return true;
}

// Go's returns are probed at their RET instructions, never with uretprobes (which break when the
// goroutine's stack moves), so every attach point is a plain uprobe. Both ways attach in every
// process that maps the binary (pid filter 0 or -1); the BPF side filters by weave_config, which
// also covers a command started after attaching.
bool Loader::attach_multi(size_t program, const std::string &path, const std::string &display,
                          std::string &error) {
  // Every attach point of every probe the program serves, in one link.
  const std::vector<size_t> &probes = probes_of_program_[program];
  std::vector<uint64_t> offsets, cookies;
  for (size_t id : probes)
    for (const ManifestAttach &point : manifest_.probes[id].attach) {
      offsets.push_back(point.file_offset);
      cookies.push_back(point.cookie);
    }
  if (offsets.empty())
    return true;
  std::string names = "probe '" + manifest_.probes[probes.front()].name + "'";
  if (probes.size() > 1)
    names += " and " + std::to_string(probes.size() - 1) + " more of its shape (program '" +
             bpf_program__name(programs_[program]) + "')";
  int fd =
      create_uprobe_multi_link(bpf_program__fd(programs_[program]), path.c_str(), offsets.data(),
                               cookies.data(), static_cast<uint32_t>(offsets.size()));
  if (fd < 0) {
    // One link fails as a whole; the usual culprit, an offset past the end of the file (EINVAL
    // from uprobe_register), can be named.
    std::vector<uint64_t> culprits = offsets;
    struct stat st;
    if (fd == -EINVAL && stat(path.c_str(), &st) == 0) {
      std::vector<uint64_t> past;
      for (uint64_t offset : offsets)
        if (offset > static_cast<uint64_t>(st.st_size))
          past.push_back(offset);
      if (!past.empty())
        culprits = past;
    }
    error = names + ": attach at " + describe_points(culprits) + " in " + display +
            " failed: " + errno_text(fd);
    if (culprits.size() < offsets.size())
      error += " (past the end of the file)";
    if (fd == -EPERM || fd == -EACCES)
      error += kPrivilegeHint;
    return false;
  }
  multi_links_.push_back(fd);
  attached_points_ += offsets.size();
  return true;
}

bool Loader::attach_perf(size_t probe_id, const std::string &path, const std::string &display,
                         std::string &error) {
  const ManifestProbe &probe = manifest_.probes[probe_id];
  for (const ManifestAttach &point : probe.attach) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = point.cookie, .retprobe = false);
    bpf_program *program = programs_[program_of_probe_[probe_id]];
    bpf_link *link =
        bpf_program__attach_uprobe_opts(program, -1, path.c_str(), point.file_offset, &opts);
    if (!link) {
      int err = errno;
      error = "probe '" + probe.name + "': attach at " + hex(point.file_offset) + " in " + display +
              " failed: " + errno_text(err);
      if (err == EPERM || err == EACCES)
        error += kPrivilegeHint;
      return false;
    }
    perf_links_.push_back(link);
    ++attached_points_;
  }
  return true;
}

void Loader::detach() {
  if (multi_links_.empty() && perf_links_.empty())
    return;
  double start = monotonic_seconds();
  // Every close waits for grace periods in the kernel (uprobe_unregister_sync: RCU tasks trace,
  // then SRCU), and waits that overlap share one. Measured on this machine (Linux 6.18):
  //  - uprobe_multi links: ~50 ms each one after the other; 2,000 links close in ~0.2 s from
  //    1,024 threads instead of ~100 s, and 20 in 0.07 s instead of 1.3 s.
  //  - perf-event links: ~100 ms each however many threads close them (20: 1.9 s from one
  //    thread, 1.6 s from 20), because perf_uprobe_destroy holds the global event_mutex across
  //    the unregister and its grace period. Closing them in parallel is still right where a
  //    kernel does not serialize them, and costs nothing where it does.
  constexpr size_t kMaxThreads = 1024;
  struct Links {
    std::vector<int> &multi;
    std::vector<bpf_link *> &perf;
  } links{multi_links_, perf_links_};
  run_in_parallel(
      multi_links_.size() + perf_links_.size(), kMaxThreads,
      [](void *context, size_t i) {
        auto *l = static_cast<Links *>(context);
        if (i < l->multi.size())
          close(l->multi[i]);
        else
          bpf_link__destroy(l->perf[i - l->multi.size()]);
      },
      &links);
  multi_links_.clear();
  perf_links_.clear();
  spawn_links_ = 0;
  detach_seconds_ = monotonic_seconds() - start;
}

int Loader::events_fd() const {
  return bpf_map__fd(events_);
}

bool Loader::read_counters(bpf_map *map, const char *name, std::vector<uint64_t> &out,
                           std::string &error) const {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) {
    error = "cannot count possible CPUs: " + errno_text(cpus);
    return false;
  }
  // A per-CPU map returns one value per possible CPU, each rounded up to 8 bytes.
  std::vector<uint64_t> values(static_cast<size_t>(cpus));
  out.assign(manifest_.probes.size(), 0);
  for (uint32_t id = 0; id < manifest_.probes.size(); ++id) {
    int err = bpf_map__lookup_elem(map, &id, sizeof id, values.data(),
                                   values.size() * sizeof(uint64_t), 0);
    if (err) {
      error = std::string("map '") + name + "': cannot read probe " + std::to_string(id) + ": " +
              errno_text(err);
      return false;
    }
    for (uint64_t v : values)
      out[id] += v;
  }
  return true;
}

// Lost: no room in the ring buffer (weave_lost), or no free scratch record to build the event in
// (weave_scratch_busy, templates/weave_bpf.h): either way a hit that is not an event.
bool Loader::lost_per_probe(std::vector<uint64_t> &lost, std::string &error) const {
  std::vector<uint64_t> busy;
  if (!read_counters(lost_, "weave_lost", lost, error) || !busy_per_probe(busy, error))
    return false;
  for (size_t i = 0; i < lost.size(); ++i)
    lost[i] += busy[i];
  return true;
}

bool Loader::busy_per_probe(std::vector<uint64_t> &busy, std::string &error) const {
  error.clear();
  if (!busy_) {
    busy.assign(manifest_.probes.size(), 0);
    return true;
  }
  return read_counters(busy_, "weave_scratch_busy", busy, error);
}

bool Loader::hits_per_probe(std::vector<uint64_t> &hits, std::string &error) const {
  error.clear();
  return hits_ && read_counters(hits_, "weave_hits", hits, error);
}

bool Loader::filtered_per_probe(std::vector<uint64_t> &filtered, std::string &error) const {
  error.clear();
  return filtered_ && read_counters(filtered_, "weave_filtered", filtered, error);
}

bool Loader::limited_per_probe(std::vector<uint64_t> &limited, std::string &error) const {
  error.clear();
  return limited_ && read_counters(limited_, "weave_limited", limited, error);
}

bool Loader::evicted_per_probe(std::vector<uint64_t> &evicted, std::string &error) const {
  error.clear();
  return evicted_ && read_counters(evicted_, "weave_evicted", evicted, error);
}

bool Loader::held_per_probe(std::vector<uint64_t> &held, std::string &error) const {
  error.clear();
  return held_ && read_counters(held_, "weave_held", held, error);
}

bool Loader::run_stats_per_program(std::vector<ProgramStats> &stats, std::string &error) const {
  if (stats_fd_ < 0) {
    error = "BPF run-time statistics are not enabled";
    return false;
  }
  stats.assign(programs_.size(), {});
  for (size_t i = 0; i < programs_.size(); ++i) {
    struct bpf_prog_info info;
    std::memset(&info, 0, sizeof info);
    uint32_t size = sizeof info;
    if (bpf_obj_get_info_by_fd(bpf_program__fd(programs_[i]), &info, &size) != 0) {
      error = std::string("program '") + bpf_program__name(programs_[i]) +
              "': cannot read its statistics: " + errno_text(errno);
      return false;
    }
    stats[i] = {info.run_cnt, info.run_time_ns};
  }
  return true;
}

bool Loader::spawn_run_stats(ProgramStats &entry, ProgramStats &ret, std::string &error) const {
  if (!has_spawn()) {
    error = "no spawn probe";
    return false;
  }
  if (stats_fd_ < 0) {
    error = "BPF run-time statistics are not enabled";
    return false;
  }
  ProgramStats *out[2] = {&entry, &ret};
  for (int i = 0; i < 2; ++i) {
    struct bpf_prog_info info;
    std::memset(&info, 0, sizeof info);
    uint32_t size = sizeof info;
    if (bpf_obj_get_info_by_fd(bpf_program__fd(spawn_programs_[i]), &info, &size) != 0) {
      error = std::string("program '") + bpf_program__name(spawn_programs_[i]) +
              "': cannot read its statistics: " + errno_text(errno);
      return false;
    }
    *out[i] = {info.run_cnt, info.run_time_ns};
  }
  return true;
}

} // namespace weave
