// Views: other ways to show the same events than one line each.
//
//   --graph        CallGraph: per goroutine, an indented call tree (entries open a level, returns
//                  close it with the call's duration), printed when the goroutine's outermost
//                  traced call returns. GraphView feeds it decoded events and writes the trees to
//                  stdout.
//   (at exit)      LatencySummary: per function, calls and min/p50/p99/max of the durations that
//                  return events carry, with a power-of-two histogram like bpftrace's hist().
//
// The exact formats are in README.md ("Output", "Call trees and the latency summary").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "calls.h"
#include "manifest.h"
#include "output.h"

namespace weave {

// ---- --graph ------------------------------------------------------------------------------------

// One event, as CallGraph needs it. `text` is the call as the text output writes it, without the
// line's prefix and duration: "main.f(a=1)" for an entry, "main.f(~r0=2)" for a return.
struct GraphCall {
  uint32_t probe = 0; // index into CallGraph's functions (one per probe)
  bool is_return = false;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t goid = 0; // 0: unknown (ABI0 code): the call is grouped by its thread instead
  uint64_t ts_ns = 0;
  uint64_t duration_ns = 0; // returns: the call's duration, 0 when its entry was not paired
  // The call id of the Calls stage (runtime/calls.h): a return closes the open call with the same
  // id, and one whose id no open call has is shown with its entry not seen. 0 (hand-made events):
  // paired here by the entry timestamp (ts - duration) instead.
  uint64_t call = 0;
  std::string_view text;
  std::string_view stack; // entries: the text output's stack lines ("    main.g (f.go:3)\n"), or ""
  // Who made the goroutine, for its tree's header: "created by goroutine 20 in main.f at f.go:12"
  // ("" when unknown); and the call open on that goroutine that ran the go statement
  // (CallEvent::spawn_call), under which the tree is placed while that call is still open.
  std::string created_by;
  uint64_t parent_goid = 0;
  uint64_t spawn_call = 0;
};

// CallGraph builds the trees. Each goroutine's lines are rendered as they come into a buffer of
// its own; when the goroutine's last open call returns, the buffer is appended to the output as one
// tree. The output depends on nothing but the order of the events.
//
// Memory is bounded: a goroutine keeps at most `lines_per_goroutine` lines and all goroutines
// together `lines_total`; lines past that are dropped, counted, and a note says how many went
// missing at the place they would have been. The closing line of the outermost call is always
// kept. A goroutine with `open_calls_max` calls open at once (a call that never returns repeated in
// a loop: each later call nests under it) has its tree printed as it stands and starts over.
class CallGraph {
public:
  struct Function {
    std::string name; // "main.f", as the text output writes it
    bool returns;     // the probe has return events; a function without any has one-line entries
  };
  struct Limits {
    size_t lines_per_goroutine = 10000;
    size_t lines_total = 200000;
    size_t open_calls_max = 10000;
  };
  // start_ns: the zero of the time column (CLOCK_MONOTONIC at tracer start, as in the text output).
  CallGraph(std::vector<Function> functions, uint64_t start_ns, Limits limits);
  CallGraph(std::vector<Function> functions, uint64_t start_ns)
      : CallGraph(std::move(functions), start_ns, Limits()) {}

  // Takes the next event; appends the tree it completes, if any, to `out`.
  void add(const GraphCall &call, std::string &out);
  // Appends every tree still buffered, in the order they started; calls still open are closed
  // with "(still open at exit)".
  void finish(std::string &out);

  size_t buffered_lines() const { return total_lines_; }
  uint64_t dropped_lines() const { return dropped_total_; }

private:
  struct Key {
    uint32_t pid;
    uint32_t tid; // 0 when grouped by goroutine
    uint64_t goid;
    bool operator==(const Key &) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key &k) const {
      return std::hash<uint64_t>()(k.goid * 0x9e3779b97f4a7c15ull ^
                                   (uint64_t(k.pid) << 32 | k.tid));
    }
  };
  struct Frame {
    uint32_t function; // index into functions_ of the function's first probe
    uint64_t entry_ts;
    uint64_t call; // the Calls stage's id, 0 when not known
  };
  struct Goroutine {
    std::string text;                       // the rendered lines of the tree being built
    std::vector<Frame> frames;              // calls open now, outermost first
    size_t lines = 0;                       // lines kept in `text` (notes aside)
    uint64_t dropped = 0;                   // lines dropped since the last one kept
    size_t collapsible = std::string::npos; // where the last line's " {" is, when it opened the top frame
    uint64_t started = 0; // the order in which trees started (finish() prints in it)
    std::string created_by; // the header's ", created by ..." (GraphCall::created_by)
    uint64_t parent_goid = 0, spawn_call = 0;
  };

  bool keep_line(Goroutine &g, bool force);
  void append_drop_note(Goroutine &g);
  void begin_line(Goroutine &g, uint64_t ts_ns, bool timed, size_t depth);
  void close_frame(Goroutine &g, const Frame &frame, const GraphCall *ret, const char *why);
  void print(const Key &key, Goroutine &g, std::string &out);
  void append_header(const Key &key, const Goroutine &g, std::string &out) const;
  // Moves g's finished tree into its parent goroutine's, under the call that spawned it, when
  // that call is still open there; false when it is not (the tree stands on its own).
  bool nest(const Key &key, Goroutine &g);

  std::vector<Function> functions_;   // per probe
  std::vector<uint32_t> function_of_; // per probe: the first probe of the same function
  uint64_t start_ns_;
  Limits limits_;
  std::unordered_map<Key, Goroutine, KeyHash> goroutines_;
  size_t idle_ = 0; // entries of goroutines_ with nothing buffered, kept for reuse
  size_t total_lines_ = 0;
  uint64_t dropped_total_ = 0;
  uint64_t next_tree_ = 0;
  bool printed_any_ = false;
  Key last_printed_{};
};

// GraphView takes the decoded events of the Calls stage, with their text lines, builds the trees
// and writes them to `fd` in large writes, like EventWriter.
class GraphView : public EventSink {
public:
  GraphView(Calls &calls, uint64_t start_ns, int fd, CallGraph::Limits limits = CallGraph::Limits());

  void on_event(const CallEvent &event) override;
  bool flush();
  void finish(); // the trees still open, then flush
  bool failed() const { return !error_.empty(); }
  const std::string &error() const { return error_; }

private:
  static constexpr size_t kFlushThreshold = 64 * 1024;
  // `line`: the event's text line, '\n' and stack lines included.
  void process(GraphCall call, std::string_view line);
  void release(uint64_t before_ns);
  // min_duration: a held entry reaches the tracer with its return, after the events of the calls
  // nested in it. With such a probe, events wait here, ordered by timestamp, until they are
  // kReorderWindowNs older than the newest event (or kReorderMax are waiting, or at exit), so
  // that the tree nests those calls under it. A held call longer than the window is shown after
  // the calls it contained, which then stand as trees of their own.
  static constexpr uint64_t kReorderWindowNs = 2'000'000'000;
  static constexpr size_t kReorderMax = 100000;
  bool reorder_ = false;
  uint64_t newest_ns_ = 0;
  uint64_t seq_ = 0;
  std::map<std::pair<uint64_t, uint64_t>, std::pair<GraphCall, std::string>> waiting_; // (ts, arrival) -> event, line
  Calls &calls_;
  CallGraph graph_;
  int fd_;
  std::string buffer_; // trees waiting for write(2)
  std::string error_;
};

// ---- The latency summary ------------------------------------------------------------------------

// LatencySummary collects the durations of return events per probe. min and max are exact; p50 and
// p99 are exact (nearest rank over the sorted durations) while a function has at most kExactSamples
// calls, and past that estimated from a histogram with 16 buckets per power of two (within 1/32 of
// the true value, shown with "~"). Recording a duration allocates nothing after the first
// kExactSamples of a function (its sample buffer grows to that size, amortized, then stops).
class LatencySummary {
public:
  static constexpr size_t kExactSamples = 1024;
  static constexpr size_t kListed = 20; // functions in the table (most calls first)
  static constexpr size_t kBarWidth = 40;

  explicit LatencySummary(const Manifest &manifest);
  explicit LatencySummary(std::vector<std::string> functions); // for tests: no event decoding

  // Counts a return event's duration; everything else (entries, unpaired returns) is ignored.
  void on_event(const CallEvent &event);
  void add(uint32_t probe, uint64_t ns);
  bool empty() const { return recorded_ == 0; }

  struct Stats {
    uint64_t calls = 0, min = 0, p50 = 0, p99 = 0, max = 0;
    bool exact = true; // p50 and p99 are exact
  };
  Stats stats(uint32_t probe) const;
  // Power-of-two buckets: [2^i, 2^(i+1)) ns.
  std::array<uint64_t, 64> histogram(uint32_t probe) const;

  // The summary, a line each, without a prefix: a title, the table, then each listed function's
  // histogram. Empty when nothing was recorded.
  std::vector<std::string> lines() const;

private:
  static constexpr size_t kSub = 16; // histogram buckets per power of two
  struct Latency {
    uint64_t calls = 0;
    uint64_t min = UINT64_MAX;
    uint64_t max = 0;
    std::vector<uint64_t> samples; // the first kExactSamples durations
    std::vector<uint64_t> buckets; // 64 * kSub counts, allocated at the first duration
  };
  std::vector<std::string> functions_;
  std::vector<Latency> latency_;
  uint64_t recorded_ = 0;
};

// ---- --folded FILE ------------------------------------------------------------------------------

// FoldedStacks: the folded stack format flame graph tools read (flamegraph.pl, inferno, speedscope):
// one line per distinct stack, its frames outermost first joined by ';', then a space and its
// weight. A stack is an entry event's captured stack (`stack: N`) with the probed function as its
// leaf; inlined frames carry flamegraph.pl's "_[i]" annotation. Weighted by calls, or by the time
// spent in them (the paired return's duration; calls that never return weigh nothing). Lines are
// sorted, so the file depends only on the events.
class FoldedStacks {
public:
  enum class Weight { Calls, Time };
  FoldedStacks(std::vector<std::string> functions, Weight weight)
      : functions_(std::move(functions)), weight_(weight) {}

  // `stack`: the text output's stack lines of the entry ("    main.g (f.go:3) [inlined]\n"...).
  // `call`: the Calls stage's call id; a return closes the open call with its id (0, hand-made
  // events: the innermost open call of its probe).
  void add_entry(uint32_t probe, uint32_t pid, uint32_t tid, uint64_t goid, std::string_view stack,
                 uint64_t call = 0);
  void add_return(uint32_t probe, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t duration_ns,
                  uint64_t call = 0);
  std::string text() const;

private:
  struct Open {
    uint32_t probe;
    std::string path;
    uint64_t inner_ns = 0; // durations of the traced calls that returned inside this one
    uint64_t call = 0;
  };
  std::vector<std::string> functions_; // per probe
  Weight weight_;
  std::map<std::string, uint64_t> weights_; // by path
  // Entries waiting for their return (Weight::Time), per goroutine (or thread when goid is 0).
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, std::vector<Open>> open_;
};

// FoldedView takes the decoded events (entries' stacks as the text output writes them) and writes
// the folded stacks to `path` at exit.
class FoldedView : public EventSink {
public:
  FoldedView(Calls &calls, std::string path, FoldedStacks::Weight weight);
  ~FoldedView();
  // Creates the temporary it writes beside `path` before tracing starts, so that a path it cannot
  // write stops the tracer at once, as --perfetto and -o do, not after the program ran.
  bool open(std::string &error);
  void on_event(const CallEvent &event) override;
  bool write(std::string &error); // the file, whole (written beside it, then renamed)

private:
  Calls &calls_;
  FoldedStacks folded_;
  std::string path_;
  int fd_ = -1;           // the temporary beside path_, from open()
  std::string tmp_path_;
};

// ---- --perfetto FILE ----------------------------------------------------------------------------

// PerfettoView: a timeline in the Chrome trace-event JSON format, which ui.perfetto.dev, Chrome's
// about:tracing and speedscope open. Every paired call is a complete slice ("ph":"X") on its
// goroutine's track (pid = the process, tid = the goroutine id, so a goroutine that moves between
// threads stays on one track; ABI0 code without a goroutine id gets its thread's track, named so),
// from its entry to its return, with the entry's captures and the results as arguments. Entries of
// probes without return events are instants ("ph":"i"). Calls still open at exit are instants
// named "(still open at exit)". Events are written as the calls complete, so memory holds only the
// calls in flight. A goroutine whose first call begins while the call that spawned it is open on
// its parent's track gets a flow arrow ("ph":"s" there, "ph":"f" with "bp":"e" on its own track,
// "cat":"goroutine", the child call's id as the flow id) from the parent's slice open then to it.
class PerfettoView : public EventSink {
public:
  PerfettoView(Calls &calls, uint64_t start_ns, std::string path);
  ~PerfettoView();
  bool open(std::string &error);
  void on_event(const CallEvent &event) override;
  bool finish(std::string &error); // the calls still open, the closing bracket, and the rename

private:
  void emit(const std::string &event);
  void name_track(uint32_t pid, uint64_t track, bool goroutine);
  // "function" and "args" of an entry's JSON line (for the slices of calls that never returned).
  void entry_json(const CallEvent &entry, std::string &function, std::string &args);

  Calls &calls_;
  uint64_t start_ns_;
  std::string path_;
  FILE *file_ = nullptr;
  std::string tmp_path_; // where file_ is written, renamed to path_ at the end
  bool first_ = true;
  std::set<std::tuple<uint32_t, uint64_t, bool>> named_; // tracks named: pid, track, is-goroutine
};

// ---- What the tracer holds ----------------------------------------------------------------------

struct ViewOptions {
  bool graph = false;  // --graph: trees on stdout instead of a line per event
  bool summary = true; // the latency summary at exit (--no-summary: off)
  std::string folded;  // --folded FILE: folded stacks written there at exit
  FoldedStacks::Weight folded_weight = FoldedStacks::Weight::Calls;
  std::string perfetto; // --perfetto FILE: the calls as a timeline, written as they complete
};

// Views: the views the options ask for, fed every event the Calls stage decodes.
class Views : public EventSink {
public:
  Views(Calls &calls, ViewOptions options, uint64_t start_ns, int fd);
  void on_event(const CallEvent &event) override;
  bool flush();
  void finish(); // at exit, after the last event: prints the trees still open, writes --folded
  bool failed() const { return graph_ && graph_->failed(); }
  const std::string &error() const;
  const std::string &folded_error() const { return folded_error_; } // --folded's or --perfetto's write
  bool open_files(std::string &error); // --folded's and --perfetto's files, before tracing starts
  // The latency summary's lines, for stderr; empty when off or when no call had a duration.
  std::vector<std::string> summary_lines() const;

private:
  std::unique_ptr<GraphView> graph_;
  std::unique_ptr<LatencySummary> summary_;
  std::unique_ptr<FoldedView> folded_;
  std::unique_ptr<PerfettoView> perfetto_;
  std::string folded_error_;
};

} // namespace weave
