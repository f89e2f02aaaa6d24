// weave-tracer: the runtime half of a weave tracer. `weave build` appends a BPF object and its
// manifest to a copy of this program (payload.h); run, it attaches the probes to a Go binary and
// prints one line per event until the traced program exits or it is interrupted.
//
//   tracer [--format text|json] [-o FILE] [--pid N] [--binary PATH] [--attach auto|multi|perf]
//          [--stats[=SECONDS]] [--graph] [--no-summary] [--exit-after-attach] [-v] [--version]
//          [--otlp URL] [--otlp-timeout SECONDS] [--service-name NAME] [--metrics ADDR:PORT]
//          [-- CMD ARGS...]
#include <CLI/CLI.hpp>
#include <bpf/libbpf.h>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fcntl.h>
#include <fmt/core.h>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <malloc.h>
#include <unistd.h>

#include "binary_watch.h"
#include "calls.h"
#include "common/color.h"
#include "common/tracer_options.h"
#include "fleet.h"
#include "gobinary/elf_notes.h"
#include "loader.h"
#include "manifest.h"
#include "output.h"
#include "symbolize.h"
#include "payload.h"
#include "ring.h"
#include "stats.h"
#include "views.h"

// What this executable is, for `weave build` and `weave check` to read before they trust it as a
// tracer runtime (payload.h: kRuntimeNoteOwner, runtime_note_text): an ELF note in a section of its
// own, kept by the linker and by strip, whatever else the file holds.
#if defined(__x86_64__)
#define WEAVE_RUNTIME_ARCH "amd64"
#elif defined(__aarch64__)
#define WEAVE_RUNTIME_ARCH "arm64"
#else
#error "weave-tracer runs on amd64 and arm64"
#endif
__asm__(".pushsection .note.weave.runtime,\"a\",%note\n"
        ".balign 4\n"
        ".long 6\n"           // n_namesz: "weave" and its NUL
        ".long 2f - 1f\n"     // n_descsz
        ".long 1\n"           // n_type: kRuntimeNoteType
        ".asciz \"weave\"\n"
        ".balign 4\n"
        "1: .asciz \"weave-tracer " WEAVE_VERSION " " WEAVE_RUNTIME_ARCH "\"\n"
        "2: .balign 4\n"
        ".popsection\n");

namespace {

using namespace weave;

constexpr int kExitSetup = 2;      // usage and setup errors: nothing was traced
constexpr int kExitRuntime = 1;    // tracing started but broke
constexpr int kExitNotFound = 127; // the command after -- could not be run, as in a shell

template <typename... Args> void say(fmt::format_string<Args...> format, Args &&...args) {
  fmt::print(stderr, "weave: {}\n", fmt::format(format, std::forward<Args>(args)...));
}

std::string count(size_t n, const char *noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

uint64_t monotonic_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
}

// ---- Signals ----------------------------------------------------------------------------------
// The handler only records and forwards; the poll loop notices within one poll timeout because
// the signal interrupts epoll_wait (installed without SA_RESTART).
volatile sig_atomic_t g_signal = 0;       // the last SIGINT/SIGTERM
volatile sig_atomic_t g_signal_count = 0; // how many arrived
volatile pid_t g_child = 0;               // the command started after --, once it runs

void on_signal(int sig, siginfo_t *info, void *) {
  g_signal = sig;
  g_signal_count = g_signal_count + 1;
  // Ctrl-C reaches the whole foreground process group, the child included, and then arrives here
  // as SI_KERNEL: forwarding it would deliver it twice. A `kill` aimed at the tracer alone
  // (SI_USER) is passed on.
  if (g_child > 0 && info->si_code != SI_KERNEL)
    kill(g_child, sig);
}

void install_signal_handlers() {
  struct sigaction sa = {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // A closed stdout (`tracer | head`) becomes a write error the loop handles, not a silent death
  // that would skip the summary.
  signal(SIGPIPE, SIG_IGN);
}

// ---- Command line -----------------------------------------------------------------------------
// "64M" -> 67108864: a power of two from 4 KiB to 1 GiB, with an optional K, M or G; 0 when it is not.
uint64_t ring_size_bytes(const std::string &text) {
  size_t digits = 0;
  while (digits < text.size() && digits < 12 && text[digits] >= '0' && text[digits] <= '9')
    ++digits;
  if (digits == 0 || text.size() - digits > 1)
    return 0;
  uint64_t n = std::stoull(text.substr(0, digits));
  if (digits < text.size()) {
    char unit = text.back();
    int shift = unit == 'K' || unit == 'k' ? 10 : unit == 'M' || unit == 'm' ? 20 : unit == 'G' || unit == 'g' ? 30 : -1;
    if (shift < 0 || n > (uint64_t{1} << 30))
      return 0;
    n <<= shift;
  }
  if (n < 4096 || n > (uint64_t{1} << 30) || (n & (n - 1)))
    return 0;
  return n;
}

struct Options {
  std::string format = "text";
  std::string output;             // events (or --graph's trees) go here instead of stdout
  std::string color = "auto";     // text events coloured: auto (a terminal, no NO_COLOR), always, never
  pid_t pid = 0;
  std::string binary;
  std::string attach = "auto";
  int stats = -1;                 // -1: off; 0: at exit; N: also every N seconds
  std::string ring_size;          // --ring-size BYTES[K|M|G]: "" for the manifest's or the default
  bool exit_after_attach = false; // attach, detach, exit: measures attaching
  bool graph = false;             // per-goroutine call trees instead of a line per event
  std::string folded;             // --folded FILE
  std::string folded_weight = "calls";
  std::string perfetto;           // --perfetto FILE
  std::string otlp;               // --otlp URL: spans to an OpenTelemetry collector (fleet.h)
  int otlp_timeout = 0;           // --otlp-timeout SECONDS: a request's and the exit's (0: the defaults)
  std::string service_name;       // --service-name: their service.name
  std::string metrics;            // --metrics ADDR:PORT: Prometheus /metrics (fleet.h)
  bool no_summary = false;        // no latency summary at exit
  int verbosity = 0;
  bool version = false;
  std::string object_path;          // debugging: instead of the embedded payload
  std::string manifest_path;        // debugging: instead of the embedded payload
  std::vector<std::string> command; // after --
};

// Returns -1 to go on, else the exit code.
// A whole number in [min, max] for an option, or a message saying what is wanted. CLI11's own range
// validators name their upper bound, the largest double written out in ~300 digits.
CLI::Validator whole_number(long long min, long long max, const std::string &wanted) {
  return CLI::Validator(
      [=](std::string &text) -> std::string {
        char *end = nullptr;
        errno = 0;
        long long value = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE || value < min || value > max)
          return "must be " + wanted + ", not '" + text + "'";
        return "";
      },
      "");
}

// What process `pid` runs, for messages: its executable's path, or /proc/PID/exe when unreadable.
std::string process_exe_name(pid_t pid) {
  std::error_code ec;
  std::string link = "/proc/" + std::to_string(pid) + "/exe";
  std::filesystem::path target = std::filesystem::read_symlink(link, ec);
  return ec ? link : target.string();
}

// "" when the parser's options are exactly common/tracer_options.h's, else what differs: weave run and
// weave trace offer and pass on the table's options, so the two must not drift.
std::string options_match_table(const CLI::App &app) {
  size_t registered = 0;
  for (const CLI::Option *option : app.get_options()) {
    if (option == app.get_help_ptr())
      continue;
    ++registered;
    const std::string name = "--" + option->get_lnames().front();
    bool found = false;
    for (const TracerOption &entry : kTracerOptions)
      found |= name == entry.name;
    if (!found)
      return "the option " + name + " is not in common/tracer_options.h";
  }
  for (const TracerOption &entry : kTracerOptions)
    if (!app.get_option_no_throw(entry.name))
      return std::string("common/tracer_options.h lists ") + entry.name + ", which the tracer does not take";
  return registered == std::size(kTracerOptions) ? "" : "common/tracer_options.h repeats an option";
}

int parse_command_line(int argc, char **argv, Options &opt) {
  // Everything after the first "--" is the command, taken verbatim: CLI11 would otherwise try to
  // read the command's own flags (`-rounds 2`) as ours.
  int ours = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      ours = i;
      opt.command.assign(argv + i + 1, argv + argc);
      break;
    }

  CLI::App app{"Traces the Go functions this tracer was built for (by `weave build`) and prints "
               "one line per call.",
               "tracer"};
  // CLI11 cannot declare what follows "--" (it is split off above), so the usage line says it.
  struct UsageWithCommand : CLI::Formatter {
    std::string make_usage(const CLI::App *, std::string name) const override {
      return "Usage: " + name + " [OPTIONS] [-- CMD ARGS...]\n";
    }
  };
  app.formatter(std::make_shared<UsageWithCommand>());
  // Every option's help is the shared table's (common/tracer_options.h), which weave run and weave
  // trace pass on from; options_match_table below keeps the two the same.
  auto help = [](const char *name) { return std::string(tracer_option(name).help); };
  app.add_option("--format", opt.format, help("--format"))
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("-o,--output", opt.output, help("--output"));
  app.add_option("--color", opt.color, help("--color"))
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("--pid", opt.pid, help("--pid"))
      ->check(whole_number(1, 0x3fffffff, "a process id (a number from 1 up)"))
      ->type_name("N");
  app.add_option("--binary", opt.binary, help("--binary"));
  app.add_option("--attach", opt.attach, help("--attach"))
      ->check(CLI::IsMember({"auto", "multi", "perf"}))
      ->capture_default_str();
  app.add_option("--ring-size", opt.ring_size, help("--ring-size"))
      ->check([](const std::string &text) { return ring_size_bytes(text) ? std::string() : std::string("expected a power of two from 4K to 1G, e.g. 16M or 67108864"); })
      ->type_name("BYTES");
  app.add_option("--stats", opt.stats, help("--stats"))
      ->expected(0, 1)
      ->default_str("0")
      ->check(whole_number(0, 0x7fffffff, "a number of seconds (0: only at exit)"))
      ->option_text("[SECONDS]"); // plain --stats is the usual form: no type, no "=0" default
  app.add_option("--folded", opt.folded, help("--folded"))->type_name("FILE");
  app.add_option("--folded-weight", opt.folded_weight, help("--folded-weight"))
      ->check(CLI::IsMember({"calls", "time"}))
      ->type_name("calls|time");
  app.add_option("--perfetto", opt.perfetto, help("--perfetto"))->type_name("FILE");
  app.add_option("--otlp", opt.otlp, help("--otlp"))->type_name("URL");
  app.add_option("--otlp-timeout", opt.otlp_timeout, help("--otlp-timeout"))
      ->check(whole_number(1, 3600, "a number of seconds from 1 to 3600"))
      ->type_name("SECONDS");
  app.add_option("--service-name", opt.service_name, help("--service-name"))->type_name("NAME");
  app.add_option("--metrics", opt.metrics, help("--metrics"))->type_name("ADDR:PORT");
  app.add_flag("--graph", opt.graph, help("--graph"));
  app.add_flag("--no-summary", opt.no_summary, help("--no-summary"));
  app.add_flag("--exit-after-attach", opt.exit_after_attach, help("--exit-after-attach"));
  app.add_flag("-v,--verbose", opt.verbosity, help("--verbose"));
  app.add_flag("--version", opt.version, help("--version"));
  auto *object = app.add_option("--object", opt.object_path, help("--object"));
  auto *manifest = app.add_option("--manifest", opt.manifest_path, help("--manifest"));
  object->needs(manifest);
  manifest->needs(object);
  app.allow_extras();
  if (std::string mismatch = options_match_table(app); !mismatch.empty()) {
    say("internal error: {}", mismatch);
    return 70;
  }
  app.footer("  -- CMD ARGS...             attach first, then run CMD and trace only it; exit "
             "with its status\n\nWithout --pid or --, every process running the binary is "
             "traced until Ctrl-C.\n"
             "\n"
             "Examples:\n"
             "  weave-out/tracer -- ./bin args     # attach first, then start the program; exit when it exits\n"
             "  weave-out/tracer --pid 1234        # trace one running process\n"
             "  weave-out/tracer                   # trace every process running the binary\n"
             "  weave-out/tracer --format json     # JSON lines\n"
             "  weave-out/tracer --graph -- ./bin  # per-goroutine call trees with durations\n"
             "  weave-out/tracer --stats=5         # per-probe hits, events, lost, BPF time: every 5 s and at exit\n"
             "  weave-out/tracer --otlp http://127.0.0.1:4318 --metrics 127.0.0.1:9464  # spans to a collector, metrics for Prometheus");
  try {
    app.parse(ours, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e); // prints help, or the error with a hint
    return code == 0 ? 0 : kExitSetup;
  }
  if (std::vector<std::string> extras = app.remaining(); !extras.empty()) {
    const std::string &extra = extras.front(); // remaining() returns a copy: keep it alive
    if (extra.size() > 1 && extra[0] == '-')
      say("unknown option '{}' (see --help)", extra);
    else
      say("unexpected argument '{}'; to start a program, put it after --: tracer [options] -- "
          "CMD ARGS...",
          extra);
    return kExitSetup;
  }
  if (opt.pid && !opt.command.empty()) {
    say("--pid and -- CMD exclude each other: trace a running process, or start one");
    return kExitSetup;
  }
  if (opt.graph && opt.format == "json") {
    say("--graph prints text trees; it cannot be combined with --format json (JSON lines carry "
        "goid and duration_ns to build trees from)");
    return kExitSetup;
  }
  // The export addresses, checked before anything is loaded or attached.
  HttpEndpoint endpoint;
  std::string address_error;
  // Given but empty ("--metrics ''", an unset shell variable) is a mistake, not "off".
  for (const char *name : {"--otlp", "--metrics", "--service-name", "--output", "--perfetto", "--folded"})
    if (app.count(name) > 0 && app.get_option(name)->as<std::string>().empty()) {
      say("{} was given an empty value", name);
      return kExitSetup;
    }
  if (!opt.otlp.empty() && !parse_http_url(opt.otlp, endpoint, address_error)) {
    say("--otlp {}", address_error);
    return kExitSetup;
  }
  if (!opt.metrics.empty() && !parse_listen_address(opt.metrics, endpoint, address_error)) {
    say("--metrics {}: {}", opt.metrics, address_error);
    return kExitSetup;
  }
  if (opt.otlp_timeout && opt.otlp.empty()) {
    say("--otlp-timeout is for the spans --otlp sends; give --otlp URL too");
    return kExitSetup;
  }
  if (!opt.service_name.empty() && opt.otlp.empty()) {
    say("--service-name names the spans --otlp sends; give --otlp URL too");
    return kExitSetup;
  }
  if (ours < argc && opt.command.empty()) {
    say("nothing after --: give the command to run");
    return kExitSetup;
  }
  return -1;
}

bool read_file(const std::string &path, std::string &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return true;
}

// Resolves a command the way execvp would: as is when it has a slash, else the first executable
// regular file of that name in $PATH. "" when there is none, which fails like a shell does (127).
std::string find_command(const std::string &command) {
  if (command.find('/') != std::string::npos)
    return access(command.c_str(), X_OK) == 0 ? command : std::string();
  const char *env = getenv("PATH");
  std::string path = env ? env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? colon : colon - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + command;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string::npos)
      break;
    start = colon + 1;
  }
  return {};
}

// Whether process `pid` still runs: it exists and is not a zombie waiting for its parent.
bool process_alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno != EPERM)
    return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line))
    return false;
  size_t paren = line.rfind(')'); // the command name in parentheses may itself hold ") "
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
}

// The binary weave recorded (generator/plan: recorded_target_path): absolute, or relative to the
// directory weave wrote this tracer into, so the tracer finds it from any working directory.
std::string recorded_binary(const Manifest &m) {
  const std::string &path = m.target.path;
  if (path.empty() || path[0] == '/')
    return path;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return path;
  self[n] = '\0';
  return (std::filesystem::path(self).parent_path() / path).lexically_normal().string();
}

int exit_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void print_version(const Manifest *m) {
  fmt::print("weave-tracer {}\n", WEAVE_VERSION);
  if (!m) {
    fmt::print("no probes: this is the runtime alone; `weave build` makes a tracer\n");
    return;
  }
  fmt::print("built by weave {} (manifest format {})\n",
             m->weave_version.empty() ? "?" : m->weave_version, m->format);
  std::string resolved = recorded_binary(*m);
  fmt::print("target: {}{}\nbuild id: {}\ngo: {} {}\n", m->target.path,
             resolved == m->target.path ? "" : " (from this tracer's directory: " + resolved + ")",
             m->target.build_id, m->target.go_version, m->target.arch);
  fmt::print("{} at {}\n", count(m->probes.size(), "probe"),
             count(m->attach_count(), "attach point"));
}

// ---- The command after -- ---------------------------------------------------------------------
// The child is forked before anything is attached and waits on a pipe; the tracer attaches,
// filters on the child's pid, and only then lets it exec. So no call is missed, and nothing but
// the child is traced. If the tracer fails, it closes the pipe and the child exits unexec'd.
struct Child {
  pid_t pid = 0;
  int release_fd = -1;
};

Child fork_waiting_child(const std::string &path, const std::vector<std::string> &command) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return {};
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {};
  }
  if (pid == 0) {
    close(fds[1]);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL); // ignored dispositions survive exec; the program expects defaults
    char go;
    ssize_t n;
    do
      n = read(fds[0], &go, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
      _exit(kExitNotFound); // the tracer could not attach and has said why
    std::vector<char *> argv;
    for (const std::string &arg : command)
      argv.push_back(const_cast<char *>(arg.c_str()));
    argv.push_back(nullptr);
    // The resolved path, not execvp: it is the file whose build id was checked.
    execv(path.c_str(), argv.data());
    fmt::print(stderr, "weave: cannot run '{}': {}\n", command[0], std::strerror(errno));
    _exit(kExitNotFound);
  }
  close(fds[0]);
  return {pid, fds[1]};
}

// Host-wide, the file traced may be rewritten or replaced while the tracer runs: BinaryWatch
// detaches from bytes the probes were not made for and attaches again when the build is back.
std::unique_ptr<BinaryWatch> watch_binary(Loader &loader, const std::string &binary, const Manifest &manifest) {
  auto watch = std::make_unique<BinaryWatch>(loader, binary, manifest.target.build_id);
  if (std::string error; !watch->start(error)) {
    say("{}; a rewrite of the binary while tracing will not be noticed", error);
    return nullptr;
  }
  return watch;
}

// ---- Sinks: where the decoded events go -------------------------------------------------------
// The ring buffer hands each record to the Calls stage (calls.h), which decodes it and pairs its
// call once; Sinks passes every decoded event on to the writer (which counts it, and prints it
// unless --graph), the views and the exporters.
struct Sinks final : EventSink {
  Calls calls;
  EventWriter writer;
  Views views;
  std::unique_ptr<OtlpExporter> otlp;       // --otlp
  std::unique_ptr<MetricsExporter> metrics; // --metrics
  std::unique_ptr<Symbolizer> symbolizer;   // stacks, func values, dynamic types

  Sinks(const Manifest &manifest, const Options &opt, uint64_t start_ns, int out_fd)
      : calls(manifest, start_ns),
        // With --graph the trees go to the output and the writer only counts every event (the
        // summary, --stats).
        writer(manifest, opt.format == "json" ? OutputFormat::Json : OutputFormat::Text, start_ns,
               opt.graph ? -1 : out_fd),
        views(calls,
              {.graph = opt.graph,
               .summary = !opt.no_summary,
               .folded = opt.folded,
               .folded_weight = opt.folded_weight == "time" ? FoldedStacks::Weight::Time : FoldedStacks::Weight::Calls,
               .perfetto = opt.perfetto},
              start_ns, out_fd) {
    calls.add_sink(this);
  }
  void on_event(const CallEvent &event) override {
    writer.on_event(event);
    views.on_event(event);
    if (otlp)
      otlp->on_event(event);
    if (metrics)
      metrics->on_event(event);
  }
  void flush() {
    writer.flush();
    views.flush();
  }
  bool failed() const { return writer.failed() || views.failed(); }
  const std::string &error() const { return writer.failed() ? writer.error() : views.error(); }
};

void on_sample(void *ctx, const void *data, size_t size) {
  static_cast<Calls *>(ctx)->on_record(data, size); // a malformed record is counted there
}

// EventStream drains the ring buffer in batches. With wakeups (BPF submits with flags 0) it
// sleeps in RingReader::poll (epoll on the map) until data arrives. With BPF_RB_NO_WAKEUP submits
// nothing would wake that poll and the buffer would fill, so it calls RingReader::consume on a short timer
// instead; DESIGN.md measured that to keep up with a million events. The generator chooses by
// options.ringbuf_wakeup in the manifest.
class EventStream {
public:
  static constexpr int kPollTimeoutMs = 50;
  static constexpr long kConsumeIntervalNs = 5'000'000;

  EventStream(RingReader &ring, Sinks &writer, bool wakeup)
      : ring_(ring), writer_(writer), wakeup_(wakeup) {}

  // Waits up to one interval for events and prints what arrived. Returns a negative errno on
  // failure; an interrupting signal is not one.
  int wait_and_drain() {
    int n;
    if (wakeup_) {
      n = ring_.poll(kPollTimeoutMs);
    } else {
      n = ring_.consume();
      if (n == 0) {
        struct timespec ts = {0, kConsumeIntervalNs};
        nanosleep(&ts, nullptr);
      }
    }
    writer_.flush();
    return n == -EINTR ? 0 : n;
  }

  // Prints everything already in the buffer. Bounded, because in all-process mode producers may
  // keep writing while we drain.
  void drain_all() {
    for (int round = 0; round < 1000; ++round) {
      int n = ring_.consume();
      if (n == -EINTR)
        continue;
      if (n <= 0)
        break;
    }
    writer_.flush();
  }

  uint64_t malformed() const { return ring_.malformed(); }
  uint64_t wrapped() const { return ring_.wrapped(); }

private:
  RingReader &ring_;
  Sinks &writer_;
  bool wakeup_;
};

StatsReport collect_stats(const Loader &loader, const EventWriter &writer,
                          const std::vector<uint64_t> &lost, double seconds) {
  StatsReport report;
  report.seconds = seconds;
  report.probes.resize(writer.events_per_probe().size());
  std::string error;
  std::vector<uint64_t> hits;
  report.hits_known = loader.hits_per_probe(hits, error);
  if (!error.empty())
    say("{}", error);
  std::vector<uint64_t> filtered, limited;
  if (!loader.filtered_per_probe(filtered, error) && !error.empty())
    say("{}", error);
  if (!loader.limited_per_probe(limited, error) && !error.empty())
    say("{}", error);
  std::vector<uint64_t> evicted, held;
  if (!loader.evicted_per_probe(evicted, error) && !error.empty())
    say("{}", error);
  if (!loader.held_per_probe(held, error) && !error.empty())
    say("{}", error);
  report.run_time_known = loader.run_stats_per_program(report.programs, error);
  report.program_of_probe = loader.program_of_probe();
  if (loader.has_spawn()) {
    std::string spawn_error;
    report.spawn_known = loader.spawn_run_stats(report.spawn_entry, report.spawn_return, spawn_error);
  }
  for (size_t i = 0; i < report.probes.size(); ++i) {
    ProbeStats &s = report.probes[i];
    s.events = writer.events_per_probe()[i];
    s.lost = i < lost.size() ? lost[i] : 0;
    if (report.hits_known)
      s.hits = hits[i];
    s.filtered = i < filtered.size() ? filtered[i] : 0;
    s.limited = i < limited.size() ? limited[i] : 0;
    s.evicted = i < evicted.size() ? evicted[i] : 0;
    s.held = i < held.size() ? held[i] : 0;
  }
  return report;
}

void print_stats(const Manifest &m, const StatsReport &report, const char *when) {
  say("stats {} {:.1f} s:", when, report.seconds);
  for (const std::string &line : format_stats(m, report))
    say("  {}", line);
}

// ", inlined into main.loop2 at main.go:63" for an inlined copy's probe: one function's copies
// are told apart in the summary as in the events.
std::string inlined_label(const ManifestProbe &probe) {
  if (probe.line) // a line probe's PCs: ", at 0x4a0fd3" (", at 0x4a1b51 in main.callA" for a copy inlined there)
    return fmt::format(", at {:#x}{}", probe.line->pc, probe.line->inlined ? " in " + probe.line->physical : "");
  if (!probe.inlined_into)
    return "";
  const auto &into = *probe.inlined_into;
  return fmt::format(", inlined into {} at {}:{}", into.function, into.file.substr(into.file.rfind('/') + 1),
                     into.line);
}

// The exit summary: a line per probe (with many probes, only those that lost events), the total,
// and the lost and malformed counts.
void print_summary(const Manifest &m, const EventWriter &writer, uint64_t malformed,
                   const std::vector<uint64_t> &lost, bool lost_known, uint64_t ring_size,
                   const std::vector<uint64_t> &busy) {
  constexpr size_t kListedProbes = 20;
  uint64_t total_events = 0, total_lost = 0;
  for (size_t i = 0; i < m.probes.size(); ++i) {
    uint64_t l = lost_known ? lost[i] : 0;
    total_events += writer.events_per_probe()[i];
    total_lost += l;
    if (m.probes.size() <= kListedProbes || l > 0)
      say("{} ({}{}): {}, {} lost", m.probes[i].name,
          m.probes[i].line                                                                  ? "line"
          : !m.probes[i].attach.empty() && m.probes[i].attach[0].kind == AttachKind::Return ? "return"
                                                                                            : "entry",
          inlined_label(m.probes[i]), count(writer.events_per_probe()[i], "event"), l);
  }
  if (m.probes.size() > 1)
    say("total: {}, {} lost{}", count(total_events, "event"), total_lost,
        m.probes.size() > kListedProbes ? " (each probe's: --stats)" : "");
  uint64_t total_busy = 0;
  for (size_t i = 0; lost_known && i < busy.size() && i < m.probes.size(); ++i)
    total_busy += busy[i];
  if (total_busy > 0)
    say("{} lost because every scratch record of a CPU was busy (runs of the probes preempted "
        "halfway on it: weave_bpf.h, weave_scratch_begin)",
        count(total_busy, "event"));
  if (total_lost > total_busy) {
    say("{} lost (ring buffer full)", count(total_lost - total_busy, "event"));
    // What holds more of them: the knobs, with their values now.
    uint32_t largest = 0;
    for (size_t i = 0; i < m.probes.size(); ++i)
      if (lost[i] > 0)
        largest = std::max(largest, m.probes[i].event_size);
    say("to lose fewer: a larger ring buffer (now {} KiB: --ring-size or options.ring_size), smaller records "
        "(the largest losing probe's is {} bytes; options.string_max is {}), options.limits or when: "
        "conditions to emit fewer events, or fewer probes",
        ring_size >> 10, largest, m.string_max);
  }
  if (!lost_known)
    say("the number of lost events is unknown");
  if (malformed > 0)
    say("{} skipped (they do not match the manifest)", count(malformed, "malformed event"));
}

// "otlp: 120 spans, 100 sent, 20 dropped (20 queue full, 0 failed, 0 at exit) to 127.0.0.1:4318"
std::string otlp_line(const OtlpExporter &otlp) {
  OtlpExporter::Counts c = otlp.counts();
  return fmt::format("otlp: {}, {} sent, {} dropped ({} queue full, {} failed, {} at exit) to {}",
                     count(c.spans, "span"), c.sent, c.dropped(), c.dropped_queue, c.dropped_failed,
                     c.dropped_exit, otlp.endpoint().display());
}

enum class Mode { Command, Pid, All };

// ---- Loading: the probes and their manifest ----------------------------------------------------
// The BPF object and the manifest, from the tracer's own payload (or the debugging options).
// Returns -1 to go on, else the exit code (--version ends here).
int load_probes(const Options &opt, std::string &object, std::optional<Manifest> &manifest) {
  std::string manifest_text, error;
  if (!opt.object_path.empty()) {
    if (!read_file(opt.object_path, object, error) ||
        !read_file(opt.manifest_path, manifest_text, error)) {
      say("{}", error);
      return kExitSetup;
    }
  } else {
    std::optional<Payload> payload = read_payload("/proc/self/exe", error);
    if (!payload) {
      if (!error.empty()) {
        say("{}", error);
        return kExitSetup;
      }
      if (opt.version) {
        print_version(nullptr);
        return 0;
      }
      say("this is the weave tracer runtime without probes; `weave build` makes a tracer");
      return kExitSetup;
    }
    object = std::move(payload->object);
    manifest_text = std::move(payload->manifest);
  }
  manifest = parse_manifest(manifest_text, error);
  if (!manifest) {
    say("manifest: {}", error);
    return kExitSetup;
  }
  if (opt.version) {
    print_version(&*manifest);
    return 0;
  }
  return -1;
}

// ---- Attaching: which binary, and the probes on it ---------------------------------------------
// The binary to attach to (and the command's path, with one), checked against the manifest's build
// id. Returns -1 to go on, else the exit code.
int resolve_binary(const Options &opt, const Manifest &manifest, Mode mode, std::string &binary,
                   std::string &command_path) {
  binary = opt.binary;
  if (mode == Mode::Command) {
    command_path = find_command(opt.command[0]);
    if (command_path.empty()) {
      say("cannot run '{}': {}", opt.command[0],
          opt.command[0].find('/') == std::string::npos ? "not found in $PATH"
                                                        : std::strerror(errno));
      return kExitNotFound;
    }
  }
  if (binary.empty())
    binary = mode == Mode::Command ? command_path
             : mode == Mode::Pid   ? "/proc/" + std::to_string(opt.pid) + "/exe"
                                   : recorded_binary(manifest);
  std::string error;
  std::string build_id = read_build_id_file(binary, error);
  if (!error.empty()) {
    say("{}: {}", binary, error);
    if (mode == Mode::All && opt.binary.empty())
      say("this tracer was built for {}{}; name the binary with --binary PATH, start it with "
          "-- PATH ARGS, or trace a running process with --pid N",
          binary,
          binary == manifest.target.path ? ""
                                         : " (recorded as " + manifest.target.path +
                                               ", from the tracer's directory)");
    return kExitSetup;
  }
  if (build_id != manifest.target.build_id) {
    // With --pid the process is what was named: it runs another program (or another build of it).
    if (mode == Mode::Pid && opt.binary.empty())
      say("--pid {}: that process is not running the binary this tracer was built for: it runs {} "
          "(build id {}), and this tracer is for {} (build id {}); give the pid of a process running "
          "{}, or build a tracer for {} (weave trace --pid {} FUNC... does)",
          opt.pid, process_exe_name(opt.pid), build_id.empty() ? "(none)" : build_id, manifest.target.path,
          manifest.target.build_id, manifest.target.path, process_exe_name(opt.pid), opt.pid);
    else
      say("{} has build id {}, but this tracer was generated for build id {}; regenerate it with "
          "weave build",
          binary, build_id.empty() ? "(none)" : build_id, manifest.target.build_id);
    return kExitSetup;
  }
  return -1;
}

// The ring buffer's size when neither --ring-size nor options.ring_size gives one: 8 MiB
// (Loader::kDefaultRingSize, measured on Caddy), or room for 128 of the largest records when
// that is more (stack windows of 64 KiB: 16 MiB), at most 64 MiB.
uint64_t default_ring_size(const Manifest &m) {
  uint64_t largest = 0;
  for (const ManifestProbe &p : m.probes)
    largest = std::max<uint64_t>(largest, p.event_size);
  uint64_t size = Loader::kDefaultRingSize;
  while (size < 128 * largest && size < (64u << 20))
    size <<= 1;
  return size;
}

// Loads the object, filters on `tgid` (0: every process) and attaches. False after saying why.
bool attach_probes(Loader &loader, const Options &opt, std::string &object, const std::string &binary,
                   uint32_t tgid, uint64_t manifest_ring_size) {
  std::string error;
  AttachMethod method = opt.attach == "multi"  ? AttachMethod::Multi
                        : opt.attach == "perf" ? AttachMethod::Perf
                                               : AttachMethod::Auto;
  loader.set_ring_size(!opt.ring_size.empty() ? ring_size_bytes(opt.ring_size) : manifest_ring_size);
  if (!loader.load(object, error, method) || !loader.set_target_tgid(tgid, error)) {
    say("{}", error);
    show_libbpf_backlog();
    return false;
  }
  object.clear();
  object.shrink_to_fit(); // libbpf no longer needs it after load
  // --metrics shows BPF time too (weave_probe_bpf_ns_per_run): two clock reads per run while on.
  if ((opt.stats >= 0 || !opt.metrics.empty()) && !loader.enable_run_time_stats(error))
    say("{}; --stats and --metrics go on without run times", error);
  // The pid filter went in before the first attach, so no other process is ever traced.
  if (!loader.attach(binary, binary, error)) {
    say("{}", error);
    show_libbpf_backlog();
    loader.detach();
    return false;
  }
  return true;
}

// ---- Sinks: opened before the program starts ---------------------------------------------------
// Every output the options ask for: -o FILE, --folded's and --perfetto's files, --otlp's URL and
// --metrics' port are all taken before the program starts, so that a path that cannot be written, a
// bad URL or a taken port stops everything before anything ran. nullptr after saying why.
std::unique_ptr<Sinks> open_sinks(const Manifest &manifest, const Options &opt, const std::string &binary,
                                  uint64_t start_ns) {
  // -o FILE; the program keeps the tracer's stdout.
  int out_fd = STDOUT_FILENO;
  if (!opt.output.empty() && opt.output != "-") {
    // O_NOFOLLOW: a link planted at the name is refused, never written through (README "Safety").
    out_fd = open(opt.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out_fd < 0) {
      say("-o {}: {}", opt.output,
          errno == ELOOP ? std::string("is a symbolic link; the tracer does not write through links (name the "
                                       "file itself, or use shell redirection)")
                         : std::string(std::strerror(errno)));
      return nullptr;
    }
  }
  auto sinks = std::make_unique<Sinks>(manifest, opt, start_ns, out_fd);
  sinks->writer.set_color(opt.format == "text" && use_color(opt.color, out_fd));
  std::string error;
  if (!sinks->views.open_files(error)) {
    say("{}", error);
    return nullptr;
  }
  if (!opt.otlp.empty()) {
    OtlpOptions otlp_options{.url = opt.otlp,
                             .service_name = !opt.service_name.empty()
                                                 ? opt.service_name
                                                 : std::filesystem::path(binary).filename().string()};
    if (opt.otlp_timeout)
      otlp_options.request_timeout_ms = otlp_options.exit_timeout_ms = opt.otlp_timeout * 1000;
    sinks->otlp = std::make_unique<OtlpExporter>(
        manifest, otlp_options,
        OtlpResource{manifest.target.build_id, manifest.target.go_version, manifest.target.arch, binary});
    if (!sinks->otlp->start(error)) {
      say("--otlp {}", error);
      return nullptr;
    }
  }
  if (!opt.metrics.empty()) {
    sinks->metrics = std::make_unique<MetricsExporter>(manifest);
    if (!sinks->metrics->start(opt.metrics, error)) {
      say("--metrics {}: {}", opt.metrics, error);
      return nullptr;
    }
    // Always said: with :0 it is the only way to learn the port.
    std::string host = opt.metrics.substr(0, opt.metrics.rfind(':'));
    say("metrics at http://{}:{}/metrics{}", host.empty() ? "0.0.0.0" : host, sinks->metrics->port(),
        host.empty() || host == "0.0.0.0" || host == "[::]" ? " (every interface)" : "");
  }
  // Stacks and func values are named from the target's own .gopclntab (stripped binaries too), and
  // interfaces' dynamic types need a PIE's load bias, which the symbolizer finds.
  // Interfaces alone need no function table: their types are read from the file as they appear.
  bool needs_types = false, needs_functions = false;
  for (const ManifestProbe &p : manifest.probes) {
    needs_functions = needs_functions || p.stack_depth > 0;
    for (const auto &c : p.captures) {
      needs_types = needs_types || !c.interfaces.empty() || c.assertion; // x.(T) names the actual type
      for (const auto &f : c.fields)
        needs_functions = needs_functions || f.kind == FieldKind::Func;
    }
  }
  // Who made each goroutine is named from .gopclntab as well, loaded at the first event that asks,
  // by the outputs that show it (JSON's created_by, --graph's headers; --perfetto's and --otlp's
  // arrows and links find the spawning call with it). Text lines do not.
  bool names_makers = manifest.has_gopc && (opt.format == "json" || opt.graph || !opt.perfetto.empty() ||
                                            !opt.otlp.empty());
  if (needs_types || needs_functions || names_makers) {
    sinks->symbolizer = std::make_unique<Symbolizer>(binary, manifest);
    if (needs_functions && !sinks->symbolizer->load_functions())
      say("stacks and func values will show addresses: {}", sinks->symbolizer->error());
    // A process's /proc/N/exe (--pid) is gone once it exits, and the last events are often decoded
    // after that: its table is read now, while it can be.
    else if (names_makers && binary.rfind("/proc/", 0) == 0 && !sinks->symbolizer->load_functions())
      say("created_by will name go statements by address: {}", sinks->symbolizer->error());
    sinks->writer.set_symbolizer(sinks->symbolizer.get());
    sinks->calls.set_symbolizer(sinks->symbolizer.get());
  }
  return sinks;
}

// ---- The loop: events until the program exits or a signal ----------------------------------------
struct Traced {
  Mode mode;
  const Options &opt;
  const Manifest &manifest;
  Loader &loader;
  Sinks &sinks;
  EventStream &stream;
  pid_t child = 0;
  uint64_t traced_ns = 0; // when the probes were attached
};

struct LoopEnd {
  int exit_code = 0;      // the command's, when it exited
  bool child_done = false;
  bool broken = false;    // the ring buffer or the output failed
};

StatsReport collect_stats(const Traced &t, uint64_t now) {
  std::vector<uint64_t> lost;
  std::string error;
  if (!t.loader.lost_per_probe(lost, error))
    say("{}", error);
  return collect_stats(t.loader, t.sinks.writer, lost, double(now - t.traced_ns) / 1e9);
}

// What a /metrics scrape shows: the --stats numbers and the exporter's counts, refreshed.
void publish_metrics(const Traced &t, uint64_t now) {
  std::vector<uint64_t> lost;
  std::string lost_error;
  t.loader.lost_per_probe(lost, lost_error);
  OtlpExporter::Counts counts = t.sinks.otlp ? t.sinks.otlp->counts() : OtlpExporter::Counts();
  double seconds = double(now - t.traced_ns) / 1e9;
  t.sinks.metrics->publish(collect_stats(t.loader, t.sinks.writer, lost, seconds), t.sinks.otlp ? &counts : nullptr,
                           seconds);
}

LoopEnd trace_until_done(const Traced &t) {
  LoopEnd end;
  bool told_waiting = false;
  uint64_t first_signal_ns = 0, last_check_ns = 0, last_stats_ns = t.traced_ns, last_publish_ns = 0;
  while (true) {
    if (g_signal_count > 0) {
      // With a command, the signal went to it as well: keep tracing until it exits, so its
      // shutdown is traced too. A second signal stops at once.
      if (t.mode != Mode::Command || g_signal_count > 1)
        break;
      uint64_t now = monotonic_ns();
      if (!first_signal_ns)
        first_signal_ns = now;
      if (!told_waiting && now - first_signal_ns > 500'000'000) {
        say("waiting for pid {} to exit; interrupt again to stop tracing now", t.child);
        told_waiting = true;
      }
    }
    int n = t.stream.wait_and_drain();
    if (n < 0) {
      say("map 'weave_events': reading the ring buffer failed: {}", std::strerror(-n));
      end.broken = true;
      break;
    }
    if (t.sinks.failed()) {
      say("{}; stopping", t.sinks.error());
      end.broken = true;
      break;
    }
    uint64_t now = monotonic_ns();
    if (t.mode == Mode::Command) {
      int status;
      if (waitpid(t.child, &status, WNOHANG) == t.child) {
        end.child_done = true;
        end.exit_code = exit_status(status);
        break;
      }
    } else if (t.mode == Mode::Pid && now - last_check_ns >= 50'000'000) {
      last_check_ns = now;
      if (!process_alive(t.opt.pid))
        break;
    }
    if (t.sinks.metrics && now - last_publish_ns >= 1'000'000'000) {
      last_publish_ns = now;
      publish_metrics(t, now);
    }
    if (t.opt.stats > 0 && now - last_stats_ns >= uint64_t(t.opt.stats) * 1'000'000'000) {
      last_stats_ns = now;
      print_stats(t.manifest, collect_stats(t, now), "after");
      if (t.sinks.otlp)
        say("  {}", otlp_line(*t.sinks.otlp));
    }
  }
  return end;
}

// ---- The summary at exit -------------------------------------------------------------------------
// Everything said after the last event: --stats, the per-probe summary, what limits and
// min_duration left out, the latency summary, the exporters' counts.
void report_at_exit(const Traced &t, const std::vector<uint64_t> &lost, bool lost_known,
                    double traced_seconds) {
  const Options &opt = t.opt;
  Sinks &sinks = t.sinks;
  std::string error;
  if (opt.stats >= 0) {
    // Every program has stopped and the buffer is drained: the numbers are final and add up.
    StatsReport report = collect_stats(t.loader, sinks.writer, lost, traced_seconds);
    print_stats(t.manifest, report, "at exit, after");
    for (const std::string &mismatch : stats_mismatches(t.manifest, report))
      say("stats do not add up: {}", mismatch);
    if (sinks.otlp)
      say("  {}", otlp_line(*sinks.otlp));
  }
  std::vector<uint64_t> busy;
  if (!t.loader.busy_per_probe(busy, error))
    busy.clear();
  print_summary(t.manifest, sinks.writer, sinks.calls.malformed(), lost, lost_known, t.loader.ring_size(), busy);
  if (t.stream.malformed())
    say("ring buffer: {} no kernel could have written; the records after each were dropped",
        count(t.stream.malformed(), "record header"));
  if (opt.verbosity)
    say("ring buffer: {} wrapped past its end (read joined)", count(t.stream.wrapped(), "record"));
  // What limits: dropped is part of the summary: the events above are not all the calls there were.
  if (std::vector<uint64_t> limited; t.loader.limited_per_probe(limited, error)) {
    uint64_t dropped = 0;
    for (uint64_t n : limited)
      dropped += n;
    if (dropped)
      say("limits: dropped {} (per probe: --stats)", count(dropped, "call"));
  }
  // min_duration: entries its maps could not keep are calls that went unseen, and calls still in
  // flight at exit were never decided; both are said, or the slow calls shown would look complete.
  {
    std::vector<uint64_t> evicted, held;
    uint64_t evicted_total = 0, held_total = 0;
    if (t.loader.evicted_per_probe(evicted, error))
      for (uint64_t n : evicted)
        evicted_total += n;
    if (t.loader.held_per_probe(held, error))
      for (uint64_t n : held)
        held_total += n;
    if (evicted_total)
      say("min_duration: {} evicted from the map of calls in flight, not shown (per probe: --stats)",
          count(evicted_total, "call"));
    if (held_total)
      say("min_duration: {} still in flight at exit, not shown", count(held_total, "call"));
  }
  // Calls that never return (a body without RET, a loop of panics) are held only so far.
  if (uint64_t forgotten = sinks.calls.dropped())
    say("{} forgotten: at most {} per goroutine and {} in all are held for their returns",
        count(forgotten, "open call"), Calls::kMaxOpenPerTrack, Calls::kMaxOpenTotal);
  for (const std::string &line : sinks.views.summary_lines())
    say("{}", line);
  if (sinks.otlp) {
    say("{}", otlp_line(*sinks.otlp));
    if (sinks.otlp->counts().dropped() > 0 && !sinks.otlp->last_error().empty())
      say("otlp: last error: {}", sinks.otlp->last_error());
  }
  if (sinks.metrics) {
    if (opt.verbosity)
      say("metrics: {} served", count(sinks.metrics->scrapes(), "request"));
    sinks.metrics->stop();
  }
}

// ---- run: the rooms above, in order ----------------------------------------------------------------
int run(int argc, char **argv) {
  uint64_t start_ns = monotonic_ns(); // the zero of the text format's time column

  Options opt;
  if (int code = parse_command_line(argc, argv, opt); code >= 0)
    return code;
  std::string object;
  std::optional<Manifest> parsed;
  if (int code = load_probes(opt, object, parsed); code >= 0)
    return code;
  // The manifest's text and its parse tree (megabytes with thousands of probes) were freed with
  // load_probes: hand that memory back instead of keeping it resident for the whole trace.
  malloc_trim(0);
  const Manifest &manifest = *parsed;
  setup_libbpf_logging(opt.verbosity);

  Mode mode = !opt.command.empty() ? Mode::Command : opt.pid ? Mode::Pid : Mode::All;
  if (mode == Mode::Pid && !process_alive(opt.pid)) {
    say("--pid {}: no such process", opt.pid);
    return kExitSetup;
  }
  std::string binary, command_path;
  if (int code = resolve_binary(opt, manifest, mode, binary, command_path); code >= 0)
    return code;
  // --folded writes the entries' stacks: without a probe that captures one the file stays empty,
  // which is said rather than left to be found.
  if (!opt.folded.empty() &&
      std::none_of(manifest.probes.begin(), manifest.probes.end(), [](const ManifestProbe &p) { return p.stack_depth > 0; }))
    say("warning: --folded {}: no probe of this tracer captures stacks (stack: N in the spec; weave trace "
        "--folded asks for them), so the file will be empty",
        opt.folded);

  install_signal_handlers();
  Child child;
  if (mode == Mode::Command) {
    child = fork_waiting_child(command_path, opt.command);
    if (child.pid <= 0) {
      say("cannot start '{}': {}", opt.command[0], std::strerror(errno));
      return kExitSetup;
    }
    g_child = child.pid;
  }
  // Reaps the waiting child after a setup failure: closing the pipe makes it exit unexec'd.
  auto abandon_child = [&] {
    if (child.pid > 0) {
      close(child.release_fd);
      waitpid(child.pid, nullptr, 0);
    }
  };

  Loader loader(manifest);
  uint32_t tgid = mode == Mode::Command ? uint32_t(child.pid)
                  : mode == Mode::Pid   ? uint32_t(opt.pid)
                                        : 0;
  if (!attach_probes(loader, opt, object, binary, tgid,
                     manifest.ring_size ? manifest.ring_size : default_ring_size(manifest))) {
    abandon_child();
    return kExitSetup;
  }
  uint64_t traced_ns = monotonic_ns();
  size_t points = loader.attach_point_count();
  if (opt.verbosity || opt.stats >= 0 || opt.exit_after_attach)
    say("attached {} with {} in {:.3f} s ({}){}", count(points, "point"),
        count(loader.link_count(),
              loader.method() == AttachMethod::Multi ? "uprobe_multi link" : "perf-event link"),
        loader.attach_seconds(), loader.method_reason(),
        manifest.spawn ? fmt::format("; and {} on goroutine creation ({}, for created_by's parent)",
                                     count(loader.spawn_point_count(), "point"), manifest.spawn->function)
                       : "");
  if (opt.verbosity)
    say("ring buffer: {} KiB", loader.ring_size() >> 10);
  if (opt.exit_after_attach) {
    loader.detach();
    say("detached {} in {:.3f} s", count(points, "point"), loader.detach_seconds());
    abandon_child();
    return 0;
  }

  std::unique_ptr<Sinks> sinks = open_sinks(manifest, opt, binary, start_ns);
  if (!sinks) {
    abandon_child();
    return kExitSetup;
  }
  RingReader ring(on_sample, &sinks->calls);
  std::string ring_error;
  if (!ring.open(loader.events_fd(), ring_error)) {
    say("map 'weave_events': cannot open the ring buffer: {}", ring_error);
    abandon_child();
    return kExitSetup;
  }
  EventStream stream(ring, *sinks, manifest.ringbuf_wakeup);

  if (mode == Mode::Command) {
    if (opt.verbosity)
      say("attached {} at {} in {}; starting {}", count(manifest.probes.size(), "probe"),
          count(points, "point"), binary, opt.command[0]);
    if (write(child.release_fd, "g", 1) != 1) {
      say("cannot start '{}': {}", opt.command[0], std::strerror(errno));
      abandon_child();
      return kExitSetup;
    }
    close(child.release_fd);
  } else {
    // An entry and its return are two probes of one function: name both counts.
    std::set<std::string> functions;
    for (const auto &probe : manifest.probes)
      functions.insert(probe.function);
    say("tracing {} of {} at {} in {} ({}); Ctrl-C to stop", count(manifest.probes.size(), "probe"),
        count(functions.size(), "function"), count(points, "point"), binary,
        mode == Mode::Pid ? "pid " + std::to_string(opt.pid) : "all processes");
  }
  std::unique_ptr<BinaryWatch> watch = mode == Mode::All ? watch_binary(loader, binary, manifest) : nullptr;

  Traced traced{mode, opt, manifest, loader, *sinks, stream, child.pid, traced_ns};
  LoopEnd end = trace_until_done(traced);

  if (watch)
    watch->stop(); // the links are the loader's alone again
  // Drain, detach, and drain again: the second pass prints what arrived while the links closed,
  // so no event that the BPF side submitted goes unprinted.
  stream.drain_all();
  double traced_seconds = double(monotonic_ns() - traced_ns) / 1e9;
  // Perf-event links close one at a time in the kernel, ~0.1 s each (see Loader::detach).
  if (loader.method() == AttachMethod::Perf && loader.link_count() > 20)
    say("detaching {}...", count(points, "attach point"));
  loader.detach();
  if (opt.verbosity || opt.stats >= 0)
    say("detached {} in {:.3f} s", count(points, "point"), loader.detach_seconds());
  stream.drain_all();
  sinks->views.finish(); // --graph: the trees still open; --folded: the file
  if (!sinks->views.folded_error().empty())
    say("{}", sinks->views.folded_error());
  std::vector<uint64_t> lost;
  std::string error;
  bool lost_known = loader.lost_per_probe(lost, error);
  if (!lost_known)
    say("{}", error);
  if (sinks->otlp)
    sinks->otlp->finish(); // the last spans, within its exit timeout
  if (sinks->metrics)
    publish_metrics(traced, monotonic_ns());
  report_at_exit(traced, lost, lost_known, traced_seconds);

  if (mode == Mode::Command && !end.child_done) {
    if (g_signal_count > 1) {
      say("stopped tracing before pid {} exited", child.pid);
      return 128 + g_signal;
    }
    // Tracing broke (say, `| head` exited): the program runs on untraced to its end, as it would
    // in a shell pipeline, and then the failure is reported in the exit code.
    int status = 0;
    while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR)
      ;
    return kExitRuntime;
  }
  return end.broken || !sinks->views.folded_error().empty() ? kExitRuntime : end.exit_code;
}

} // namespace

int main(int argc, char **argv) {
  return run(argc, argv);
}
