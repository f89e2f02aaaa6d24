// Calls: the one stage between the ring buffer and the sinks. It decodes each record's header by
// the manifest once (validation, probe, kind, duration, load bias) and pairs each return with its
// entry once, per goroutine (per thread when the goroutine is unknown), giving every call an id.
// The writer, --graph, the latency summary, --folded, --perfetto, --otlp and --metrics consume the
// Events it hands out; none of them reads a raw header or keeps its own table of open calls
// (shared/STYLE.md, "One data model, many sinks").
//
// A capture's value is still read from the record's bytes (CallEvent::record) by EventPrinter, the
// raw-record -> values function, in the format each sink writes (text, JSON); an event's text and
// JSON lines are rendered at most once per event, on the first sink that asks (Calls::text,
// Calls::json).
//
// Where later changes plug in:
//   - record layout: Calls::decode is the one place that checks a record against its probe (size,
//     kind) and reads the header; capture values are read from CallEvent::record by
//     EventPrinter::format(const CallEvent &), the raw-record -> values function.
//   - entries held in BPF (min_duration, and any condition decided at the return) reach the tracer
//     just before their return: pairing in arrival order joins them; --graph reorders by timestamp
//     for nesting only (GraphView), never for pairing.
//   - a fact about a call (who made its goroutine, say) belongs in CallEvent, set in pair().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "manifest.h"
#include "output.h"

namespace weave {

// CallEvent: one ring-buffer record, decoded. Plain data; `record` and `entry` point into storage that
// lives only while the sinks are being handed the event.
struct CallEvent {
  // ---- The record's header, checked against the manifest --------------------------------------
  uint32_t probe_id = 0;
  const ManifestProbe *probe = nullptr;
  uint32_t entry_probe = 0; // the entry probe this event pairs with (its own for an entry)
  bool is_return = false;
  uint16_t point = 0;      // which of the probe's attach points fired
  uint32_t pid = 0, tid = 0;
  uint64_t goid = 0;       // 0: unknown (ABI0 code): the call belongs to its thread
  uint64_t ts_ns = 0;      // CLOCK_MONOTONIC at the probe
  uint64_t faults = 0;     // bit i: capture i could not be read
  uint64_t bias = 0;       // load_bias(): where the process loaded a position-independent binary
  std::string_view record; // the raw record (header included), what EventPrinter decodes

  // ---- Who made its goroutine (the manifest's "ancestry"; see created_by in symbolize.h) -------
  // gopc: the return address of the go statement's call to newproc, as the process sees it (0:
  // unknown, or none to name: goroutine 1, main, is made by the runtime's startup). parent_goid:
  // the goroutine that ran the go statement (0: unknown, as before Go 1.21, which has no
  // g.parentGoid, or a goroutine made by the runtime on its own stack).
  uint64_t gopc = 0;
  uint64_t parent_goid = 0;
  // The call open on the parent goroutine when this goroutine's outermost call began, of the
  // function holding the go statement (or one it was inlined into): where --graph places this
  // goroutine's tree, and Perfetto and OTLP draw their arrow and link from. 0: none seen.
  uint64_t spawn_call = 0;
  uint64_t spawn_root = 0; // the outermost call open on the parent goroutine then (its `root`)

  // ---- The call it belongs to (pairing) --------------------------------------------------------
  // `call` identifies the call: an entry and its return carry the same id; ids count up from 1
  // in the order calls are first seen, so they are unique within one run of the tracer.
  uint64_t call = 0;
  uint64_t parent = 0;     // the call open around this one on its goroutine when it began; 0: none
  uint64_t root = 0;       // the outermost call open on its goroutine then (itself when none)
  uint32_t depth = 0;      // how many calls were open around it then
  bool returns = false;    // entries: the probe has return events (the call will be closed)
  // Returns: the call's duration as measured in BPF (0: the BPF side saw no entry), and whether
  // this stage saw the entry; `entry` is that entry's CallEvent while the return is handed out.
  // A return whose entry was not seen is a call of its own: parent 0, root itself.
  uint64_t duration_ns = 0;
  bool entry_seen = false;
  uint64_t entry_ts_ns = 0; // returns: when the call began (ts_ns - duration_ns, or the entry's)
  const CallEvent *entry = nullptr;
  // Returns: the calls opened inside this one that never returned (a panic unwound them), innermost
  // first; each is closed by this return.
  std::vector<const CallEvent *> unwound;
};

// The sink interface: every consumer of decoded events.
class EventSink {
public:
  virtual ~EventSink() = default;
  virtual void on_event(const CallEvent &event) = 0;
};

class Symbolizer;

// Calls decodes records, pairs calls and hands each CallEvent to the sinks in arrival order.
class Calls {
public:
  Calls(const Manifest &manifest, uint64_t start_ns);
  ~Calls();

  void add_sink(EventSink *sink) { sinks_.push_back(sink); }
  const Manifest &manifest() const { return manifest_; }

  // The ring buffer callback's body. Returns false for a malformed record (shorter than the header
  // or than its probe's event_size, an unknown probe id or event kind), which no sink sees.
  bool on_record(const void *data, size_t size);

  // Decodes one record's header without pairing it (no call id): for tests and tools.
  static bool decode(const Manifest &manifest, const void *data, size_t size, CallEvent &event);

  // The event's line as the text (or JSON) output writes it, '\n' and stack lines included,
  // rendered once per event by the first sink that asks. Valid until the next record.
  const std::string &text(const CallEvent &event);
  const std::string &json(const CallEvent &event);
  void set_symbolizer(Symbolizer *symbolizer);
  Symbolizer *symbolizer() const { return symbolizer_; }

  // Calls open now, for tests and the exit report; records skipped as malformed.
  size_t open_calls() const;
  uint64_t malformed() const { return malformed_; }

  // Hands every call still open to `visit`, by goroutine (pid, then goroutine id; thread tracks
  // after), outermost first: what the sinks show as "still open at exit".
  template <typename Visit> void for_each_open(Visit visit) const {
    for (const auto &[key, stack] : open_)
      for (const auto &open : stack)
        visit(open->event);
  }

  // Bounds: goroutines with calls open (the oldest process's dropped first past this), calls open
  // on one goroutine (the outer half dropped: a loop that never returns), and calls open in all.
  // Each open call holds a copy of its entry record until its return.
  static constexpr size_t kMaxTracks = 65536;
  static constexpr size_t kMaxOpenPerTrack = 4096;
  static constexpr size_t kMaxOpenTotal = 262144;
  uint64_t dropped() const { return dropped_; } // open calls forgotten by these bounds

private:
  struct Open {
    std::string bytes; // the entry record
    CallEvent event;       // its decoded form (record points into bytes)
  };
  using Track = std::tuple<uint32_t, uint64_t, bool>; // pid, goid or tid, is-goroutine

  void pair(CallEvent &event);
  // Sets spawn_call and spawn_root for a goroutine's outermost call (see CallEvent::spawn_call).
  void find_spawn_call(CallEvent &event);
  // Forgets the n outermost calls of `stack`: their returns will show their entries not seen.
  void drop_outer_half(std::vector<std::unique_ptr<Open>> &stack, size_t n);

  const Manifest &manifest_;
  std::vector<uint32_t> entry_probe_;  // per probe
  std::vector<bool> has_return_;       // per entry probe
  std::vector<EventSink *> sinks_;
  uint64_t next_call_ = 1;
  std::map<Track, std::vector<std::unique_ptr<Open>>> open_;
  std::vector<std::unique_ptr<Open>> closed_; // the entries a return closed, kept while it is handed out
  std::vector<std::unique_ptr<Open>> free_;   // closed entries for reuse: no allocation per call
  uint64_t malformed_ = 0;
  size_t open_total_ = 0;
  uint64_t dropped_ = 0;
  const CallEvent *current_ = nullptr;            // the event being handed out (text/json cache key)
  bool text_ready_ = false, json_ready_ = false;
  EventPrinter text_printer_, json_printer_;
  Symbolizer *symbolizer_ = nullptr;
  std::string text_, json_;
};

// The entry probe a probe's events pair with: every attach point's cookie carries it in bits 24-47
// (templates/weave_bpf.h); an entry probe's is its own.
uint32_t entry_probe_of(const Manifest &manifest, uint32_t id);

} // namespace weave
