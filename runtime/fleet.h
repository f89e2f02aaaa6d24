// Fleet: the tracer's exports to the systems a fleet already runs (README "Fleet").
//
//   --otlp URL      OtlpExporter: every paired call becomes an OpenTelemetry span, sent as OTLP/HTTP
//                   with JSON encoding to a collector (or Jaeger, Tempo...: anything that takes
//                   OTLP/HTTP at /v1/traces).
//   --metrics ADDR  MetricsExporter: /metrics in the Prometheus text format: per probe hits,
//                   events, lost, filtered, limited, BPF time, and per function a latency histogram.
//
// The event loop only pairs entries with returns and copies the raw records (a few hundred ns per
// event); decoding them into attributes, JSON and HTTP all happen on the exporter's own thread. The
// queue between them is bounded in spans and bytes: when the collector is slow or dead, spans are
// dropped and counted, never waited for. The tracer's exit waits for the last batch at most
// OtlpOptions::exit_timeout_ms.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "http.h"
#include "manifest.h"
#include "stats.h"

namespace weave {

class EventPrinter;
class Symbolizer;
struct CallEvent;

struct OtlpOptions {
  std::string url;          // http://HOST:PORT, /v1/traces appended when there is no path
  std::string service_name; // the resource's service.name
  size_t batch_spans = 512;              // spans per request, at most
  size_t queue_spans = 16384;            // spans waiting, at most (more are dropped)
  size_t queue_bytes = 64u << 20;        // their raw events' bytes, at most
  int flush_interval_ms = 200;           // a partial batch waits at most this long
  int request_timeout_ms = 2000;         // one POST, connect to response
  int retries = 4;                       // after the first try, with backoff doubling from 100 ms
  int exit_timeout_ms = 3000;            // at exit, the rest is sent within this, or dropped
};

// What the resource says about the traced program.
struct OtlpResource {
  std::string build_id, go_version, arch, binary;
};

class OtlpExporter {
public:
  OtlpExporter(const Manifest &manifest, OtlpOptions options, OtlpResource resource);
  ~OtlpExporter();
  bool start(std::string &error); // parses the URL and starts the thread
  // The event loop's part: each paired call (a return the Calls stage joined to its entry, with a
  // duration) becomes a span whose ids derive from the stage's call ids: span id = a random base
  // of this run + the call id, its parent's from the parent call, its trace's from the outermost
  // call open on the goroutine; a goroutine's root span links to the call that spawned it. Never
  // blocks on the network.
  void on_event(const CallEvent &event);
  // Sends what is queued (within exit_timeout_ms) and stops the thread. Calls still open are not
  // spans (they never returned).
  void finish();

  struct Counts {
    uint64_t spans = 0;         // paired calls made into spans
    uint64_t sent = 0;          // accepted by the collector (a 2xx answer)
    uint64_t dropped_queue = 0; // the queue was full
    uint64_t dropped_failed = 0; // every retry failed, or the collector refused them (4xx)
    uint64_t dropped_exit = 0;  // still queued when the exit deadline passed
    uint64_t requests = 0, failures = 0;
    uint64_t dropped() const { return dropped_queue + dropped_failed + dropped_exit; }
  };
  Counts counts() const;
  std::string last_error() const;
  const HttpEndpoint &endpoint() const { return endpoint_; }

  // Decoding and serialization, exposed for tests: the OTLP JSON of one request.
  struct Span {
    uint64_t trace_hi = 0, trace_lo = 0, span_id = 0, parent_id = 0;
    uint64_t start_ns = 0, end_ns = 0; // CLOCK_MONOTONIC, as the events
    // A goroutine's root span links to the span of the call that spawned the goroutine (its trace
    // and span ids), when that call was open on the parent goroutine: CallEvent::spawn_call.
    uint64_t link_trace_lo = 0, link_span_id = 0;
    std::string entry, ret;            // the raw events; entry empty when it was not seen
  };

  // The span id of a call id.
  uint64_t span_id(uint64_t call) const { return call ? span_base_ + call : 0; }

private:
  void run();
  void enqueue(Span &&span);
  std::string encode(const std::vector<Span> &batch);
  bool send(const std::string &body, bool exiting, std::string &error);

  const Manifest &manifest_;
  OtlpOptions options_;
  OtlpResource resource_;
  HttpEndpoint endpoint_;
  uint64_t run_id_ = 0;            // the random half of every trace id
  uint64_t span_base_ = 0;         // random, below 2^63: span ids are this + the call id, never 0
  int64_t unix_offset_ns_ = 0;     // CLOCK_REALTIME - CLOCK_MONOTONIC at start

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Span> queue_;
  size_t queue_bytes_ = 0;
  bool stopping_ = false;
  int64_t exit_deadline_ms_ = 0;
  Counts counts_;
  std::string last_error_;
  std::unique_ptr<EventPrinter> printer_; // the exporter thread's: decodes the queued events
  std::unique_ptr<Symbolizer> symbolizer_;
  std::thread thread_;
};

// Prometheus text format, from counts the event loop keeps and the --stats numbers it refreshes.
class MetricsExporter {
public:
  explicit MetricsExporter(const Manifest &manifest);
  bool start(const std::string &address, std::string &error);
  void stop() { server_.stop(); }
  uint16_t port() const { return server_.port(); }
  void on_event(const CallEvent &event); // event loop: calls and durations
  // Event loop, about once a second and at exit: publishes what a scrape shows.
  void publish(const StatsReport &stats, const OtlpExporter::Counts *otlp, double seconds);
  std::string render() const; // the /metrics body
  uint64_t scrapes() const { return server_.requests(); }

  // The histogram's upper bounds in seconds (Prometheus' le), from 1 µs to 10 s.
  static const std::vector<double> &bounds();

private:
  struct Function {
    uint64_t calls = 0;                 // entry events
    uint64_t count = 0, sum_ns = 0;     // paired calls and their total duration
    std::vector<uint64_t> buckets;      // per bound (not cumulative), +Inf last
  };
  const Manifest &manifest_;
  std::vector<uint32_t> function_of_probe_; // index into names_
  std::vector<std::string> names_;          // functions, in manifest order
  std::vector<Function> live_;              // event loop's
  mutable std::mutex mutex_;
  std::vector<Function> published_;
  StatsReport stats_;
  bool have_otlp_ = false;
  OtlpExporter::Counts otlp_;
  double seconds_ = 0;
  HttpServer server_;
};

} // namespace weave
