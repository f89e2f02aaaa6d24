#include "views.h"

#include "common/glyphs.h"

#include <nlohmann/json.hpp>

#include <optional>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <unistd.h>

#include "event.h"
#include "symbolize.h"
#include "common/safe_io.h"

#include <sys/stat.h>

namespace weave {

namespace {

constexpr size_t kTimeWidth = 10; // "   0.012345": the time column, right-aligned

// Seconds since tracer start with 6 decimals, right-aligned in kTimeWidth (as the text output
// writes them, by integer arithmetic).
void append_time_column(std::string &out, uint64_t ts_ns, uint64_t start_ns) {
  char buffer[32];
  bool negative = ts_ns < start_ns;
  uint64_t d = negative ? start_ns - ts_ns : ts_ns - start_ns;
  int n = snprintf(buffer, sizeof buffer, "%s%llu.%06llu", negative ? "-" : "",
                   static_cast<unsigned long long>(d / 1000000000),
                   static_cast<unsigned long long>(d % 1000000000 / 1000));
  if (static_cast<size_t>(n) < kTimeWidth)
    out.append(kTimeWidth - static_cast<size_t>(n), ' ');
  out.append(buffer, static_cast<size_t>(n));
}

// "  #12": a call's id (the Calls stage's, as JSON's "call"), at the end of its lines; nothing for 0.
void append_call_id(std::string &out, uint64_t call) {
  if (!call)
    return;
  out += "  #";
  out += std::to_string(call);
}

// "(~r0=2)" of a return's "main.f(~r0=2)", or "" when there are no results ("main.f()").
std::string_view results_of(std::string_view text, const std::string &function) {
  std::string_view results = text;
  if (results.substr(0, function.size()) == function)
    results.remove_prefix(function.size());
  return results == "()" ? std::string_view() : results;
}

} // namespace


// ---- CallGraph ----------------------------------------------------------------------------------

CallGraph::CallGraph(std::vector<Function> functions, uint64_t start_ns, Limits limits)
    : functions_(std::move(functions)), start_ns_(start_ns), limits_(limits) {
  // A function's entry and return events come from different probes: they pair by its name.
  std::unordered_map<std::string, uint32_t> first;
  for (uint32_t i = 0; i < functions_.size(); ++i) {
    uint32_t f = first.try_emplace(functions_[i].name, i).first->second;
    function_of_.push_back(f);
    if (functions_[i].returns)
      functions_[f].returns = true;
  }
}

void CallGraph::append_drop_note(Goroutine &g) {
  if (!g.dropped)
    return;
  g.text.append(kTimeWidth, ' ');
  g.text += " ... ";
  g.text += std::to_string(g.dropped);
  g.text += g.dropped == 1 ? " line" : " lines";
  g.text += " dropped here (at most ";
  g.text += std::to_string(limits_.lines_per_goroutine);
  g.text += " are buffered per goroutine, ";
  g.text += std::to_string(limits_.lines_total);
  g.text += " in all)\n";
  g.dropped = 0;
}

// Whether the next line is kept; a note about lines dropped before it goes first.
bool CallGraph::keep_line(Goroutine &g, bool force) {
  if (!force && (g.lines >= limits_.lines_per_goroutine || total_lines_ >= limits_.lines_total)) {
    ++g.dropped;
    ++dropped_total_;
    g.collapsible = std::string::npos;
    return false;
  }
  if (g.text.empty())
    g.started = next_tree_++;
  append_drop_note(g);
  ++g.lines;
  ++total_lines_;
  g.collapsible = std::string::npos;
  return true;
}

void CallGraph::begin_line(Goroutine &g, uint64_t ts_ns, bool timed, size_t depth) {
  if (timed)
    append_time_column(g.text, ts_ns, start_ns_);
  else
    g.text.append(kTimeWidth, ' ');
  g.text.append(1 + 2 * depth, ' ');
}

// Closes the top frame: with `ret`, by its return event; without, because it never returned
// (`why`). A call whose entry line is still the last line becomes a one-line call.
void CallGraph::close_frame(Goroutine &g, const Frame &frame, const GraphCall *ret,
                            const char *why) {
  const std::string &function = functions_[frame.function].name;
  std::string_view results = ret ? results_of(ret->text, function) : std::string_view();
  auto append_outcome = [&] {
    if (!results.empty()) {
      g.text += " = ";
      g.text += results;
    }
    if (ret && ret->duration_ns) {
      g.text += "  ";
      append_duration(g.text, ret->duration_ns);
    }
    if (why) {
      g.text += "  (";
      g.text += why;
      g.text += ')';
    }
    append_call_id(g.text, frame.call);
    g.text += '\n';
  };
  if (g.collapsible != std::string::npos) {
    // "...main.f(a=1) {  #3\n" becomes "...main.f(a=1) = (~r0=2)  1.2µs  #3\n"
    g.text.resize(g.collapsible);
    g.collapsible = std::string::npos;
    append_outcome();
    return;
  }
  // The outermost call's closing line is always kept: a tree shows how it ends.
  if (!keep_line(g, g.frames.size() == 1))
    return;
  begin_line(g, ret ? ret->ts_ns : 0, ret != nullptr, g.frames.size() - 1);
  g.text += "} ";
  g.text += function;
  append_outcome();
}

void CallGraph::append_header(const Key &key, const Goroutine &g, std::string &out) const {
  if (key.tid) {
    out += "thread ";
    out += std::to_string(key.tid);
    out += " (pid ";
    out += std::to_string(key.pid);
    out += ", no goroutine id):\n";
  } else {
    out += "goroutine ";
    out += std::to_string(key.goid);
    out += " (pid ";
    out += std::to_string(key.pid);
    out += ')';
    if (!g.created_by.empty()) {
      out += ", ";
      out += g.created_by;
    }
    out += ":\n";
  }
}

// Appends g's tree to `out` (under a header, unless the previous tree was this goroutine's too) and
// empties g for the next one.
bool CallGraph::nest(const Key &key, Goroutine &g) {
  if (!g.spawn_call || !g.parent_goid || key.tid)
    return false;
  auto p = goroutines_.find(Key{key.pid, 0, g.parent_goid});
  if (p == goroutines_.end() || &p->second == &g)
    return false;
  Goroutine &parent = p->second;
  size_t depth = SIZE_MAX;
  for (size_t i = 0; i < parent.frames.size(); ++i)
    if (parent.frames[i].call == g.spawn_call)
      depth = i + 1;
  if (depth == SIZE_MAX)
    return false;
  // The header, then each line shifted right by the spawning call's depth, after its time column.
  parent.text.append(kTimeWidth, ' ');
  parent.text.append(1 + 2 * depth, ' ');
  append_header(key, g, parent.text);
  const std::string indent(2 * depth, ' ');
  for (size_t at = 0; at < g.text.size();) {
    size_t end = g.text.find('\n', at);
    end = end == std::string::npos ? g.text.size() : end + 1;
    std::string_view line(g.text.data() + at, end - at);
    size_t cut = std::min(kTimeWidth, line.size());
    parent.text.append(line.substr(0, cut));
    parent.text += indent;
    parent.text.append(line.substr(cut));
    at = end;
  }
  parent.lines += g.lines + 1; // its lines are the parent's now, and so is the header
  ++total_lines_;
  parent.collapsible = std::string::npos; // the spawning call's line is no longer the last
  return true;
}

void CallGraph::print(const Key &key, Goroutine &g, std::string &out) {
  append_drop_note(g); // lines dropped at the very end
  if (nest(key, g)) {
    g.text.clear();
    g.frames.clear();
    g.lines = 0;
    g.collapsible = std::string::npos;
    ++idle_;
    return;
  }
  if (!printed_any_ || !(key == last_printed_))
    append_header(key, g, out);
  printed_any_ = true;
  last_printed_ = key;
  out += g.text;
  total_lines_ -= g.lines;
  g.text.clear(); // keeps its capacity: the goroutine's next tree reuses it
  g.frames.clear();
  g.lines = 0;
  g.collapsible = std::string::npos;
  ++idle_;
}

void CallGraph::add(const GraphCall &call, std::string &out) {
  if (call.probe >= functions_.size())
    return;
  // Goroutines come and go: forget the idle ones once there are many, so the map stays the size
  // of what is in flight (reusing entries saves allocating for every tree of a busy goroutine).
  if (idle_ > 4096 && idle_ * 2 > goroutines_.size()) {
    for (auto i = goroutines_.begin(); i != goroutines_.end();)
      if (i->second.text.empty() && i->second.frames.empty() && !i->second.dropped)
        i = goroutines_.erase(i);
      else
        ++i;
    idle_ = 0;
  }
  Key key = call.goid ? Key{call.pid, 0, call.goid} : Key{call.pid, call.tid, 0};
  auto [it, inserted] = goroutines_.try_emplace(key);
  Goroutine &g = it->second;
  bool was_idle = !inserted && g.text.empty() && g.frames.empty() && !g.dropped;
  if (was_idle)
    --idle_;
  uint32_t func = function_of_[call.probe];
  const Function &function = functions_[func];
  if (g.text.empty() && g.frames.empty()) { // a new tree: who made its goroutine
    g.created_by = call.created_by;
    g.parent_goid = call.parent_goid;
    g.spawn_call = call.spawn_call;
  }

  if (!call.is_return) {
    if (function.returns && g.frames.size() >= limits_.open_calls_max) {
      // Too many calls open: print what there is, and start over.
      while (!g.frames.empty()) {
        Frame top = g.frames.back();
        close_frame(g, top, nullptr, "no return seen before the open-call limit");
        g.frames.pop_back();
      }
      print(key, g, out);
      --idle_;
    }
    size_t depth = g.frames.size();
    size_t at = std::string::npos;
    bool kept = keep_line(g, false);
    if (kept) {
      begin_line(g, call.ts_ns, true, depth);
      g.text += call.text;
      at = g.text.size();
      if (function.returns)
        g.text += " {";
      append_call_id(g.text, call.call);
      g.text += '\n';
    }
    if (kept && !call.stack.empty()) {
      // The stack's lines, each already "    frame\n", under the call.
      std::string_view rest = call.stack;
      while (!rest.empty()) {
        size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end == std::string_view::npos ? rest.size() : end);
        rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
        if (!keep_line(g, false))
          continue;
        begin_line(g, 0, false, depth);
        g.text += line;
        g.text += '\n';
      }
    }
    if (function.returns) {
      g.frames.push_back({func, call.ts_ns, call.call});
      if (kept && call.stack.empty())
        g.collapsible = at;
    } else if (g.frames.empty()) {
      print(key, g, out); // an event outside any traced call is a tree of its own
    }
    return;
  }

  // A return: find its call. Paired by the Calls stage, it is the frame with its call id. Else, with a duration, the entry's timestamp is exactly ts - duration (the
  // BPF side computed it so), which pairs it even when calls above it never returned (a panic
  // unwound them); without one, only the top frame of the same function can be it.
  size_t match = SIZE_MAX;
  if (call.call) {
    for (size_t i = g.frames.size(); i-- > 0;)
      if (g.frames[i].call == call.call) {
        match = i;
        break;
      }
  } else if (call.duration_ns) {
    uint64_t entry_ts = call.ts_ns - call.duration_ns;
    for (size_t i = g.frames.size(); i-- > 0;)
      if (g.frames[i].function == func && g.frames[i].entry_ts == entry_ts) {
        match = i;
        break;
      }
  } else if (!g.frames.empty() && g.frames.back().function == func) {
    match = g.frames.size() - 1;
  }
  if (match == SIZE_MAX) {
    // Its entry came before tracing started, or was lost: the return alone, as the text output
    // writes it.
    if (keep_line(g, g.frames.empty())) {
      begin_line(g, call.ts_ns, true, g.frames.size());
      g.text += return_arrow();
      g.text += ' ';
      g.text += call.text;
      if (call.duration_ns) {
        g.text += "  ";
        append_duration(g.text, call.duration_ns);
      }
      g.text += kEntryNotSeen;
      append_call_id(g.text, call.call);
      g.text += '\n';
    }
    if (g.frames.empty())
      print(key, g, out);
    return;
  }
  while (g.frames.size() > match + 1) {
    Frame top = g.frames.back();
    close_frame(g, top, nullptr, "no return: unwound");
    g.frames.pop_back();
  }
  Frame frame = g.frames.back();
  close_frame(g, frame, &call, nullptr);
  g.frames.pop_back();
  if (g.frames.empty())
    print(key, g, out);
}

void CallGraph::finish(std::string &out) {
  std::vector<std::pair<uint64_t, Key>> order;
  for (auto &[key, g] : goroutines_)
    if (!g.text.empty() || !g.frames.empty() || g.dropped)
      order.push_back({g.text.empty() ? UINT64_MAX : g.started, key});
  std::sort(order.begin(), order.end(), [](const auto &a, const auto &b) {
    if (a.first != b.first)
      return a.first < b.first;
    return std::tie(a.second.pid, a.second.goid, a.second.tid) <
           std::tie(b.second.pid, b.second.goid, b.second.tid);
  });
  for (auto &[started, key] : order) {
    Goroutine &g = goroutines_[key];
    while (!g.frames.empty()) {
      Frame top = g.frames.back();
      close_frame(g, top, nullptr, "still open at exit");
      g.frames.pop_back();
    }
    print(key, g, out);
  }
}

// ---- GraphView ----------------------------------------------------------------------------------

namespace {

// "created by goroutine 20 in main.f at /src/main.go:12", as Go's own tracebacks name a goroutine's
// maker ("an unknown goroutine" where the Go release records none); "" when gopc names nothing.
std::string created_by(Symbolizer *symbolizer, const CallEvent &event) {
  std::string out = "created by ";
  if (event.parent_goid)
    out += "goroutine " + std::to_string(event.parent_goid);
  else
    out += "an unknown goroutine";
  const std::vector<Pclntab::Frame> *frames = symbolizer ? &symbolizer->frames(event.bias, event.gopc) : nullptr;
  if (frames && !frames->empty()) {
    const Pclntab::Frame &site = frames->front();
    out += " in " + site.function + " at " + site.file + ":" + std::to_string(site.line);
  } else {
    char pc[32];
    snprintf(pc, sizeof pc, " at pc 0x%llx", static_cast<unsigned long long>(event.gopc - event.bias));
    out += pc;
  }
  return out;
}

std::vector<CallGraph::Function> graph_functions(const Manifest &manifest) {
  std::vector<CallGraph::Function> functions;
  for (const ManifestProbe &probe : manifest.probes) {
    bool returns = false;
    for (const ManifestAttach &a : probe.attach)
      returns |= a.kind == AttachKind::Return;
    // What the text printer writes for the call before its '(': the probe's name first when it
    // is not the function's, so two probes on one function are two functions here too.
    functions.push_back({probe.name != probe.function ? probe.name + ": " + probe.function : probe.function, returns});
  }
  return functions;
}

} // namespace

GraphView::GraphView(Calls &calls, uint64_t start_ns, int fd, CallGraph::Limits limits)
    : calls_(calls), graph_(graph_functions(calls.manifest()), start_ns, limits), fd_(fd) {
  buffer_.reserve(kFlushThreshold + 4096);
  for (const ManifestProbe &probe : calls.manifest().probes)
    reorder_ = reorder_ || probe.holds_entry;
}

void GraphView::on_event(const CallEvent &event) {
  GraphCall call;
  call.probe = event.probe_id;
  call.is_return = event.is_return;
  call.pid = event.pid;
  call.tid = event.tid;
  call.goid = event.goid;
  call.ts_ns = event.ts_ns;
  call.duration_ns = event.duration_ns;
  call.call = event.call;
  if (event.gopc && event.depth == 0) { // a goroutine's outermost call: its tree's header names its maker
    call.parent_goid = event.parent_goid;
    call.spawn_call = event.spawn_call;
    call.created_by = created_by(calls_.symbolizer(), event);
  }
  const std::string &line = calls_.text(event);
  if (!reorder_) {
    process(call, line);
    return;
  }
  waiting_.emplace(std::pair{event.ts_ns, seq_++}, std::pair{call, line});
  newest_ns_ = std::max<uint64_t>(newest_ns_, event.ts_ns);
  release(newest_ns_ > kReorderWindowNs ? newest_ns_ - kReorderWindowNs : 0);
}

// Hands the events older than `before_ns` to the graph in timestamp order (and the oldest ones
// past kReorderMax).
void GraphView::release(uint64_t before_ns) {
  while (!waiting_.empty() &&
         (waiting_.begin()->first.first < before_ns || waiting_.size() > kReorderMax)) {
    auto node = waiting_.extract(waiting_.begin());
    process(node.mapped().first, node.mapped().second);
  }
}

void GraphView::process(GraphCall call, std::string_view text) {
  const ManifestProbe &probe = calls_.manifest().probes[call.probe];
  // The text line is "<time> pid=P tid=T goid=G [← ]call[  duration]\n" and then the stack's lines:
  // the call is what follows the goid's value (and the return's arrow). Strings in it are escaped,
  // so its first '\n' ends it, and a duration is the last thing on it, after two spaces.
  size_t goid = text.find(" goid=");
  size_t start = goid == std::string_view::npos ? 0 : text.find(' ', goid + 1) + 1;
  size_t end = text.find('\n');
  std::string_view body = text.substr(start, end - start);
  call.stack = end + 1 < text.size() ? text.substr(end + 1) : std::string_view();
  const std::string_view arrow = return_arrow();
  if (call.is_return && body.substr(0, arrow.size()) == arrow && body.substr(arrow.size(), 1) == " ")
    body.remove_prefix(arrow.size() + 1);
  if (call.duration_ns) {
    size_t gap = body.rfind("  ");
    if (gap != std::string_view::npos)
      body = body.substr(0, gap);
  } else if (call.is_return && probe.duration_offset && body.size() >= kEntryNotSeen.size() &&
             body.substr(body.size() - kEntryNotSeen.size()) == kEntryNotSeen) {
    body.remove_suffix(kEntryNotSeen.size()); // the tree says it its own way, or pairs the call
  }
  call.text = body;
  graph_.add(call, buffer_);
  if (failed())
    buffer_.clear(); // stdout is gone: keep building (it is cheap), print nothing
  else if (buffer_.size() >= kFlushThreshold)
    flush();
}

bool GraphView::flush() { return flush_buffer(fd_, buffer_, error_); }

void GraphView::finish() {
  release(UINT64_MAX);
  graph_.finish(buffer_);
  flush();
}

// ---- LatencySummary -----------------------------------------------------------------------------

LatencySummary::LatencySummary(const Manifest &manifest) {
  for (const ManifestProbe &probe : manifest.probes)
    functions_.push_back(probe.function);
  latency_.resize(functions_.size());
}

LatencySummary::LatencySummary(std::vector<std::string> functions)
    : functions_(std::move(functions)) {
  latency_.resize(functions_.size());
}

void LatencySummary::on_event(const CallEvent &event) {
  if (event.is_return && event.duration_ns)
    add(event.probe_id, event.duration_ns);
}

void LatencySummary::add(uint32_t probe, uint64_t ns) {
  if (probe >= latency_.size() || ns == 0)
    return;
  Latency &l = latency_[probe];
  if (l.buckets.empty())
    l.buckets.assign(64 * kSub, 0);
  ++l.calls;
  ++recorded_;
  l.min = std::min(l.min, ns);
  l.max = std::max(l.max, ns);
  if (l.samples.size() < kExactSamples)
    l.samples.push_back(ns);
  // 16 buckets per power of two: the exponent, then the 4 bits after the leading one.
  unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(ns));
  uint64_t sub = e >= 4 ? (ns >> (e - 4)) & (kSub - 1) : (ns << (4 - e)) & (kSub - 1);
  ++l.buckets[e * kSub + sub];
}

LatencySummary::Stats LatencySummary::stats(uint32_t probe) const {
  Stats s;
  if (probe >= latency_.size() || latency_[probe].calls == 0)
    return s;
  const Latency &l = latency_[probe];
  s.calls = l.calls;
  s.min = l.min;
  s.max = l.max;
  // Nearest rank: the p-th percentile is the ceil(p/100 * n)-th smallest duration.
  auto rank = [&](uint64_t p) { return std::max<uint64_t>(1, (p * l.calls + 99) / 100); };
  if (l.calls <= kExactSamples) {
    std::vector<uint64_t> sorted = l.samples;
    std::sort(sorted.begin(), sorted.end());
    s.p50 = sorted[rank(50) - 1];
    s.p99 = sorted[rank(99) - 1];
    return s;
  }
  s.exact = false;
  auto estimate = [&](uint64_t r) {
    uint64_t seen = 0;
    for (size_t i = 0; i < l.buckets.size(); ++i) {
      seen += l.buckets[i];
      if (seen >= r) {
        double width = std::ldexp(1.0, static_cast<int>(i / kSub)) / kSub;
        double low = std::ldexp(1.0, static_cast<int>(i / kSub)) + width * double(i % kSub);
        double mid = low + width / 2;
        uint64_t v = mid >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(mid);
        return std::clamp(v, l.min, l.max);
      }
    }
    return l.max;
  };
  s.p50 = estimate(rank(50));
  s.p99 = estimate(rank(99));
  return s;
}

std::array<uint64_t, 64> LatencySummary::histogram(uint32_t probe) const {
  std::array<uint64_t, 64> h{};
  if (probe >= latency_.size())
    return h;
  const Latency &l = latency_[probe];
  for (size_t i = 0; i < l.buckets.size(); ++i)
    h[i / kSub] += l.buckets[i];
  return h;
}

namespace {

std::string duration_text(uint64_t ns, bool estimated = false) {
  std::string s = estimated ? "~" : "";
  append_duration(s, ns);
  return s;
}

// The display width of UTF-8 text (µ is two bytes, one column).
size_t columns(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s)
    n += (c & 0xc0) != 0x80;
  return n;
}

void pad_right(std::string &out, const std::string &s, size_t width) {
  out += s;
  for (size_t n = columns(s); n < width; ++n)
    out += ' ';
}

void pad_left(std::string &out, const std::string &s, size_t width) {
  for (size_t n = columns(s); n < width; ++n)
    out += ' ';
  out += s;
}

} // namespace

std::vector<std::string> LatencySummary::lines() const {
  std::vector<std::string> out;
  if (empty())
    return out;
  std::vector<uint32_t> shown;
  for (uint32_t i = 0; i < latency_.size(); ++i)
    if (latency_[i].calls)
      shown.push_back(i);
  std::stable_sort(shown.begin(), shown.end(),
                   [&](uint32_t a, uint32_t b) { return latency_[a].calls > latency_[b].calls; });
  size_t more = shown.size() > kListed ? shown.size() - kListed : 0;
  shown.resize(shown.size() - more);

  // The table: every cell first, then the widths.
  std::vector<std::array<std::string, 6>> rows = {
      {"function", "calls", "min", "p50", "p99", "max"}};
  bool estimated = false;
  for (uint32_t i : shown) {
    Stats s = stats(i);
    estimated |= !s.exact;
    rows.push_back({functions_[i], std::to_string(s.calls), duration_text(s.min),
                    duration_text(s.p50, !s.exact), duration_text(s.p99, !s.exact),
                    duration_text(s.max)});
  }
  std::array<size_t, 6> width{};
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], columns(row[c]));
  out.push_back("latency of the calls that returned, at exit:");
  for (const auto &row : rows) {
    std::string line = "  ";
    pad_right(line, row[0], width[0]);
    for (size_t c = 1; c < row.size(); ++c) {
      line += "  ";
      pad_left(line, row[c], width[c]);
    }
    out.push_back(line);
  }
  if (more)
    out.push_back("  ... and " + std::to_string(more) + " more function" + (more == 1 ? "" : "s") +
                  " with fewer calls");
  if (estimated)
    out.push_back("  ~: estimated from a histogram (exact up to " + std::to_string(kExactSamples) +
                  " calls)");

  // A histogram per function, bpftrace's hist() style: [low, high) count |@@@@|, from the first
  // bucket with calls to the last.
  for (uint32_t i : shown) {
    std::array<uint64_t, 64> h = histogram(i);
    size_t first = 0, last = 63;
    while (first < 63 && !h[first])
      ++first;
    while (last > first && !h[last])
      --last;
    uint64_t top = *std::max_element(h.begin(), h.end());
    std::vector<std::string> labels, counts;
    size_t label_width = 0, count_width = 0;
    for (size_t b = first; b <= last; ++b) {
      std::string label = "[" + duration_text(uint64_t(1) << b) + ", " +
                          (b == 63 ? std::string("max") : duration_text(uint64_t(1) << (b + 1))) +
                          ")";
      label_width = std::max(label_width, columns(label));
      counts.push_back(std::to_string(h[b]));
      count_width = std::max(count_width, counts.back().size());
      labels.push_back(std::move(label));
    }
    out.push_back("  " + functions_[i] + ":");
    for (size_t b = first; b <= last; ++b) {
      std::string line = "    ";
      pad_right(line, labels[b - first], label_width);
      line += ' ';
      pad_left(line, counts[b - first], count_width);
      size_t bar = h[b] == 0 ? 0 : std::max<uint64_t>(1, h[b] * kBarWidth / top);
      line += " |";
      line.append(bar, '@');
      line.append(kBarWidth - bar, ' ');
      line += '|';
      out.push_back(std::move(line));
    }
  }
  return out;
}

// ---- Views --------------------------------------------------------------------------------------

// ---- --folded -------------------------------------------------------------------------------------

namespace {

} // namespace

void FoldedStacks::add_entry(uint32_t probe, uint32_t pid, uint32_t tid, uint64_t goid, std::string_view stack,
                             uint64_t call) {
  // Frames come innermost first, one per line: "    main.g (f.go:3)", " [inlined]" after an
  // inlined one, or "    0x4a3f60" when the address has no symbol.
  std::vector<std::string> frames;
  while (!stack.empty()) {
    size_t end = stack.find('\n');
    std::string_view line = stack.substr(0, end);
    stack = end == std::string_view::npos ? std::string_view() : stack.substr(end + 1);
    size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos)
      continue;
    line.remove_prefix(start);
    bool inlined = line.size() >= 10 && line.substr(line.size() - 10) == " [inlined]";
    std::string name(line.substr(0, line.find(" (")));
    // ';' separates frames and a space ends the stack in this format: neither may be in a name.
    for (char &c : name)
      if (c == ';' || c == ' ')
        c = '_';
    frames.push_back(name + (inlined ? "_[i]" : ""));
  }
  std::string path;
  for (size_t i = frames.size(); i-- > 0;)
    path += frames[i] + ";";
  path += probe < functions_.size() ? functions_[probe] : "?";
  if (weight_ == Weight::Calls) {
    ++weights_[path];
    return;
  }
  open_[{pid, goid ? 0 : tid, goid}].push_back({probe, std::move(path), 0, call});
}

void FoldedStacks::add_return(uint32_t probe, uint32_t pid, uint32_t tid, uint64_t goid, uint64_t duration_ns,
                              uint64_t call) {
  if (weight_ != Weight::Time)
    return;
  auto it = open_.find({pid, goid ? 0 : tid, goid});
  if (it == open_.end())
    return;
  std::vector<Open> &calls = it->second;
  // Its call (the innermost open call of this probe, without an id): calls in between that never
  // returned are dropped.
  for (size_t i = calls.size(); i-- > 0;) {
    if (call ? calls[i].call != call : calls[i].probe != probe)
      continue;
    // A flame graph draws a frame as wide as the weights of every stack under it, so a call
    // weighs its own time: its duration less that of the traced calls that returned inside it,
    // which weigh theirs on their deeper stacks. Weighed whole, a recursion 13 deep was drawn
    // ten times wider than the outermost call lasted.
    if (duration_ns) {
      uint64_t own = duration_ns > calls[i].inner_ns ? duration_ns - calls[i].inner_ns : 0;
      if (own)
        weights_[calls[i].path] += own;
      if (i > 0)
        calls[i - 1].inner_ns += duration_ns;
    }
    calls.resize(i);
    break;
  }
  if (calls.empty())
    open_.erase(it);
}

std::string FoldedStacks::text() const {
  std::string out;
  for (const auto &[path, weight] : weights_)
    out += path + " " + std::to_string(weight) + "\n";
  return out;
}

FoldedView::FoldedView(Calls &calls, std::string path, FoldedStacks::Weight weight)
    : calls_(calls),
      folded_([&] {
        std::vector<std::string> functions;
        for (const ManifestProbe &p : calls.manifest().probes)
          functions.push_back(p.function);
        return functions;
      }(), weight),
      path_(std::move(path)) {}

void FoldedView::on_event(const CallEvent &event) {
  if (event.is_return) {
    folded_.add_return(event.entry_probe, event.pid, event.tid, event.goid, event.duration_ns, event.call);
    return;
  }
  if (!event.probe->stack_depth)
    return;
  const std::string &line = calls_.text(event);
  size_t end = line.find('\n');
  folded_.add_entry(event.probe_id, event.pid, event.tid, event.goid,
                    end == std::string::npos ? std::string_view() : std::string_view(line).substr(end + 1),
                    event.call);
}

FoldedView::~FoldedView() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_path_.c_str());
  }
}

bool FoldedView::open(std::string &error) {
  // The temporary is created now, beside the file (mkstemp: no link followed, nothing reused), so
  // a path it cannot write stops the tracer before the program runs; write() fills and renames it.
  std::string why;
  fd_ = create_temp_beside(path_, tmp_path_, why);
  if (fd_ < 0) {
    error = "--folded: cannot write " + path_ + ": " + why;
    return false;
  }
  return true;
}

bool FoldedView::write(std::string &error) {
  std::string text = folded_.text();
  if (fd_ < 0) {
    // Not opened up front: a fresh temporary beside the file, renamed over it.
    if (!write_file_replacing(path_, text, 0644, error)) {
      error = "--folded: cannot write " + path_ + ": " + error;
      return false;
    }
    return true;
  }
  int fd = fd_;
  fd_ = -1;
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  bool ok = done == text.size() && ::fchmod(fd, 0644) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    error = "--folded: cannot write " + path_ + ": " + std::strerror(errno);
    ::unlink(tmp_path_.c_str());
    return false;
  }
  return true;
}

// ---- --perfetto -----------------------------------------------------------------------------------

namespace {

// Microseconds, the trace-event format's unit, with nanosecond precision.
std::string micros(uint64_t ns) {
  return std::to_string(ns / 1000) + "." + std::to_string(1000 + ns % 1000).substr(1);
}

std::string json_quote(const std::string &s) { return nlohmann::json(s).dump(); }

// The JSON lines EventPrinter writes are copied into the trace as they are, never re-encoded: a
// string that was not valid UTF-8 holds `\udcXX` escapes (one per byte, as in the JSON lines),
// which a strict parser such as nlohmann's refuses as lone surrogates, and re-encoding would lose
// them. These scan the printer's own output, which is valid JSON text.

// The end of the JSON value that starts at `at` (a string, number, literal, object or array).
size_t json_value_end(std::string_view text, size_t at) {
  if (at >= text.size())
    return text.size();
  if (text[at] == '"') {
    for (size_t i = at + 1; i < text.size(); ++i) {
      if (text[i] == '\\')
        ++i;
      else if (text[i] == '"')
        return i + 1;
    }
    return text.size();
  }
  if (text[at] == '{' || text[at] == '[') {
    int depth = 0;
    for (size_t i = at; i < text.size(); ++i) {
      char c = text[i];
      if (c == '"') {
        i = json_value_end(text, i) - 1;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return text.size();
  }
  size_t end = text.find_first_of(",}] \n", at);
  return end == std::string_view::npos ? text.size() : end;
}

// The JSON text of the top-level member `key` of the object `line` (keys are plain ASCII in the
// printer's output), or "" when there is none.
std::string_view json_member(std::string_view line, std::string_view key) {
  size_t i = line.find('{');
  if (i == std::string_view::npos)
    return {};
  ++i;
  while (i < line.size() && line[i] == '"') {
    size_t key_end = json_value_end(line, i);
    std::string_view name = line.substr(i + 1, key_end - i - 2);
    size_t value = key_end + 1; // past the ':'
    size_t value_end = json_value_end(line, value);
    if (name == key)
      return line.substr(value, value_end - value);
    i = value_end + 1; // past the ','
  }
  return {};
}

// `"name"` with `suffix` added inside the quotes.
std::string json_suffixed(const std::string &quoted, std::string_view suffix) {
  if (quoted.size() < 2)
    return json_quote(std::string(suffix));
  return quoted.substr(0, quoted.size() - 1) + std::string(suffix) + "\"";
}

} // namespace

PerfettoView::PerfettoView(Calls &calls, uint64_t start_ns, std::string path)
    : calls_(calls), start_ns_(start_ns), path_(std::move(path)) {}

PerfettoView::~PerfettoView() {
  if (file_) {
    std::fclose(file_);
    ::unlink(tmp_path_.c_str());
  }
}

bool PerfettoView::open(std::string &error) {
  // A fresh temporary (mkstemp, O_EXCL) beside the file, renamed over it at exit: a link planted
  // at FILE or at any temporary name is never written through (README "Safety").
  std::string why;
  int fd = create_temp_beside(path_, tmp_path_, why);
  if (fd >= 0 && fchmod(fd, 0644) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp_path_.c_str());
    fd = -1;
  }
  if (fd < 0 || !(file_ = fdopen(fd, "w"))) {
    error = "--perfetto: cannot write " + path_ + ": " + (fd < 0 ? why : std::string(std::strerror(errno)));
    if (fd >= 0) {
      ::close(fd);
      ::unlink(tmp_path_.c_str());
    }
    return false;
  }
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", file_);
  return true;
}

void PerfettoView::emit(const std::string &event) {
  if (!file_)
    return;
  if (!first_)
    std::fputs(",\n", file_);
  first_ = false;
  std::fputs(event.c_str(), file_);
}

void PerfettoView::name_track(uint32_t pid, uint64_t track, bool goroutine) {
  if (!named_.emplace(pid, track, goroutine).second)
    return;
  // Goroutine tracks are numbered by goid, thread tracks (no goroutine id) after them by tid.
  emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
       ",\"tid\":" + std::to_string(goroutine ? track : (1ULL << 40) + track) + ",\"args\":{\"name\":" +
       json_quote((goroutine ? "goroutine " : "thread ") + std::to_string(track)) + "}}");
}

void PerfettoView::entry_json(const CallEvent &entry, std::string &function, std::string &args) {
  const std::string &line = calls_.json(entry);
  std::string_view name = json_member(line, "function");
  function = name.empty() ? std::string("\"?\"") : std::string(name);
  std::string_view captured = json_member(line, "args");
  args = captured.empty() ? "{}" : std::string(captured);
}

void PerfettoView::on_event(const CallEvent &e) {
  bool goroutine = e.goid != 0;
  uint64_t track = goroutine ? e.goid : e.tid;
  name_track(e.pid, track, goroutine);
  std::string head = ",\"pid\":" + std::to_string(e.pid) +
                     ",\"tid\":" + std::to_string(goroutine ? track : (1ULL << 40) + track);
  if (!e.is_return && e.depth == 0 && e.spawn_call && e.parent_goid) {
    // A goroutine's first call, spawned inside a call still open on its parent: a flow arrow from
    // the parent's slice open now (the spawning call, or one inside it) to this call's slice.
    std::string at = ",\"ts\":" + micros(e.ts_ns - start_ns_) + ",\"pid\":" + std::to_string(e.pid);
    std::string id = std::to_string(e.call);
    emit("{\"ph\":\"s\",\"name\":\"go\",\"cat\":\"goroutine\",\"id\":" + id + at +
         ",\"tid\":" + std::to_string(e.parent_goid) + "}");
    emit("{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"go\",\"cat\":\"goroutine\",\"id\":" + id + at +
         ",\"tid\":" + std::to_string(track) + "}");
  }
  if (!e.is_return) {
    if (e.returns)
      return; // a slice at its return
    std::string function, args;
    entry_json(e, function, args);
    emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":" + function + ",\"ts\":" + micros(e.ts_ns - start_ns_) + head +
         ",\"args\":" + args + "}");
    return;
  }
  // Calls opened inside this one that never returned are closed at its end (their frames are
  // gone). Each one ends a nanosecond before the call around it. Ending them all at this return, as
  // their frames did, made ties that viewers computing ts + dur in floating point (speedscope)
  // break either way: a caller closed before the call inside it stayed open to the end.
  std::string function, args = "{}";
  for (size_t k = 0; k < e.unwound.size(); ++k) {
    const CallEvent &open = *e.unwound[k];
    entry_json(open, function, args);
    uint64_t end = e.ts_ns - std::min<uint64_t>(e.unwound.size() - k, e.ts_ns - open.ts_ns);
    emit("{\"ph\":\"X\",\"name\":" + json_suffixed(function, " (no return seen)") + ",\"ts\":" +
         micros(open.ts_ns - start_ns_) + ",\"dur\":" + micros(end - open.ts_ns) + head +
         ",\"args\":{\"args\":" + args + "}}");
  }
  args = "{}";
  if (e.entry)
    entry_json(*e.entry, function, args);
  const std::string &line = calls_.json(e);
  std::string_view name = json_member(line, "function");
  function = name.empty() ? std::string("\"?\"") : std::string(name);
  std::string_view returned = json_member(line, "results");
  std::string results = returned.empty() ? "{}" : std::string(returned);
  uint64_t begin = e.entry_ts_ns;
  emit("{\"ph\":\"X\",\"name\":" + function + ",\"ts\":" + micros(begin - start_ns_) +
       ",\"dur\":" + micros(e.ts_ns - begin) + head + ",\"args\":{\"args\":" + args + ",\"results\":" + results +
       "}}");
}

bool PerfettoView::finish(std::string &error) {
  if (!file_)
    return true;
  std::string function, args;
  calls_.for_each_open([&](const CallEvent &call) {
    entry_json(call, function, args);
    bool goroutine = call.goid != 0;
    uint64_t track = goroutine ? call.goid : call.tid;
    emit("{\"ph\":\"i\",\"s\":\"t\",\"name\":" + json_suffixed(function, " (still open at exit)") +
         ",\"ts\":" + micros(call.ts_ns - start_ns_) + ",\"pid\":" + std::to_string(call.pid) +
         ",\"tid\":" + std::to_string(goroutine ? track : (1ULL << 40) + track) +
         ",\"args\":{\"args\":" + args + "}}");
  });
  std::fputs("\n]}\n", file_);
  bool ok = std::ferror(file_) == 0;
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok || std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    error = "--perfetto: cannot write " + path_ + ": " + std::strerror(errno);
    ::unlink(tmp_path_.c_str());
    return false;
  }
  return true;
}

Views::Views(Calls &calls, ViewOptions options, uint64_t start_ns, int fd) {
  if (options.graph)
    graph_ = std::make_unique<GraphView>(calls, start_ns, fd);
  if (options.summary)
    summary_ = std::make_unique<LatencySummary>(calls.manifest());
  if (!options.folded.empty())
    folded_ = std::make_unique<FoldedView>(calls, options.folded, options.folded_weight);
  if (!options.perfetto.empty())
    perfetto_ = std::make_unique<PerfettoView>(calls, start_ns, options.perfetto);
}

bool Views::open_files(std::string &error) {
  return (!folded_ || folded_->open(error)) && (!perfetto_ || perfetto_->open(error));
}

void Views::on_event(const CallEvent &event) {
  if (graph_)
    graph_->on_event(event);
  if (summary_)
    summary_->on_event(event);
  if (folded_)
    folded_->on_event(event);
  if (perfetto_)
    perfetto_->on_event(event);
}

bool Views::flush() {
  return graph_ ? graph_->flush() : true;
}

void Views::finish() {
  if (graph_)
    graph_->finish();
  if (folded_)
    folded_->write(folded_error_);
  std::string error;
  if (perfetto_ && !perfetto_->finish(error))
    folded_error_ += (folded_error_.empty() ? "" : "; ") + error;
}

const std::string &Views::error() const {
  static const std::string none;
  return graph_ ? graph_->error() : none;
}

std::vector<std::string> Views::summary_lines() const {
  return summary_ ? summary_->lines() : std::vector<std::string>();
}

} // namespace weave
