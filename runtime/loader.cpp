#include "loader.h"

#include <algorithm>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <unistd.h>

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

} // namespace

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
}

bool Loader::load(std::string_view object, std::string &error) {
  LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = "weave_probes");
  object_ = bpf_object__open_mem(object.data(), object.size(), &opts);
  if (!object_) {
    error = "BPF object: cannot open: " + errno_text(errno);
    return false;
  }
  for (const ManifestProbe &probe : manifest_.probes) {
    bpf_program *program = bpf_object__find_program_by_name(object_, probe.program.c_str());
    if (!program) {
      error = "probe '" + probe.name + "': program '" + probe.program +
              "' is not in the BPF object; the manifest and the object do not belong together";
      return false;
    }
    programs_.push_back(program);
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
  if (bpf_map__max_entries(lost_) < manifest_.probes.size()) {
    error = "BPF object: map 'weave_lost' has " + std::to_string(bpf_map__max_entries(lost_)) +
            " slots for " + std::to_string(manifest_.probes.size()) + " probes";
    return false;
  }

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

bool Loader::attach(const std::string &binary_path, const std::string &display,
                    std::string &error) {
  // libbpf searches $PATH (or the library path) for a name without a slash; the binary named
  // here is a file relative to the current directory, as the build id check read it.
  std::string path = binary_path.find('/') == std::string::npos ? "./" + binary_path : binary_path;
  for (size_t i = 0; i < manifest_.probes.size(); ++i) {
    const ManifestProbe &probe = manifest_.probes[i];
    for (const ManifestAttach &point : probe.attach) {
      // Go's returns are probed at their RET instructions, never with uretprobes (which break
      // when the goroutine's stack moves), so every attach point is a plain uprobe.
      LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = point.cookie, .retprobe = false);
      // pid -1: every process that maps the binary; the BPF side filters by weave_config.
      bpf_link *link =
          bpf_program__attach_uprobe_opts(programs_[i], -1, path.c_str(), point.file_offset, &opts);
      if (!link) {
        int err = errno;
        error = "probe '" + probe.name + "': attach at " + hex(point.file_offset) + " in " +
                display + " failed: " + errno_text(err);
        if (err == EPERM || err == EACCES)
          error += kPrivilegeHint;
        return false;
      }
      links_.push_back(link);
    }
  }
  return true;
}

void Loader::detach() {
  for (bpf_link *link : links_)
    bpf_link__destroy(link);
  links_.clear();
}

int Loader::events_fd() const {
  return bpf_map__fd(events_);
}

bool Loader::lost_per_probe(std::vector<uint64_t> &lost, std::string &error) const {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) {
    error = "cannot count possible CPUs: " + errno_text(cpus);
    return false;
  }
  // A per-CPU map returns one value per possible CPU, each rounded up to 8 bytes.
  std::vector<uint64_t> values(static_cast<size_t>(cpus));
  lost.assign(manifest_.probes.size(), 0);
  for (uint32_t id = 0; id < manifest_.probes.size(); ++id) {
    int err = bpf_map__lookup_elem(lost_, &id, sizeof id, values.data(),
                                   values.size() * sizeof(uint64_t), 0);
    if (err) {
      error = "map 'weave_lost': cannot read probe " + std::to_string(id) + ": " + errno_text(err);
      return false;
    }
    for (uint64_t v : values)
      lost[id] += v;
  }
  return true;
}

} // namespace weave
