#include "calls.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "event.h"
#include "symbolize.h"

namespace weave {

uint32_t entry_probe_of(const Manifest &manifest, uint32_t id) {
  const ManifestProbe &p = manifest.probes[id];
  uint32_t pair = p.attach.empty() ? id : static_cast<uint32_t>((p.attach.front().cookie >> 24) & 0xffffff);
  return pair < manifest.probes.size() ? pair : id;
}

Calls::Calls(const Manifest &manifest, uint64_t start_ns)
    : manifest_(manifest), text_printer_(manifest, OutputFormat::Text, start_ns),
      json_printer_(manifest, OutputFormat::Json, start_ns) {
  entry_probe_.resize(manifest.probes.size());
  has_return_.assign(manifest.probes.size(), false);
  for (uint32_t i = 0; i < manifest.probes.size(); ++i) {
    entry_probe_[i] = entry_probe_of(manifest, i);
    // A probe has return events when an attach point is a return (the return probe's events pair
    // with their entry probe through the cookie).
    for (const ManifestAttach &a : manifest.probes[i].attach)
      if (a.kind == AttachKind::Return)
        has_return_[entry_probe_[i]] = true;
  }
  text_.reserve(4096);
  json_.reserve(4096);
}

Calls::~Calls() = default;

void Calls::set_symbolizer(Symbolizer *symbolizer) {
  symbolizer_ = symbolizer;
  text_printer_.set_symbolizer(symbolizer);
  json_printer_.set_symbolizer(symbolizer);
}

bool Calls::decode(const Manifest &manifest, const void *data, size_t size, CallEvent &e) {
  struct weave_event_header h;
  if (size < sizeof h)
    return false;
  std::memcpy(&h, data, sizeof h);
  if (h.probe_id >= manifest.probes.size() || !record_fits(manifest.probes[h.probe_id], data, size) ||
      (h.kind != WEAVE_EVENT_ENTRY && h.kind != WEAVE_EVENT_RETURN))
    return false;
  const ManifestProbe &probe = manifest.probes[h.probe_id];
  e.probe_id = h.probe_id;
  e.probe = &probe;
  e.entry_probe = entry_probe_of(manifest, h.probe_id);
  e.is_return = h.kind == WEAVE_EVENT_RETURN;
  e.point = h.point;
  e.pid = h.pid;
  e.tid = h.tid;
  e.goid = h.goid;
  // Goroutine 1 is main, made by the runtime's startup code: there is no go statement to name.
  e.gopc = manifest.has_gopc && h.goid > 1 ? h.gopc : 0;
  e.parent_goid = manifest.has_parent_goid && e.gopc ? h.parent_goid : 0;
  e.spawn_call = e.spawn_root = 0;
  e.ts_ns = h.ts_ns;
  e.faults = h.faults;
  e.bias = load_bias(h, probe);
  e.record = std::string_view(static_cast<const char *>(data), size);
  e.duration_ns = 0;
  if (e.is_return && probe.duration_offset && probe.duration_offset + 8 <= size)
    std::memcpy(&e.duration_ns, static_cast<const char *>(data) + probe.duration_offset, 8);
  return true;
}

bool Calls::on_record(const void *data, size_t size) {
  CallEvent event;
  if (!decode(manifest_, data, size, event)) {
    ++malformed_;
    return false;
  }
  pair(event);
  current_ = &event;
  text_ready_ = json_ready_ = false;
  for (EventSink *sink : sinks_)
    sink->on_event(event);
  current_ = nullptr;
  for (auto &open : closed_)
    if (free_.size() < 1024)
      free_.push_back(std::move(open));
  closed_.clear();
  return true;
}

// Pairing. Calls nest on a goroutine (or, without a goroutine id, a thread), so the calls open on
// one form a stack. A return belongs to the open call of its entry probe whose entry timestamp is
// exactly ts - duration (the BPF side measured the duration from that very timestamp), which pairs
// it even when calls above it never returned (a panic unwound them); without a duration only the
// top call can be it. A return matching nothing had its entry before the tracer attached, or lost.
void Calls::pair(CallEvent &e) {
  bool goroutine = e.goid != 0;
  Track key{e.pid, goroutine ? e.goid : e.tid, goroutine};
  auto it = open_.find(key);
  if (!e.is_return) {
    e.call = next_call_++;
    e.root = e.call;
    e.returns = has_return_[e.probe_id];
    if (it != open_.end() && !it->second.empty()) {
      e.parent = it->second.back()->event.call;
      e.root = it->second.back()->event.root;
      e.depth = static_cast<uint32_t>(it->second.size());
      e.spawn_call = it->second.front()->event.spawn_call;
      e.spawn_root = it->second.front()->event.spawn_root;
    } else {
      find_spawn_call(e);
    }
    if (!e.returns)
      return;
    if (it == open_.end()) {
      // A goroutine's stack is kept when it empties (reused by its next call, no allocation per
      // call); goroutines that went idle are forgotten when there are many, and past that the
      // oldest process's goroutines go first, with their open calls (it exited with them open).
      if (open_.size() >= kMaxTracks) {
        for (auto i = open_.begin(); i != open_.end();)
          i = i->second.empty() ? open_.erase(i) : std::next(i);
        if (open_.size() >= kMaxTracks) {
          drop_outer_half(open_.begin()->second, open_.begin()->second.size());
          open_.erase(open_.begin());
        }
      }
      it = open_.try_emplace(key).first;
    }
    auto &stack = it->second;
    // A goroutine whose calls never return (a loop of panics, a body without RET) loses its
    // outermost calls, half at a time; past the bound on all goroutines, every one does.
    if (stack.size() >= kMaxOpenPerTrack)
      drop_outer_half(stack, stack.size() / 2);
    if (open_total_ >= kMaxOpenTotal)
      for (auto &[track, other] : open_)
        drop_outer_half(other, (other.size() + 1) / 2);
    std::unique_ptr<Open> open;
    if (!free_.empty()) {
      open = std::move(free_.back());
      free_.pop_back();
      open->event.unwound.clear();
    } else {
      open = std::make_unique<Open>();
    }
    open->bytes.assign(e.record);
    std::vector<const CallEvent *> keep = std::move(open->event.unwound); // its capacity
    open->event = e;
    open->event.unwound = std::move(keep);
    open->event.record = open->bytes;
    stack.push_back(std::move(open));
    ++open_total_;
    return;
  }
  size_t match = SIZE_MAX;
  if (it != open_.end()) {
    auto &stack = it->second;
    if (e.duration_ns) {
      uint64_t entry_ts = e.ts_ns - e.duration_ns;
      for (size_t i = stack.size(); i-- > 0;)
        if (stack[i]->event.entry_probe == e.entry_probe && stack[i]->event.ts_ns == entry_ts) {
          match = i;
          break;
        }
    } else if (!stack.empty() && stack.back()->event.entry_probe == e.entry_probe) {
      match = stack.size() - 1;
    }
  }
  if (match == SIZE_MAX) {
    e.call = next_call_++;
    e.root = e.call;
    e.entry_seen = false;
    e.entry_ts_ns = e.duration_ns && e.duration_ns <= e.ts_ns ? e.ts_ns - e.duration_ns : e.ts_ns;
    if (it != open_.end())
      e.depth = static_cast<uint32_t>(it->second.size());
    return;
  }
  auto &stack = it->second;
  open_total_ -= stack.size() - match;
  // The calls above the match never returned: this return closes them, innermost first.
  while (stack.size() > match + 1) {
    closed_.push_back(std::move(stack.back()));
    stack.pop_back();
    e.unwound.push_back(&closed_.back()->event);
  }
  closed_.push_back(std::move(stack.back()));
  stack.pop_back();
  const CallEvent &entry = closed_.back()->event;
  e.entry = &entry;
  e.entry_seen = true;
  e.spawn_call = entry.spawn_call;
  e.spawn_root = entry.spawn_root;
  e.call = entry.call;
  e.parent = entry.parent;
  e.root = entry.root;
  e.depth = entry.depth;
  e.entry_ts_ns = e.duration_ns && e.duration_ns <= e.ts_ns ? e.ts_ns - e.duration_ns : entry.ts_ns;
}

// The parent goroutine's innermost open call of the function that ran the go statement (its
// physical function, or one inlined there): a call open there now is still the one that spawned
// this goroutine, since a goroutine's first traced call comes after its go statement. Without a
// symbolizer (no .gopclntab), nothing is claimed.
void Calls::find_spawn_call(CallEvent &e) {
  if (!e.parent_goid || !e.gopc || !symbolizer_)
    return;
  auto parent = open_.find(Track{e.pid, e.parent_goid, true});
  if (parent == open_.end() || parent->second.empty())
    return;
  const std::vector<Pclntab::Frame> &frames = symbolizer_->frames(e.bias, e.gopc);
  for (size_t i = parent->second.size(); i-- > 0;) {
    const CallEvent &open = parent->second[i]->event;
    for (const Pclntab::Frame &frame : frames)
      if (open.probe && frame.function == open.probe->function) {
        e.spawn_call = open.call;
        e.spawn_root = open.root;
        return;
      }
  }
}

const std::string &Calls::text(const CallEvent &event) {
  if (&event != current_ || !text_ready_) {
    text_.clear();
    text_printer_.format(event, text_);
    text_ready_ = &event == current_;
  }
  return text_;
}

const std::string &Calls::json(const CallEvent &event) {
  if (&event != current_ || !json_ready_) {
    json_.clear();
    json_printer_.format(event, json_);
    json_ready_ = &event == current_;
  }
  return json_;
}

void Calls::drop_outer_half(std::vector<std::unique_ptr<Open>> &stack, size_t n) {
  n = std::min(n, stack.size());
  stack.erase(stack.begin(), stack.begin() + static_cast<std::ptrdiff_t>(n));
  open_total_ -= n;
  dropped_ += n;
}

size_t Calls::open_calls() const {
  size_t n = 0;
  for (const auto &[key, stack] : open_)
    n += stack.size();
  return n;
}

} // namespace weave
