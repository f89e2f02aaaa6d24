#include "fleet.h"
#include "calls.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <unistd.h>

#include "event.h"
#include "output.h"
#include "symbolize.h"

namespace weave {

namespace {

int64_t clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t now_ms() { return clock_ns(CLOCK_MONOTONIC) / 1000000; }

// 64 random bits from the kernel, for the run's half of trace ids; the time if that fails.
uint64_t random_u64() {
  uint64_t v = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0 || read(fd, &v, sizeof v) != ssize_t(sizeof v))
    v = uint64_t(clock_ns(CLOCK_REALTIME)) * 0x9e3779b97f4a7c15ull;
  if (fd >= 0)
    close(fd);
  return v ? v : 1;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

// Reads one event's JSON line (as --format json writes it) and writes its values as OTLP JSON
// directly, token by token: no DOM, and strings are copied as the escaped tokens they already are.
class EventLine {
public:
  explicit EventLine(std::string_view text) : in_(text) {}

  // The line's top level: the args or results become attributes (prefix + name); function, probe,
  // goid, pid, tid, faults and truncated are kept as tokens. False when the line is not what the
  // tracer writes.
  bool read(const char *prefix, std::string &attributes) {
    if (!eat('{'))
      return false;
    if (eat('}'))
      return true;
    do {
      std::string_view key;
      if (!string_token(key) || !eat(':'))
        return false;
      std::string_view name = key.substr(1, key.size() - 2);
      if (name == "args" || name == "results") {
        if (!members(prefix, attributes))
          return false;
      } else if (name == "faults" || name == "truncated") {
        std::string &list = name == "faults" ? faults : truncated;
        if (!eat('['))
          return false;
        if (!eat(']')) {
          do {
            std::string_view item;
            if (!string_token(item))
              return false;
            list += list.empty() ? "{\"stringValue\":" : ",{\"stringValue\":";
            list += item;
            list += '}';
          } while (eat(','));
          if (!eat(']'))
            return false;
        }
      } else {
        size_t start = pos_;
        std::string ignored;
        if (!value(ignored))
          return false;
        std::string_view token = in_.substr(start, pos_ - start);
        if (name == "function")
          function = token;
        else if (name == "probe")
          probe = token;
        else if (name == "goid")
          goid = token;
        else if (name == "pid")
          pid = token;
        else if (name == "tid")
          tid = token;
      }
    } while (eat(','));
    return eat('}');
  }

  std::string_view function, probe, goid = "0", pid = "0", tid = "0"; // JSON tokens
  std::string faults, truncated; // AnyValues, comma-separated

private:
  bool eat(char c) {
    if (pos_ < in_.size() && in_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool string_token(std::string_view &token) {
    size_t start = pos_;
    if (!eat('"'))
      return false;
    while (pos_ < in_.size() && in_[pos_] != '"')
      pos_ += in_[pos_] == '\\' ? 2 : 1;
    if (!eat('"'))
      return false;
    token = in_.substr(start, pos_ - start);
    return true;
  }

  // {"name":value,...} as attributes "prefix+name": a null (a capture that could not be read, named
  // in faults) is left out.
  bool members(const char *prefix, std::string &out) {
    if (!eat('{'))
      return false;
    if (eat('}'))
      return true;
    do {
      std::string_view key;
      if (!string_token(key) || !eat(':'))
        return false;
      if (in_.substr(pos_, 4) == "null") {
        pos_ += 4;
        continue;
      }
      out += "{\"key\":\"";
      out += prefix;
      out += key.substr(1);
      out += ",\"value\":";
      if (!value(out))
        return false;
      out += "},";
    } while (eat(','));
    return eat('}');
  }

  // One JSON value as an OTLP AnyValue (64-bit integers as strings, as the protobuf JSON mapping
  // has them; a uint64 past int64's range as its decimal string: AnyValue has no unsigned int).
  bool value(std::string &out) {
    if (pos_ >= in_.size())
      return false;
    char c = in_[pos_];
    if (c == '"') {
      std::string_view token;
      if (!string_token(token))
        return false;
      out += "{\"stringValue\":";
      out += token;
      out += '}';
      return true;
    }
    if (in_.substr(pos_, 4) == "true" || in_.substr(pos_, 5) == "false") {
      bool t = c == 't';
      pos_ += t ? 4 : 5;
      out += t ? "{\"boolValue\":true}" : "{\"boolValue\":false}";
      return true;
    }
    if (in_.substr(pos_, 4) == "null") {
      pos_ += 4;
      out += "{}";
      return true;
    }
    if (c == '{') {
      ++pos_;
      out += "{\"kvlistValue\":{\"values\":[";
      if (!eat('}')) {
        bool first = true;
        do {
          std::string_view key;
          if (!string_token(key) || !eat(':'))
            return false;
          out += first ? "{\"key\":" : ",{\"key\":";
          first = false;
          out += key;
          out += ",\"value\":";
          if (!value(out))
            return false;
          out += '}';
        } while (eat(','));
        if (!eat('}'))
          return false;
      }
      out += "]}}";
      return true;
    }
    if (c == '[') {
      ++pos_;
      out += "{\"arrayValue\":{\"values\":[";
      if (!eat(']')) {
        bool first = true;
        do {
          if (!first)
            out += ',';
          first = false;
          if (!value(out))
            return false;
        } while (eat(','));
        if (!eat(']'))
          return false;
      }
      out += "]}}";
      return true;
    }
    size_t start = pos_;
    while (pos_ < in_.size() && std::strchr("-+0123456789.eE", in_[pos_]) && in_[pos_] != '\0')
      ++pos_;
    std::string_view number = in_.substr(start, pos_ - start);
    if (number.empty())
      return false;
    if (number.find_first_of(".eE") != std::string_view::npos) {
      out += "{\"doubleValue\":";
      out += number;
      out += '}';
      return true;
    }
    constexpr std::string_view kInt64Max = "9223372036854775807";
    bool too_big = number[0] != '-' && (number.size() > kInt64Max.size() ||
                                        (number.size() == kInt64Max.size() && number > kInt64Max));
    out += too_big ? "{\"stringValue\":\"" : "{\"intValue\":\"";
    out += number;
    out += "\"}";
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
};

// Opens an attribute: {"key":"...","value":  (the caller writes the value and closes it with "}").
void append_key(std::string &out, const std::string &key) {
  out += "{\"key\":";
  append_json_string(out, key);
  out += ",\"value\":";
}

void append_string_value(std::string &out, const std::string &s) {
  out += "{\"stringValue\":";
  append_json_string(out, s);
  out += "}}";
}

// The JSON lines write a byte that is not UTF-8 as \udcXX (a lone surrogate, output.h), which OTLP
// strings (UTF-8) cannot carry: it becomes U+FFFD, the replacement character, so the value is
// visibly marked.
void replace_lone_surrogates(std::string &line) {
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    if (line[i] != '\\')
      continue;
    if (line[i + 1] == 'u' && i + 5 < line.size() && (line[i + 2] == 'd' || line[i + 2] == 'D') &&
        (line[i + 3] == 'c' || line[i + 3] == 'C'))
      line.replace(i + 2, 4, "fffd");
    ++i; // the escaped character
  }
}

} // namespace

// ---- OTLP ---------------------------------------------------------------------------------------

OtlpExporter::OtlpExporter(const Manifest &manifest, OtlpOptions options, OtlpResource resource)
    : manifest_(manifest), options_(std::move(options)), resource_(std::move(resource)) {
  run_id_ = random_u64();
  span_base_ = random_u64() & 0x7fffffffffffffffull;
  unix_offset_ns_ = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
}

OtlpExporter::~OtlpExporter() { finish(); }

bool OtlpExporter::start(std::string &error) {
  if (!parse_http_url(options_.url, endpoint_, error))
    return false;
  // OTLP/HTTP: a base URL gets the traces path; a URL with a path is the traces endpoint itself.
  if (endpoint_.path.empty() || endpoint_.path == "/")
    endpoint_.path = "/v1/traces";
  thread_ = std::thread([this] { run(); });
  return true;
}

void OtlpExporter::on_event(const CallEvent &e) {
  if (!e.is_return || !e.duration_ns || e.duration_ns > e.ts_ns)
    return; // an entry (its span is made at the return), or a call not paired in BPF
  Span span;
  span.end_ns = e.ts_ns;
  span.start_ns = e.ts_ns - e.duration_ns;
  span.ret.assign(e.record);
  span.trace_hi = run_id_;
  span.trace_lo = span_id(e.root); // ids unique in this run, random across runs
  span.span_id = span_id(e.call);
  if (e.entry) {
    span.parent_id = span_id(e.parent);
    span.entry.assign(e.entry->record);
  } // else the entry event was lost: a root span with the results only
  if (!span.parent_id && e.spawn_call) {
    span.link_trace_lo = span_id(e.spawn_root);
    span.link_span_id = span_id(e.spawn_call);
  }
  enqueue(std::move(span));
}

void OtlpExporter::enqueue(Span &&span) {
  size_t bytes = span.entry.size() + span.ret.size();
  std::lock_guard<std::mutex> lock(mutex_);
  counts_.spans++;
  if (queue_.size() >= options_.queue_spans || queue_bytes_ + bytes > options_.queue_bytes) {
    counts_.dropped_queue++;
    return;
  }
  queue_bytes_ += bytes;
  queue_.push_back(std::move(span));
  if (queue_.size() == options_.batch_spans)
    wake_.notify_one();
}

std::string OtlpExporter::encode(const std::vector<Span> &batch) {
  // The exporter thread's own printer and symbolizer: the event loop's are not shared.
  if (!printer_) {
    printer_ = std::make_unique<EventPrinter>(manifest_, OutputFormat::Json, 0);
    if (!resource_.binary.empty()) {
      symbolizer_ = std::make_unique<Symbolizer>(resource_.binary, manifest_);
      printer_->set_symbolizer(symbolizer_.get());
    }
  }
  // Each event is printed as the JSON line --format json writes and its values copied from there
  // into OTLP JSON token by token (EventLine): no DOM (one for the whole request cost 17.7 µs per
  // event, one per line 6.5 µs).
  std::string entry_line, ret_line;
  auto print = [&](const std::string &raw, std::string &line) {
    line.clear();
    if (raw.empty() || !printer_->format(raw.data(), raw.size(), line))
      return false;
    replace_lone_surrogates(line);
    return true;
  };
  std::string out;
  out.reserve(batch.size() * 700 + 1024);
  out += "{\"resourceSpans\":[{\"resource\":{\"attributes\":[";
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::pair<const char *, const std::string *> resource[] = {
      {"service.name", &options_.service_name},      {"host.name", nullptr},
      {"process.runtime.version", &resource_.go_version}, {"process.executable.path", &resource_.binary},
      {"host.arch", &resource_.arch},                {"weave.build_id", &resource_.build_id}};
  std::string hostname = host;
  for (auto &[key, value] : resource) {
    append_key(out, key);
    append_string_value(out, value ? *value : hostname);
    out += ',';
  }
  append_key(out, "process.runtime.name");
  append_string_value(out, "go");
  out += ',';
  append_key(out, "telemetry.sdk.name");
  append_string_value(out, "weave");
  out += ',';
  append_key(out, "telemetry.sdk.language");
  append_string_value(out, "cpp");
  out += "]},\"scopeSpans\":[{\"scope\":{\"name\":\"weave\"},\"spans\":[";
  bool first_span = true;
  std::string attributes;
  for (const Span &s : batch) {
    bool have_entry = print(s.entry, entry_line);
    bool have_ret = print(s.ret, ret_line);
    EventLine entry(have_entry ? std::string_view(entry_line) : std::string_view());
    EventLine ret(have_ret ? std::string_view(ret_line) : std::string_view());
    attributes.clear();
    bool ok = (!have_entry || entry.read("weave.arg.", attributes)) && have_ret &&
              ret.read("weave.result.", attributes);
    if (!first_span)
      out += ',';
    first_span = false;
    out += "{\"traceId\":\"" + hex(s.trace_hi) + hex(s.trace_lo) + "\",\"spanId\":\"" + hex(s.span_id) + '"';
    if (s.parent_id)
      out += ",\"parentSpanId\":\"" + hex(s.parent_id) + '"';
    out += ",\"name\":";
    out += !ret.function.empty() ? ret.function : !entry.function.empty() ? entry.function : "\"\"";
    // SPAN_KIND_INTERNAL: a function call inside the process.
    out += ",\"kind\":1,\"startTimeUnixNano\":\"" + std::to_string(int64_t(s.start_ns) + unix_offset_ns_) +
           "\",\"endTimeUnixNano\":\"" + std::to_string(int64_t(s.end_ns) + unix_offset_ns_) +
           "\",\"attributes\":[";
    if (!ok) { // cannot happen for records the event loop accepted; say so rather than guess
      attributes.clear();
      append_key(attributes, "weave.decode_error");
      attributes += "{\"boolValue\":true}},";
    }
    out += attributes;
    auto join = [](const std::string &a, const std::string &b) { return a.empty() || b.empty() ? a + b : a + "," + b; };
    for (auto [key, list] : {std::pair{"weave.faults", join(entry.faults, ret.faults)},
                             std::pair{"weave.truncated", join(entry.truncated, ret.truncated)}}) {
      if (list.empty())
        continue;
      append_key(out, key);
      out += "{\"arrayValue\":{\"values\":[" + list + "]}}},";
    }
    const EventLine &ids = have_ret ? ret : entry;
    for (auto [key, token] : {std::pair{"weave.goid", ids.goid}, std::pair{"process.pid", ids.pid},
                              std::pair{"thread.id", ids.tid}}) {
      append_key(out, key);
      out += "{\"intValue\":\"";
      out += token;
      out += "\"}},";
    }
    append_key(out, "weave.probe");
    out += "{\"stringValue\":";
    out += !entry.probe.empty() ? entry.probe : !ret.probe.empty() ? ret.probe : "\"\"";
    out += "}}";
    if (!have_entry) {
      out += ',';
      append_key(out, "weave.entry_seen");
      out += "{\"boolValue\":false}}";
    }
    out += ']';
    if (s.link_span_id) // the call that spawned this span's goroutine
      out += ",\"links\":[{\"traceId\":\"" + hex(s.trace_hi) + hex(s.link_trace_lo) + "\",\"spanId\":\"" +
             hex(s.link_span_id) + "\"}]";
    out += '}';
  }
  out += "]}]}]}";
  return out;
}

// One request, retried with backoff while the collector cannot take it (no connection, 429, 5xx).
// Returns true when it was accepted; false when it was refused or every try failed.
bool OtlpExporter::send(const std::string &body, bool exiting, std::string &error) {
  int backoff_ms = 100;
  for (int attempt = 0; attempt <= options_.retries; ++attempt) {
    int timeout = options_.request_timeout_ms;
    if (exiting) {
      int64_t left = exit_deadline_ms_ - now_ms();
      if (left <= 0)
        return false;
      timeout = int(std::min<int64_t>(timeout, left));
    }
    HttpResponse response;
    bool answered = http_post(endpoint_, "application/json", body, timeout, response, error);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      counts_.requests++;
    }
    if (answered && response.status / 100 == 2)
      return true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      counts_.failures++;
    }
    if (answered) {
      error = "the collector answered " + std::to_string(response.status) +
              (response.body.empty() ? "" : ": " + printable_prefix(response.body, 200));
      // OTLP/HTTP: 429, 502, 503 and 504 are worth retrying; any other answer will not change.
      if (response.status != 429 && response.status != 502 && response.status != 503 && response.status != 504)
        return false;
    }
    if (attempt == options_.retries)
      break;
    // Sleep the backoff, cut short by the exit deadline.
    std::unique_lock<std::mutex> lock(mutex_);
    int64_t until = now_ms() + backoff_ms;
    if (stopping_)
      until = std::min(until, exit_deadline_ms_);
    while (now_ms() < until) {
      wake_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, until - now_ms())));
      if (stopping_)
        until = std::min(until, exit_deadline_ms_);
    }
    backoff_ms = std::min(backoff_ms * 2, 2000);
  }
  return false;
}

void OtlpExporter::run() {
  block_signals();
  std::vector<Span> batch;
  while (true) {
    bool exiting;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(options_.flush_interval_ms),
                     [&] { return stopping_ || queue_.size() >= options_.batch_spans; });
      exiting = stopping_;
      if (exiting && now_ms() >= exit_deadline_ms_) {
        counts_.dropped_exit += queue_.size();
        queue_.clear();
        queue_bytes_ = 0;
      }
      if (queue_.empty()) {
        if (exiting)
          return;
        continue;
      }
      batch.clear();
      while (!queue_.empty() && batch.size() < options_.batch_spans) {
        queue_bytes_ -= queue_.front().entry.size() + queue_.front().ret.size();
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::string body = encode(batch), error;
    bool ok = send(body, exiting, error);
    std::lock_guard<std::mutex> lock(mutex_);
    if (ok) {
      counts_.sent += batch.size();
    } else {
      (exiting && now_ms() >= exit_deadline_ms_ ? counts_.dropped_exit : counts_.dropped_failed) += batch.size();
      last_error_ = error;
    }
  }
}

void OtlpExporter::finish() {
  if (!thread_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    exit_deadline_ms_ = now_ms() + options_.exit_timeout_ms;
  }
  wake_.notify_all();
  thread_.join();
}

OtlpExporter::Counts OtlpExporter::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

std::string OtlpExporter::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

// ---- Prometheus ---------------------------------------------------------------------------------

namespace {

std::string label(const std::string &value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

} // namespace

const std::vector<double> &MetricsExporter::bounds() {
  // 1-2.5-5 steps from 1 µs to 10 s: a uprobe'd call costs microseconds, a request seconds.
  static const std::vector<double> b = [] {
    std::vector<double> v;
    for (double decade = 1e-6; decade < 10; decade *= 10)
      for (double step : {1.0, 2.5, 5.0})
        v.push_back(decade * step);
    v.push_back(10);
    return v;
  }();
  return b;
}

MetricsExporter::MetricsExporter(const Manifest &manifest) : manifest_(manifest) {
  std::map<std::string, uint32_t> index;
  for (const ManifestProbe &p : manifest.probes) {
    auto [it, added] = index.emplace(p.function, uint32_t(names_.size()));
    if (added)
      names_.push_back(p.function);
    function_of_probe_.push_back(it->second);
  }
  live_.resize(names_.size());
  for (Function &f : live_)
    f.buckets.assign(bounds().size() + 1, 0);
  published_ = live_;
}

bool MetricsExporter::start(const std::string &address, std::string &error) {
  HttpEndpoint at;
  if (!parse_listen_address(address, at, error))
    return false;
  return server_.start(
      at,
      [this](const std::string &path, std::string &content_type) {
        if (path != "/metrics")
          return std::string();
        content_type = "text/plain; version=0.0.4; charset=utf-8";
        return render();
      },
      error);
}

void MetricsExporter::on_event(const CallEvent &e) {
  Function &f = live_[function_of_probe_[e.probe_id]];
  if (!e.is_return) {
    f.calls++;
    return;
  }
  uint64_t ns = e.duration_ns;
  if (!ns)
    return;
  f.count++;
  f.sum_ns += ns;
  static const std::vector<uint64_t> bound_ns = [] {
    std::vector<uint64_t> v;
    for (double b : bounds())
      v.push_back(uint64_t(b * 1e9 + 0.5));
    return v;
  }();
  // le is inclusive: the first bound >= ns.
  f.buckets[size_t(std::lower_bound(bound_ns.begin(), bound_ns.end(), ns) - bound_ns.begin())]++;
}

void MetricsExporter::publish(const StatsReport &stats, const OtlpExporter::Counts *otlp, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  published_ = live_;
  stats_ = stats;
  have_otlp_ = otlp != nullptr;
  if (otlp)
    otlp_ = *otlp;
  seconds_ = seconds;
}

std::string MetricsExporter::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  auto family = [&](const char *name, const char *type, const char *help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto per_probe = [&](const char *name, const char *help, auto value, const char *type = "counter") {
    family(name, type, help);
    for (size_t i = 0; i < manifest_.probes.size() && i < stats_.probes.size(); ++i)
      out += std::string(name) + "{probe=\"" + label(manifest_.probes[i].name) + "\",kind=\"" +
             probe_kind(manifest_.probes[i]) + "\"} " + std::to_string(value(stats_.probes[i])) + "\n";
  };
  if (stats_.hits_known)
    per_probe("weave_probe_hits_total", "Times the probe's BPF program ran in a traced process.",
              [](const ProbeStats &s) { return s.hits; });
  per_probe("weave_probe_events_total", "Events the tracer received from the ring buffer.",
            [](const ProbeStats &s) { return s.events; });
  per_probe("weave_probe_lost_total", "Events lost: the ring buffer was full.",
            [](const ProbeStats &s) { return s.lost; });
  per_probe("weave_probe_filtered_total", "Events dropped by the probe's when: condition or min_duration.",
            [](const ProbeStats &s) { return s.filtered; });
  per_probe("weave_probe_limited_total", "Events dropped by limits: events_per_second.",
            [](const ProbeStats &s) { return s.limited; });
  per_probe("weave_probe_evicted_total",
            "min_duration: held entries its map of calls in flight could not keep.",
            [](const ProbeStats &s) { return s.evicted; });
  per_probe("weave_probe_held", "min_duration: calls held in BPF, in flight now.",
            [](const ProbeStats &s) { return s.held; }, "gauge"); // goes up and down
  if (stats_.run_time_known) {
    family("weave_probe_bpf_ns_per_run", "gauge",
           "Average nanoseconds per run of the probe's BPF program (--stats ns/run).");
    for (size_t i = 0; i < manifest_.probes.size() && i < stats_.program_of_probe.size(); ++i) {
      size_t p = stats_.program_of_probe[i];
      if (p >= stats_.programs.size())
        continue;
      const ProgramStats &program = stats_.programs[p];
      uint64_t avg = program.runs ? (program.run_time_ns + program.runs / 2) / program.runs : 0;
      out += "weave_probe_bpf_ns_per_run{probe=\"" + label(manifest_.probes[i].name) + "\",kind=\"" +
             probe_kind(manifest_.probes[i]) + "\"} " + std::to_string(avg) + "\n";
    }
    family("weave_bpf_program_runs_total", "counter", "Runs of each BPF program (all processes).");
    for (size_t p = 0; p < stats_.programs.size(); ++p)
      out += "weave_bpf_program_runs_total{program=\"" + std::to_string(p) + "\"} " +
             std::to_string(stats_.programs[p].runs) + "\n";
    family("weave_bpf_program_run_seconds_total", "counter", "Time spent in each BPF program.");
    for (size_t p = 0; p < stats_.programs.size(); ++p)
      out += "weave_bpf_program_run_seconds_total{program=\"" + std::to_string(p) + "\"} " +
             number(double(stats_.programs[p].run_time_ns) / 1e9) + "\n";
  }
  family("weave_calls_total", "counter", "Calls whose entry the tracer received, per function.");
  for (size_t f = 0; f < names_.size(); ++f)
    out += "weave_calls_total{function=\"" + label(names_[f]) + "\"} " + std::to_string(published_[f].calls) + "\n";
  family("weave_call_duration_seconds", "histogram",
         "Duration of the paired calls (entry to return, measured in BPF), per function.");
  for (size_t f = 0; f < names_.size(); ++f) {
    const Function &fn = published_[f];
    bool returns = false;
    for (size_t i = 0; i < manifest_.probes.size(); ++i)
      returns |= function_of_probe_[i] == f && manifest_.probes[i].duration_offset != 0;
    if (!returns)
      continue;
    std::string name = label(names_[f]);
    uint64_t cumulative = 0;
    for (size_t b = 0; b < bounds().size(); ++b) {
      cumulative += fn.buckets[b];
      out += "weave_call_duration_seconds_bucket{function=\"" + name + "\",le=\"" + number(bounds()[b]) + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    out += "weave_call_duration_seconds_bucket{function=\"" + name + "\",le=\"+Inf\"} " + std::to_string(fn.count) + "\n";
    out += "weave_call_duration_seconds_sum{function=\"" + name + "\"} " + number(double(fn.sum_ns) / 1e9) + "\n";
    out += "weave_call_duration_seconds_count{function=\"" + name + "\"} " + std::to_string(fn.count) + "\n";
  }
  if (have_otlp_) {
    family("weave_otlp_spans_total", "counter", "Paired calls made into spans for --otlp.");
    out += "weave_otlp_spans_total " + std::to_string(otlp_.spans) + "\n";
    family("weave_otlp_spans_sent_total", "counter", "Spans the collector accepted.");
    out += "weave_otlp_spans_sent_total " + std::to_string(otlp_.sent) + "\n";
    family("weave_otlp_spans_dropped_total", "counter", "Spans dropped, by reason.");
    out += "weave_otlp_spans_dropped_total{reason=\"queue_full\"} " + std::to_string(otlp_.dropped_queue) + "\n";
    out += "weave_otlp_spans_dropped_total{reason=\"failed\"} " + std::to_string(otlp_.dropped_failed) + "\n";
    out += "weave_otlp_spans_dropped_total{reason=\"exit\"} " + std::to_string(otlp_.dropped_exit) + "\n";
  }
  family("weave_tracing_seconds", "gauge", "Seconds since the probes were attached.");
  out += "weave_tracing_seconds " + number(seconds_) + "\n";
  return out;
}

} // namespace weave
