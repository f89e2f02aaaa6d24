// Output: decoding ring-buffer records by the manifest and printing them as text or JSON lines.
//
// Events go to stdout through one reused buffer (no per-event heap allocation once it has grown);
// the caller flushes after each batch the ring buffer hands over. Logs go to stderr elsewhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <string_view>
#include <vector>

#include "event.h"
#include "manifest.h"
#include "gobinary/unwind.h"

namespace weave {

class ListCounts; // output.cpp: the lists open while a capture prints

enum class OutputFormat { Text, Json };

class Symbolizer;
struct CallEvent;

// Writes all of `buffer` to `fd` and empties it (keeping its capacity). Once a write has failed
// (EPIPE from `| head`, say), `error` says why and later calls only discard.
bool flush_buffer(int fd, std::string &buffer, std::string &error);

// What a return event's text line ends with when its entry was not seen (the call began before the
// tracer attached, or the entry was lost): no duration can be known. --graph writes the same.
inline constexpr std::string_view kEntryNotSeen = "  (entry not seen)";

// A duration as Go's time.Duration prints it: 850ns, 12.3µs, 4.56ms, 1.2s (1500s, never 1.5e+03s).
void append_duration(std::string &out, uint64_t ns);

// How far the event's process loaded the binary from its link addresses: the address the probe
// fired at less its attach point's vaddr. 0 unless the binary is position-independent. Known from
// the event itself, so it holds after the process has exited (a short run's last events). 0 as
// well when the event or the manifest does not say (ip or vaddr 0).
inline uint64_t load_bias(const struct weave_event_header &h, const ManifestProbe &probe) {
  if (h.ip == 0 || h.point >= probe.attach.size() || probe.attach[h.point].vaddr == 0 ||
      h.ip < probe.attach[h.point].vaddr)
    return 0;
  return h.ip - probe.attach[h.point].vaddr;
}

// EventPrinter turns one event record into one line. Everything that does not depend on the
// event (quoted names, struct labels) is prepared once in the constructor.
class EventPrinter {
public:
  // start_ns: CLOCK_MONOTONIC at tracer start, the zero of the text format's time column
  // (bpf_ktime_get_ns() reads the same clock).
  EventPrinter(const Manifest &manifest, OutputFormat format, uint64_t start_ns);

  // Appends the event's line, '\n' included, to `out`. Returns false and appends nothing when the
  // record is malformed: shorter than the header or than its probe's event_size, an unknown
  // probe id, an unknown event kind.
  bool format(const void *data, size_t size, std::string &out);
  // The same line for an event the Calls stage decoded (runtime/calls.h); JSON lines then carry
  // the event's call id ("call"), which joins an entry to its return.
  void format(const CallEvent &event, std::string &out);

  // Stacks and func values are printed symbolized when a symbolizer is set, as addresses otherwise.
  void set_symbolizer(Symbolizer *symbolizer) { symbolizer_ = symbolizer; }

  // Text lines with terminal colours (--color): the time and ids dim, the function bold, faults
  // red. The characters between the escapes are those of the plain line.
  void set_color(bool on) { color_ = on; }

private:
  Symbolizer *symbolizer_ = nullptr;
  bool color_ = false;
  std::vector<uint64_t> list_stack_; // ListCounts' storage, reused for every event
  // A map's pairs being put in key order (append_ops), one per nesting level, reused likewise:
  // each pair's first display op, the fields of its key (pair e's at [key_begin[e], key_begin[e+1])),
  // and the pairs' order.
  struct SortScratch {
    std::vector<uint32_t> starts, keys, key_begin, order;
  };
  std::vector<SortScratch> sort_scratch_;
  size_t sort_depth_ = 0;
  // `bias`: the event's process loaded the binary that far from its link addresses (load_bias).
  void append_func(std::string &out, uint64_t bias, uint64_t pc, bool json);
  // JSON: ,"created_by":{"goid":G,"function":..,"file":..,"line":N} for an event on a goroutine
  // whose maker the header names (see CallEvent::gopc); nothing otherwise.
  void append_created_by(std::string &out, const struct weave_event_header &h, uint64_t bias);
  std::unordered_map<uint64_t, std::string> created_at_; // gopc - bias -> its "function"..."line" JSON
  void append_stack(std::string &out, uint64_t bias, const ManifestProbe &probe, const uint8_t *event,
                    bool json);
  void append_stack_end(std::string &out, const UnwoundStack &stack, uint32_t window_bytes, bool json);
  // Renders an interface by its dynamic type (see DisplayOp::Interface).
  void append_interface(std::string &out, uint64_t bias, const DisplayOp &op, const ManifestCapture &capture,
                        const uint8_t *event, bool json) const;

  struct PreparedCapture {
    std::string text_key;                 // "expr="
    std::string json_key;                 // "\"expr\":"
    std::string json_expr;                // "\"expr\""
    std::vector<std::string> text_labels; // per display op: "Port=" (empty at the top)
    std::vector<std::string> json_labels; // per display op: "\"Port\":"
    std::vector<std::string> json_paths;  // per field: "\"expr.Inner.Host\"" for "truncated"
    // contents: true: each candidate type's value (ManifestCapture::Contents), in their order
    std::vector<PreparedCapture> contents;
  };
  static PreparedCapture prepare_capture(const ManifestCapture &capture);
  // contents: true: the value behind the interface `op` as its dynamic type when the type word
  // names one of the capture's candidate types; the marker when it names another type the
  // tracer could not otherwise show. False: the interface prints as it would without contents.
  bool append_contents(std::string &out, uint64_t bias, const DisplayOp &op, const ManifestCapture &capture,
                       const PreparedCapture &pc, const uint8_t *event, bool json);
  struct PreparedProbe {
    std::string json_prefix; // {"probe":"..","function":"..","kind":"
    std::string text_inlined; // " [inlined into main.caller at main.go:25]" for an inlined copy
    std::string text_name;    // "slow: " when the probe's name is not its function's (probes[].name)
    std::string json_inlined; // ,"inlined_into":{...}
    // A line probe: events are of kind "line", with ,"file":..,"line":..,"pc":"0x.." after the kind
    // and their values under "locals"; text shows " at main.go:23" after the function.
    bool is_line = false;
    std::string json_line;
    std::vector<PreparedCapture> captures;
  };

  // Appends one capture's value (JSON: a string cut at its max_len is added to truncated_).
  void append_capture(std::string &out, const ManifestCapture &capture, const PreparedCapture &pc,
                      const uint8_t *event, uint64_t bias, bool json);
  // The display ops [begin, end) of `capture` (append_capture's walk; a map's pairs recurse into
  // it, one element at a time, in the order of their keys).
  void append_ops(std::string &out, const ManifestCapture &capture, const PreparedCapture &pc, const uint8_t *event,
                  uint64_t bias, bool json, size_t begin, size_t end, ListCounts &counts);
  std::vector<const std::string *> unavailable_; // JSON: captures an inlined copy cannot locate
  void format_text(const struct weave_event_header &h, const uint8_t *event, std::string &out);
  // call: the call id the JSON line carries (0: none, for a record that was not paired).
  void format_json(const struct weave_event_header &h, const uint8_t *event, std::string &out,
                   uint64_t call = 0);

  const Manifest &manifest_;
  OutputFormat format_;
  uint64_t start_ns_;
  std::vector<PreparedProbe> prepared_;
  std::vector<const std::string *> faults_;    // reused by format_json
  std::vector<const std::string *> truncated_; // reused by format_json
  std::vector<uint64_t> truncated_lengths_;      // each truncated string's full length, beside truncated_
};

// EventWriter counts, formats and buffers events, and writes them to a file descriptor. It is a
// sink of the Calls stage (runtime/calls.h); with fd -1 it only counts (--graph prints instead).
class EventWriter {
public:
  EventWriter(const Manifest &manifest, OutputFormat format, uint64_t start_ns, int fd);

  // One decoded event: counted, and its line buffered.
  void on_event(const CallEvent &event);
  // A raw record, decoded here without pairing (no call id): for tests and tools. A malformed
  // record is counted and skipped.
  void on_event(const void *data, size_t size);

  // Writes what is buffered. Returns false once writing has failed (say, EPIPE from `| head`);
  // events are then counted but no longer printed, and error() says why.
  bool flush();
  bool failed() const { return !error_.empty(); }
  const std::string &error() const { return error_; }

  const std::vector<uint64_t> &events_per_probe() const { return events_; }
  void set_symbolizer(Symbolizer *symbolizer) { printer_.set_symbolizer(symbolizer); }
  void set_color(bool on) { printer_.set_color(on); }
  uint64_t malformed() const { return malformed_; }

private:
  // Big enough to amortize write(2); small enough that a huge batch does not pile up in memory.
  static constexpr size_t kFlushThreshold = 64 * 1024;

  const Manifest &manifest_;
  EventPrinter printer_;
  int fd_;
  std::string buffer_;
  std::vector<uint64_t> events_;
  uint64_t malformed_ = 0;
  std::string error_;
};

// The pieces of the formats, exposed for tests.

// Length of the well-formed UTF-8 sequence at p (Unicode 15, table 3-7: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0 when p[0] does not start one.
size_t utf8_sequence_length(const unsigned char *p, size_t n);

// Appends `bytes` as a Go-style double-quoted string: \" \\ \n \t \r; other control characters
// (C0, DEL, and C1 as \u0080..\u009f, which terminals act on) escaped; each byte that is not part
// of valid UTF-8 as \xNN; all other UTF-8 as is.
void append_text_string(std::string &out, std::string_view bytes);

// Appends `bytes` as a JSON string. Valid UTF-8 is kept as is, with \" \\ and control characters
// as \u00XX. A byte that is not part of valid UTF-8 is written as the escape \udcXX (XX = the
// byte), a lone low surrogate in U+DC80..U+DCFF: the "surrogateescape" convention of Python (PEP
// 383), so the bytes are recoverable exactly — in Python,
//   json.loads(line)["args"]["s"].encode("utf-8", "surrogateescape")
// gives back the original bytes. Strict parsers differ on lone surrogates: jq turns them into
// U+FFFD, and nlohmann::json rejects the line.
void append_json_string(std::string &out, std::string_view bytes);

void append_u64(std::string &out, uint64_t v);
void append_i64(std::string &out, int64_t v);
void append_hex(std::string &out, uint64_t v); // 0x1f, 0x0

} // namespace weave
