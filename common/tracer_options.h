// The tracer's command-line options, as one table: the tracer (runtime/main.cpp) registers each of
// them with its help from here and refuses to start when its parser and this table disagree, and
// `weave run` / `weave trace` offer every one of them and pass them on. So an option added to the
// tracer is an option of weave's one-line front end at once, and its completion lists with it.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace weave {

struct TracerOption {
  enum Takes { kFlag, kCount, kValue, kOptionalValue };
  // How weave's run and trace commands treat it: passed on as given (kPass); an option of weave's
  // own that means the same and reaches the tracer through it (kOwn: --format, -o, --pid, --color,
  // --version); or not offered (kDebug: it replaces what weave builds).
  enum Forward { kPass, kOwn, kDebug };
  const char *names;     // CLI11's spelling: "-v,--verbose"
  const char *name;      // the long name: "--verbose"
  Takes takes;
  const char *type_name; // what the value is, for --help ("FILE"); "" for a flag
  const char *choices;   // the values it takes, blank-separated ("auto multi perf"), or ""
  Forward forward;
  const char *help;
};

inline constexpr TracerOption kTracerOptions[] = {
    {"--format", "--format", TracerOption::kValue, "TEXT", "text json", TracerOption::kOwn,
     "output: text lines, or JSON lines"},
    {"-o,--output", "--output", TracerOption::kValue, "TEXT", "", TracerOption::kOwn,
     "write the events (or --graph's trees) to FILE, created or truncated, instead of stdout, which then "
     "stays the traced program's alone; messages and summaries stay on stderr"},
    {"--color", "--color", TracerOption::kValue, "TEXT", "auto always never", TracerOption::kOwn,
     "colour text events: auto (when the output is a terminal and NO_COLOR is not set), always, never"},
    {"--pid", "--pid", TracerOption::kValue, "N", "", TracerOption::kOwn, "trace only process N, until it exits"},
    {"--binary", "--binary", TracerOption::kValue, "PATH", "", TracerOption::kPass,
     "the binary to attach to (default: CMD, /proc/N/exe, or the path recorded at build time)"},
    {"--attach", "--attach", TracerOption::kValue, "auto|multi|perf", "auto multi perf", TracerOption::kPass,
     "how to attach: one uprobe_multi link per probe (Linux 6.6+), one perf-event link per attach point, "
     "or auto: uprobe_multi when the kernel has it"},
    {"--ring-size", "--ring-size", TracerOption::kValue, "BYTES", "", TracerOption::kPass,
     "bytes of the ring buffer the probes write events into, a power of two with an optional K, M or G "
     "(e.g. 64M): larger loses fewer events under load (default: the spec's options.ring_size, else 8M, or room for 128 of the largest records)"},
    {"--stats", "--stats", TracerOption::kOptionalValue, "SECONDS", "", TracerOption::kPass,
     "print per-probe hits, events, lost events and BPF run time to stderr at exit, and every SECONDS "
     "seconds with --stats=SECONDS"},
    {"--folded", "--folded", TracerOption::kValue, "FILE", "", TracerOption::kPass,
     "write the entries' stacks (probes with stack: N) to FILE at exit in the folded format flame graph "
     "tools read (flamegraph.pl, inferno, speedscope): 'main.main;main.f;main.g 12', inlined frames "
     "marked _[i]"},
    {"--folded-weight", "--folded-weight", TracerOption::kValue, "calls|time", "calls time", TracerOption::kPass,
     "what a --folded stack weighs: calls (default), or time: the nanoseconds its calls took (needs "
     "return: true)"},
    {"--perfetto", "--perfetto", TracerOption::kValue, "FILE", "", TracerOption::kPass,
     "write every paired call as a slice on its goroutine's track to FILE (Chrome trace-event JSON: "
     "ui.perfetto.dev, about:tracing and speedscope open it), captures and results as its arguments, and "
     "a flow arrow from a spawning call to the goroutine it started"},
    {"--otlp", "--otlp", TracerOption::kValue, "URL", "", TracerOption::kPass,
     "send every paired call as an OpenTelemetry span to the collector at URL (OTLP/HTTP, JSON; "
     "/v1/traces is appended to a URL without a path; the host an IP address), captures as weave.arg.*, "
     "results as weave.result.*, nested calls as children. Sent in batches from a thread of its own: a "
     "slow or dead collector costs dropped spans, counted in --stats and the summary, never the event "
     "loop's or the program's time"},
    {"--otlp-timeout", "--otlp-timeout", TracerOption::kValue, "SECONDS", "", TracerOption::kPass,
     "the longest one request to the --otlp collector may take, and the longest the exit waits for the "
     "spans still queued; what is not sent by then is dropped and counted (default: 2 s a request, 3 s "
     "at exit)"},
    {"--service-name", "--service-name", TracerOption::kValue, "NAME", "", TracerOption::kPass,
     "the spans' service.name (default: the traced binary's file name)"},
    {"--metrics", "--metrics", TracerOption::kValue, "ADDR:PORT", "", TracerOption::kPass,
     "serve Prometheus metrics at http://ADDR:PORT/metrics while tracing: per probe hits, events, lost, "
     "filtered, limited and BPF ns/run, per function calls and a latency histogram, "
     "weave_call_duration_seconds (refreshed every second). ADDR is the interface: 127.0.0.1:9464 for "
     "this host only; :PORT (or 0.0.0.0:PORT) listens on EVERY interface, so anyone who can reach the "
     "host can read the metrics; port 0 picks a free port, printed at start"},
    {"--graph", "--graph", TracerOption::kFlag, "", "", TracerOption::kPass,
     "print a call tree per goroutine (text only), each when its outermost traced call returns, instead "
     "of a line per event; each tree says which goroutine made its goroutine and where, and a spawned "
     "goroutine's tree goes under the traced call that spawned it"},
    {"--no-summary", "--no-summary", TracerOption::kFlag, "", "", TracerOption::kPass,
     "do not print the latency summary (calls, min/p50/p99/max and a histogram per function) to stderr "
     "at exit"},
    {"--exit-after-attach", "--exit-after-attach", TracerOption::kFlag, "", "", TracerOption::kPass,
     "attach, detach and exit, saying how long each took (for measuring; a command after -- is not "
     "started)"},
    {"-v,--verbose", "--verbose", TracerOption::kCount, "", "", TracerOption::kPass,
     "show libbpf's messages (twice: with its debug output)"},
    {"--version", "--version", TracerOption::kFlag, "", "", TracerOption::kOwn,
     "print versions and the target this tracer is for"},
    {"--object", "--object", TracerOption::kValue, "TEXT", "", TracerOption::kDebug,
     "debugging: use this BPF object instead of the embedded one"},
    {"--manifest", "--manifest", TracerOption::kValue, "TEXT", "", TracerOption::kDebug,
     "debugging: use this manifest instead of the embedded one"},
};

// The entry of `name` (its long name, "--stats"). A name not in the table is a bug of the caller.
inline const TracerOption &tracer_option(std::string_view name) {
  for (const TracerOption &option : kTracerOptions)
    if (name == option.name)
      return option;
  throw std::logic_error("no tracer option " + std::string(name) + " in common/tracer_options.h");
}

} // namespace weave
