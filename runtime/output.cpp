#include "output.h"
#include "calls.h"

#include "common/glyphs.h"
#include "common/color.h"
#include "symbolize.h"

#include <cmath>

#include <charconv>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "event.h"

namespace weave {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// Events are read with memcpy: the ring buffer aligns records to 8 bytes, but a record's layout
// comes from the manifest, and memcpy is free where the address is aligned anyway.
uint64_t load_u64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void append_escape(std::string &out, const char *prefix, unsigned byte) {
  out += prefix;
  out += kHex[byte >> 4];
  out += kHex[byte & 15];
}

// "Seconds since tracer start" with 6 decimals, by integer arithmetic: a double would print
// rounding noise after a day of uptime.
void append_time(std::string &out, uint64_t ts_ns, uint64_t start_ns) {
  uint64_t d = ts_ns - start_ns;
  if (ts_ns < start_ns) {
    out += '-';
    d = start_ns - ts_ns;
  }
  append_u64(out, d / 1000000000);
  out += '.';
  char micros[6];
  uint64_t us = d % 1000000000 / 1000;
  for (int i = 5; i >= 0; --i, us /= 10)
    micros[i] = static_cast<char>('0' + us % 10);
  out.append(micros, sizeof micros);
}

std::string json_quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

const char *kind_name(uint32_t kind) {
  return kind == WEAVE_EVENT_RETURN ? "return" : "entry";
}

} // namespace

size_t utf8_sequence_length(const unsigned char *p, size_t n) {
  if (n == 0)
    return 0;
  unsigned c = p[0];
  if (c < 0x80)
    return 1;
  size_t len;
  unsigned lo = 0x80, hi = 0xbf; // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf)
    len = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0)
      lo = 0xa0; // overlong
    else if (c == 0xed)
      hi = 0x9f; // UTF-16 surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0)
      lo = 0x90; // overlong
    else if (c == 0xf4)
      hi = 0x8f; // past U+10FFFF
  } else
    return 0;
  if (n < len || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < len; ++i)
    if (p[i] < 0x80 || p[i] > 0xbf)
      return 0;
  return len;
}

void append_text_string(std::string &out, std::string_view bytes) {
  auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  size_t n = bytes.size();
  out += '"';
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    size_t len = utf8_sequence_length(p + i, n - i);
    if (len == 0) {
      append_escape(out, "\\x", c);
      ++i;
      continue;
    }
    if (len == 2 && c == 0xc2 && p[i + 1] < 0xa0) {
      append_escape(out, "\\u00", p[i + 1]); // C1 control, U+0080..U+009F
    } else if (len > 1) {
      out.append(bytes.data() + i, len);
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      append_escape(out, "\\x", c);
    } else {
      out += static_cast<char>(c);
    }
    i += len;
  }
  out += '"';
}

void append_json_string(std::string &out, std::string_view bytes) {
  auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  size_t n = bytes.size();
  out += '"';
  for (size_t i = 0; i < n;) {
    unsigned c = p[i];
    size_t len = utf8_sequence_length(p + i, n - i);
    if (len == 0) {
      // Surrogate escape (PEP 383): the byte 0xXX becomes U+DCXX, which no valid UTF-8 decodes to,
      // so the original bytes come back exactly. Only 0x80..0xFF can be invalid here.
      append_escape(out, "\\udc", c);
      ++i;
      continue;
    }
    if (len > 1)
      out.append(bytes.data() + i, len);
    else if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c < 0x20 || c == 0x7f)
      append_escape(out, "\\u00", c);
    else
      out += static_cast<char>(c);
    i += len;
  }
  out += '"';
}

void append_u64(std::string &out, uint64_t v) {
  char buf[20];
  size_t i = sizeof buf;
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  out.append(buf + i, sizeof buf - i);
}

void append_i64(std::string &out, int64_t v) {
  if (v < 0) {
    out += '-';
    // 0 - v in unsigned arithmetic is |v| even for INT64_MIN, whose negation overflows int64.
    append_u64(out, 0 - static_cast<uint64_t>(v));
  } else {
    append_u64(out, static_cast<uint64_t>(v));
  }
}

void append_hex(std::string &out, uint64_t v) {
  char buf[16];
  size_t i = sizeof buf;
  do {
    buf[--i] = kHex[v & 15];
    v >>= 4;
  } while (v);
  out += "0x";
  out.append(buf + i, sizeof buf - i);
}

// Durations read like Go's time.Duration: 850ns, 12.3µs, 4.56ms, 1.2s.
void append_duration(std::string &out, uint64_t ns) {
  char buffer[32];
  if (ns < 1000)
    snprintf(buffer, sizeof buffer, "%lluns", static_cast<unsigned long long>(ns));
  else if (ns < 1000000)
    snprintf(buffer, sizeof buffer, "%.3g%.*ss", ns / 1e3, static_cast<int>(micro_sign().size()), micro_sign().data());
  else if (ns < 1000000000)
    snprintf(buffer, sizeof buffer, "%.3gms", ns / 1e6);
  else if (ns < 1000000000000ull)
    snprintf(buffer, sizeof buffer, "%.3gs", ns / 1e9);
  else
    snprintf(buffer, sizeof buffer, "%.0fs", ns / 1e9); // %g would switch to 1.5e+03s
  out += buffer;
}

// ListCounts tracks the lists being printed: how many elements each one really has, so that the
// slots past a slice's length are skipped (their bytes were never read), and whether the Go value
// has more than are shown (its len past the count or the room), which text marks with "...".
// Two words a list on the stack: the count, then 1 when cut.
class ListCounts {
public:
  // The stack's storage belongs to the printer and is reused, so printing allocates nothing.
  explicit ListCounts(std::vector<uint64_t> &stack) : stack_(stack) { stack_.clear(); }
  void open(const DisplayOp &op, const ManifestCapture &capture, const uint8_t *event) {
    if (op.kind != DisplayOp::OpenList) {
      stack_.push_back(UINT64_MAX);
      stack_.push_back(0);
      return;
    }
    uint64_t count = UINT64_MAX;
    if (op.count_field >= 0)
      count = load_u64(event + capture.fields[static_cast<size_t>(op.count_field)].offset);
    bool cut = false;
    if (op.len_field >= 0) {
      int64_t len = static_cast<int64_t>(load_u64(event + capture.fields[static_cast<size_t>(op.len_field)].offset));
      cut = len > 0 && static_cast<uint64_t>(len) > std::min<uint64_t>(count, op.elements);
    }
    stack_.push_back(count);
    stack_.push_back(cut ? 1 : 0);
  }
  void close(const DisplayOp &) {
    if (stack_.size() >= 2)
      stack_.resize(stack_.size() - 2);
  }
  // Whether the innermost open list shows fewer elements than its value has.
  bool cut() const { return stack_.size() >= 2 && stack_.back() != 0; }
  // How many elements the innermost open list shows, of the `room` it has.
  uint64_t shown(uint64_t room) const { return stack_.size() >= 2 ? std::min(stack_[stack_.size() - 2], room) : room; }
  // True when op starts an element past the enclosing list's count; `i` then jumps past it.
  bool skip(const DisplayOp &op, size_t &i) const {
    if (op.element < 0 || stack_.size() < 2 || static_cast<uint64_t>(op.element) < stack_[stack_.size() - 2])
      return false;
    i = op.element_end - 1;
    return true;
  }

private:
  std::vector<uint64_t> &stack_;
};

// Floats print in their shortest exact form (std::to_chars). JSON has no NaN or infinities, so
// there they are the strings "NaN", "+Inf", "-Inf", as Go's strconv spells them.
void append_float(std::string &out, uint64_t bits, uint32_t size, bool json) {
  double value;
  char buffer[64];
  std::to_chars_result r;
  if (size == 4) {
    float f;
    uint32_t low = static_cast<uint32_t>(bits);
    std::memcpy(&f, &low, 4);
    value = f;
    r = std::to_chars(buffer, buffer + sizeof buffer, f);
  } else {
    std::memcpy(&value, &bits, 8);
    r = std::to_chars(buffer, buffer + sizeof buffer, value);
  }
  if (std::isnan(value) || std::isinf(value)) {
    const char *text = std::isnan(value) ? "NaN" : value > 0 ? "+Inf" : "-Inf";
    if (json)
      out.append("\"").append(text).append("\"");
    else
      out += text;
    return;
  }
  out.append(buffer, r.ptr);
}

EventPrinter::EventPrinter(const Manifest &manifest, OutputFormat format, uint64_t start_ns)
    : manifest_(manifest), format_(format), start_ns_(start_ns) {
  size_t max_captures = 0, max_fields = 0;
  for (const ManifestProbe &probe : manifest.probes) {
    PreparedProbe pp;
    pp.json_prefix = "{\"probe\":" + json_quoted(probe.name) +
                     ",\"function\":" + json_quoted(probe.function) + ",\"kind\":\"";
    // Two probes on one function (two `when:` conditions, say) print apart by their names.
    if (probe.name != probe.function)
      pp.text_name = probe.name + ": ";
    if (probe.inlined_into) {
      const auto &into = *probe.inlined_into;
      std::string base = into.file.substr(into.file.rfind('/') + 1);
      pp.text_inlined = " [inlined into " + into.function + " at " + base + ":" + std::to_string(into.line) + "]";
      pp.json_inlined = ",\"inlined_into\":{\"function\":" + json_quoted(into.function) +
                        ",\"file\":" + json_quoted(into.file) + ",\"line\":" + std::to_string(into.line) + "}";
    }
    if (probe.line) {
      const auto &at = *probe.line;
      std::string base = at.file.substr(at.file.rfind('/') + 1);
      pp.is_line = true;
      pp.text_inlined = " at " + base + ":" + std::to_string(at.line);
      if (at.inlined)
        pp.text_inlined += " [inlined into " + at.physical + "]";
      char pc[32];
      std::snprintf(pc, sizeof pc, "0x%llx", static_cast<unsigned long long>(at.pc));
      pp.json_line = ",\"file\":" + json_quoted(at.file) + ",\"line\":" + std::to_string(at.line) +
                     ",\"pc\":\"" + pc + "\"";
      if (at.inlined)
        pp.json_line += ",\"inlined_into\":{\"function\":" + json_quoted(at.physical) + "}";
    }
    size_t fields = 0;
    for (const ManifestCapture &capture : probe.captures) {
      fields += capture.fields.size();
      pp.captures.push_back(prepare_capture(capture));
    }
    max_captures = std::max(max_captures, probe.captures.size());
    max_fields = std::max(max_fields, fields);
    prepared_.push_back(std::move(pp));
  }
  // Sized for the largest probe, so format_json never allocates.
  faults_.reserve(max_captures);
  unavailable_.reserve(max_captures);
  list_stack_.reserve(16);
  truncated_.reserve(max_fields);
  truncated_lengths_.reserve(max_fields);
}

EventPrinter::PreparedCapture EventPrinter::prepare_capture(const ManifestCapture &capture) {
  PreparedCapture pc;
  pc.text_key = capture.expr + "=";
  pc.json_expr = json_quoted(capture.expr);
  pc.json_key = pc.json_expr + ":";
  for (const DisplayOp &op : capture.display) {
    bool labelled = op.kind != DisplayOp::Close && !op.label.empty();
    pc.text_labels.push_back(labelled ? op.label + "=" : "");
    pc.json_labels.push_back(labelled ? json_quoted(op.label) + ":" : "");
  }
  for (const ManifestField &field : capture.fields)
    pc.json_paths.push_back(json_quoted(field.name.empty() ? capture.expr : capture.expr + "." + field.name));
  for (const ManifestCapture::Contents &k : capture.contents)
    for (const ManifestCapture::Contents::Type &t : k.types)
      pc.contents.push_back(prepare_capture(*t.value));
  return pc;
}

bool EventPrinter::format(const void *data, size_t size, std::string &out) {
  struct weave_event_header h;
  if (size < sizeof h)
    return false;
  std::memcpy(&h, data, sizeof h);
  if (h.probe_id >= manifest_.probes.size() || !record_fits(manifest_.probes[h.probe_id], data, size) ||
      (h.kind != WEAVE_EVENT_ENTRY && h.kind != WEAVE_EVENT_RETURN))
    return false;
  auto *event = static_cast<const uint8_t *>(data);
  if (format_ == OutputFormat::Text)
    format_text(h, event, out);
  else
    format_json(h, event, out);
  return true;
}

namespace {

// A string slot: the full length, then the bytes that were copied (the manifest guarantees
// offset + 8 + max_len <= event_size <= the record's size), or, for a string in its probe's string
// area, their position there (the manifest guarantees the area lies inside event_size, and
// record_fits that a shorter record holds every byte its strings_len counts).
struct StringSlot {
  std::string_view bytes;
  bool truncated;
  uint64_t length; // the string's full length, as the program's len() says
};

StringSlot read_string(const uint8_t *event, const ManifestField &field) {
  uint64_t len = load_u64(event + field.offset);
  size_t copied = len < field.max_len ? static_cast<size_t>(len) : field.max_len;
  if (!field.in_area)
    return {{reinterpret_cast<const char *>(event + field.offset + 8), copied}, len > field.max_len, len};
  // The program wrote the position; a record that says more than the area holds shows no bytes.
  uint64_t used = std::min<uint64_t>(load_u64(event + field.area_offset), field.area_size);
  uint64_t at = load_u64(event + field.offset + 8);
  if (at > used || copied > used - at)
    copied = 0;
  const uint8_t *bytes = event + field.area_offset + 8 + (copied ? at : 0);
  return {{reinterpret_cast<const char *>(bytes), copied}, len > field.max_len, len};
}

} // namespace

// One capture's value, by its display ops: a scalar, or structs and lists with their members. Text
// and JSON differ only in separators, labels, and how pointers and strings are spelled.
void EventPrinter::append_capture(std::string &out, const ManifestCapture &capture, const PreparedCapture &pc,
                                  const uint8_t *event, uint64_t bias, bool json) {
  if (capture.assertion) {
    // x.(T): the value was read only if the dynamic type is T; else say what it was instead.
    const ManifestCapture::Assertion &a = *capture.assertion;
    uint64_t type_addr = load_u64(event + capture.fields[a.type_field].offset);
    if (type_addr == 0) {
      out += json ? "null" : "<nil>";
      return;
    }
    if (type_addr != a.descriptor + bias) {
      const TypeName *t = symbolizer_ ? symbolizer_->type_at(bias, type_addr) : nullptr;
      if (json) {
        out += "{\"not\":";
        append_json_string(out, a.type);
        out += ",\"type\":";
        if (t) {
          append_json_string(out, t->name);
        } else {
          out += "null,\"type_addr\":\"";
          append_hex(out, type_addr);
          out += '"';
        }
        out += '}';
      } else {
        out += "<not ";
        out += a.type;
        out += ": ";
        if (t) {
          out += t->name;
        } else {
          out += "unknown type ";
          append_hex(out, type_addr);
        }
        out += '>';
      }
      return;
    }
  }
  ListCounts counts(list_stack_);
  append_ops(out, capture, pc, event, bias, json, 0, capture.display.size(), counts);
}

namespace {

// The value fields of a map pair's key, in order: the element's ops start with the pair's Open,
// then the key's (one Value, or a struct's Open ... Close).
void key_fields(const std::vector<DisplayOp> &ops, size_t element, std::vector<uint32_t> &out) {
  int depth = 0;
  for (size_t k = element + 1; k < ops.size(); ++k) {
    const DisplayOp &op = ops[k];
    if (op.kind == DisplayOp::Value)
      out.push_back(op.field);
    else if (op.kind == DisplayOp::Open || op.kind == DisplayOp::OpenList)
      ++depth;
    else if (op.kind == DisplayOp::Close || op.kind == DisplayOp::CloseList)
      --depth;
    if (depth <= 0)
      return;
  }
}

// Go's fmt order of two keys' values of one field (internal/fmtsort): numbers by value (NaN
// first), strings by their bytes, bools false first, pointers by address. A string cut by
// string_max compares by the bytes copied, then by its full length.
int compare_values(const ManifestField &a, const ManifestField &b, const uint8_t *event) {
  auto order = [](auto x, auto y) { return x < y ? -1 : y < x ? 1 : 0; };
  if (a.kind != b.kind)
    return 0;
  uint64_t x = load_u64(event + a.offset), y = load_u64(event + b.offset);
  switch (a.kind) {
  case FieldKind::Int:
    return order(static_cast<int64_t>(x), static_cast<int64_t>(y));
  case FieldKind::Float: {
    double dx, dy;
    if (a.size == 4) {
      float fx, fy;
      uint32_t lx = static_cast<uint32_t>(x), ly = static_cast<uint32_t>(y);
      std::memcpy(&fx, &lx, 4);
      std::memcpy(&fy, &ly, 4);
      dx = fx;
      dy = fy;
    } else {
      std::memcpy(&dx, &x, 8);
      std::memcpy(&dy, &y, 8);
    }
    if (std::isnan(dx) || std::isnan(dy))
      return std::isnan(dx) && std::isnan(dy) ? 0 : std::isnan(dx) ? -1 : 1;
    return order(dx, dy);
  }
  case FieldKind::String: {
    StringSlot sx = read_string(event, a), sy = read_string(event, b);
    if (int c = sx.bytes.compare(sy.bytes)) // std::string_view compares as unsigned chars
      return c < 0 ? -1 : 1;
    return order(sx.length, sy.length);
  }
  case FieldKind::Empty:
    return 0;
  default: // uint, bool, pointer, func: unsigned
    return order(x, y);
  }
}

} // namespace

void EventPrinter::append_ops(std::string &out, const ManifestCapture &capture, const PreparedCapture &pc,
                              const uint8_t *event, uint64_t bias, bool json, size_t begin, size_t end,
                              ListCounts &counts) {
  const std::vector<std::string> &labels = json ? pc.json_labels : pc.text_labels;
  bool first = true; // no separator before the first member of a struct
  for (size_t i = begin; i < end; ++i) {
    const DisplayOp &op = capture.display[i];
    if (counts.skip(op, i))
      continue;
    if (op.kind == DisplayOp::Close || op.kind == DisplayOp::CloseList) {
      if (op.kind == DisplayOp::CloseList && counts.cut() && !json)
        out += first ? "..." : ", ..."; // more than slice_max, or than the map walk reached
      out += op.kind == DisplayOp::Close ? '}' : ']';
      counts.close(op);
      first = false;
      continue;
    }
    if (!first)
      out += json ? "," : ", ";
    out += labels[i];
    if (op.kind == DisplayOp::OpenList && op.sorted) {
      // A map's pairs in the order of their keys, as fmt prints a map: the walk finds them in
      // memory order, which is the runtime's and says nothing.
      out += '[';
      counts.open(op, capture, event);
      // Scratch kept per nesting level, reused from event to event: printing allocates nothing.
      if (sort_depth_ >= sort_scratch_.size())
        sort_scratch_.resize(sort_depth_ + 1);
      SortScratch &sc = sort_scratch_[sort_depth_];
      sc.starts.clear();
      size_t close = i + 1;
      while (close < capture.display.size() && capture.display[close].kind != DisplayOp::CloseList) {
        sc.starts.push_back(static_cast<uint32_t>(close));
        close = capture.display[close].element_end;
      }
      sc.starts.resize(static_cast<size_t>(counts.shown(sc.starts.size())));
      sc.keys.clear();
      sc.key_begin.clear();
      sc.order.clear();
      for (size_t e = 0; e < sc.starts.size(); ++e) {
        sc.key_begin.push_back(static_cast<uint32_t>(sc.keys.size()));
        key_fields(capture.display, sc.starts[e], sc.keys);
        sc.order.push_back(static_cast<uint32_t>(e));
      }
      sc.key_begin.push_back(static_cast<uint32_t>(sc.keys.size()));
      // Equal keys (strings alike in the bytes copied and their length) keep the order found:
      // std::sort with that tie-break, as std::stable_sort would allocate its buffer.
      std::sort(sc.order.begin(), sc.order.end(), [&](uint32_t a, uint32_t b) {
        uint32_t fa = sc.key_begin[a], fb = sc.key_begin[b];
        for (; fa < sc.key_begin[a + 1] && fb < sc.key_begin[b + 1]; ++fa, ++fb)
          if (int c = compare_values(capture.fields[sc.keys[fa]], capture.fields[sc.keys[fb]], event))
            return c < 0;
        return a < b;
      });
      ++sort_depth_;
      const size_t level = sort_depth_ - 1; // a nested list may grow sort_scratch_: index, not `sc`
      for (size_t e = 0; e < sort_scratch_[level].order.size(); ++e) {
        if (e)
          out += json ? "," : ", ";
        uint32_t at = sort_scratch_[level].starts[sort_scratch_[level].order[e]];
        append_ops(out, capture, pc, event, bias, json, at, capture.display[at].element_end, counts);
      }
      --sort_depth_;
      first = sort_scratch_[level].order.empty();
      i = close - 1; // the list's CloseList next
      continue;
    }
    if (op.kind == DisplayOp::Open || op.kind == DisplayOp::OpenList) {
      out += op.kind == DisplayOp::Open ? '{' : '[';
      counts.open(op, capture, event);
      first = true;
      continue;
    }
    first = false;
    if (op.kind == DisplayOp::Interface) {
      if (capture.contents.empty() || !append_contents(out, bias, op, capture, pc, event, json))
        append_interface(out, bias, op, capture, event, json);
      continue;
    }
    const ManifestField &field = capture.fields[op.field];
    const uint8_t *slot = event + field.offset;
    switch (field.kind) {
    case FieldKind::Int:
      append_i64(out, static_cast<int64_t>(load_u64(slot)));
      break;
    case FieldKind::Uint:
      append_u64(out, load_u64(slot));
      break;
    case FieldKind::Bool:
      out += load_u64(slot) ? "true" : "false";
      break;
    case FieldKind::Pointer:
      // In JSON a string: JSON has no hex numbers, and addresses are identities, not quantities.
      if (json)
        out += '"';
      append_hex(out, load_u64(slot));
      if (json)
        out += '"';
      break;
    case FieldKind::Float:
      append_float(out, load_u64(slot), field.size, json);
      break;
    case FieldKind::Func:
      append_func(out, bias, load_u64(slot), json);
      break;
    case FieldKind::Empty: // nothing to read: [0]T (named or not) as Go prints it, struct{} as {}
      out += field.array || (!field.go_type.empty() && field.go_type[0] == '[') ? "[]" : "{}";
      break;
    case FieldKind::String: {
      StringSlot s = read_string(event, field);
      if (json) {
        append_json_string(out, s.bytes);
        if (s.truncated) { // listed in the line's "truncated", its full length in "lengths"
          truncated_.push_back(&pc.json_paths[op.field]);
          truncated_lengths_.push_back(s.length);
        }
      } else {
        append_text_string(out, s.bytes);
        if (s.truncated) { // "abc"...(300 bytes): the full length, never lost
          out += "...(";
          append_u64(out, s.length);
          out += " bytes)";
        }
      }
      break;
    }
    }
  }
}

// The instantiation a generic shape instance was called as, found by its dictionary's link-time
// address (the load bias taken off in a PIE); nullptr when unknown (stripped, or not a shape).
static const std::string *instantiation(const ManifestProbe &probe, const uint8_t *event, uint64_t bias) {
  if (probe.dict_capture < 0 || probe.instantiations.empty())
    return nullptr;
  const ManifestField &field = probe.captures[static_cast<size_t>(probe.dict_capture)].fields[0];
  auto it = probe.instantiations.find(load_u64(event + field.offset) - bias);
  return it == probe.instantiations.end() ? nullptr : &it->second;
}

void EventPrinter::format_text(const struct weave_event_header &h, const uint8_t *event,
                               std::string &out) {
  const ManifestProbe &probe = manifest_.probes[h.probe_id];
  const uint64_t bias = load_bias(h, probe);
  const PreparedProbe &pp = prepared_[h.probe_id];
  if (color_)
    out += ansi::kDim;
  append_time(out, h.ts_ns, start_ns_);
  out += " pid=";
  append_u64(out, h.pid);
  out += " tid=";
  append_u64(out, h.tid);
  out += " goid=";
  append_u64(out, h.goid);
  if (color_)
    out += ansi::kReset;
  if (h.kind == WEAVE_EVENT_RETURN) { // ← marks a return, as in DESIGN.md (<- in an ASCII locale)
    out += ' ';
    out += return_arrow();
  }
  out += ' ';
  out += pp.text_name;
  if (color_)
    out += ansi::kBold;
  out += probe.function;
  if (color_)
    out += ansi::kReset;
  out += pp.text_inlined;
  if (const std::string *name = instantiation(probe, event, bias)) {
    out += " as ";
    out += *name;
  }
  out += '(';
  bool first = true;
  for (size_t c = 0; c < probe.captures.size(); ++c) {
    const ManifestCapture &capture = probe.captures[c];
    const PreparedCapture &pc = pp.captures[c];
    if (static_cast<int32_t>(c) == probe.dict_capture)
      continue;
    if (!first)
      out += ", ";
    first = false;
    out += pc.text_key;
    if (!capture.unavailable.empty()) {
      out += "<optimized out>"; // as debuggers say: DWARF does not locate it at this copy
      continue;
    }
    if (h.faults >> capture.fault_bit & 1) {
      if (color_)
        out.append(ansi::kRed).append("<fault>").append(ansi::kReset);
      else
        out += "<fault>";
      continue;
    }
    append_capture(out, capture, pc, event, bias, false);
  }
  out += ')';
  // A return paired with its entry says how long the call took; one whose entry the tracer did not
  // see (the call began before it attached, or its entry was lost) says so, as --graph does.
  if (probe.duration_offset && h.kind == WEAVE_EVENT_RETURN) {
    if (uint64_t ns = load_u64(event + probe.duration_offset)) {
      out += "  ";
      append_duration(out, ns);
    } else {
      out += kEntryNotSeen;
    }
  }
  out += '\n';
  if (probe.stack_depth)
    append_stack(out, bias, probe, event, false);
}

void EventPrinter::format(const CallEvent &e, std::string &out) {
  struct weave_event_header h;
  std::memcpy(&h, e.record.data(), sizeof h);
  auto *event = reinterpret_cast<const uint8_t *>(e.record.data());
  if (format_ == OutputFormat::Text)
    format_text(h, event, out);
  else
    format_json(h, event, out, e.call);
}

void EventPrinter::format_json(const struct weave_event_header &h, const uint8_t *event,
                               std::string &out, uint64_t call) {
  const ManifestProbe &probe = manifest_.probes[h.probe_id];
  const uint64_t bias = load_bias(h, probe);
  const PreparedProbe &pp = prepared_[h.probe_id];
  faults_.clear();
  truncated_.clear();
  truncated_lengths_.clear();
  unavailable_.clear();
  out += pp.json_prefix;
  out += pp.is_line ? "line" : kind_name(h.kind);
  out += '"';
  out += pp.json_inlined;
  out += pp.json_line;
  if (const std::string *name = instantiation(probe, event, bias)) {
    out += ",\"instantiation\":";
    append_json_string(out, *name);
  }
  out += ",\"pid\":";
  append_u64(out, h.pid);
  out += ",\"tid\":";
  append_u64(out, h.tid);
  out += ",\"goid\":";
  append_u64(out, h.goid);
  out += ",\"ts_ns\":";
  append_u64(out, h.ts_ns);
  if (call) {
    out += ",\"call\":";
    append_u64(out, call);
  }
  append_created_by(out, h, bias);
  // A return event carries the function's results; an entry event its arguments.
  out += h.kind == WEAVE_EVENT_RETURN ? ",\"results\":{" : pp.is_line ? ",\"locals\":{" : ",\"args\":{";
  bool first = true;
  for (size_t c = 0; c < probe.captures.size(); ++c) {
    const ManifestCapture &capture = probe.captures[c];
    const PreparedCapture &pc = pp.captures[c];
    if (static_cast<int32_t>(c) == probe.dict_capture)
      continue;
    if (!first)
      out += ',';
    first = false;
    out += pc.json_key;
    if (!capture.unavailable.empty()) {
      out += "null";
      unavailable_.push_back(&pc.json_expr);
      continue;
    }
    if (h.faults >> capture.fault_bit & 1) {
      out += "null";
      faults_.push_back(&pc.json_expr);
      continue;
    }
    append_capture(out, capture, pc, event, bias, true);
  }
  out += '}';
  // "faults" and "truncated" appear only when non-empty, which keeps the common line short.
  auto append_list = [&out](const char *key, const std::vector<const std::string *> &list) {
    if (list.empty())
      return;
    out += key;
    for (size_t i = 0; i < list.size(); ++i) {
      if (i > 0)
        out += ',';
      out += *list[i];
    }
    out += ']';
  };
  append_list(",\"faults\":[", faults_);
  append_list(",\"truncated\":[", truncated_);
  // "lengths": each truncated string's full length, keyed like "truncated".
  if (!truncated_.empty()) {
    out += ",\"lengths\":{";
    for (size_t i = 0; i < truncated_.size(); ++i) {
      if (i > 0)
        out += ',';
      out += *truncated_[i];
      out += ':';
      append_u64(out, truncated_lengths_[i]);
    }
    out += '}';
  }
  append_list(",\"unavailable\":[", unavailable_);
  if (probe.duration_offset && h.kind == WEAVE_EVENT_RETURN) {
    if (uint64_t ns = load_u64(event + probe.duration_offset)) {
      out += ",\"duration_ns\":";
      append_u64(out, ns);
    } else {
      out += ",\"entry_seen\":false";
    }
  }
  if (probe.stack_depth)
    append_stack(out, bias, probe, event, true);
  out += "}\n";
}

EventWriter::EventWriter(const Manifest &manifest, OutputFormat format, uint64_t start_ns, int fd)
    : manifest_(manifest), printer_(manifest, format, start_ns), fd_(fd), events_(manifest.probes.size(), 0) {
  if (fd_ >= 0)
    buffer_.reserve(kFlushThreshold + 4096);
}

void EventWriter::on_event(const CallEvent &event) {
  ++events_[event.probe_id];
  if (fd_ < 0)
    return; // counting only
  if (failed())
    return; // keep counting after stdout is gone, but print nothing
  printer_.format(event, buffer_);
  if (buffer_.size() >= kFlushThreshold)
    flush();
}

void EventWriter::on_event(const void *data, size_t size) {
  CallEvent event;
  if (!Calls::decode(manifest_, data, size, event)) {
    ++malformed_;
    return;
  }
  on_event(event);
}

bool flush_buffer(int fd, std::string &buffer, std::string &error) {
  if (!error.empty()) {
    buffer.clear();
    return false;
  }
  const char *p = buffer.data();
  size_t n = buffer.size();
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      error = std::string("cannot write events: ") + std::strerror(errno);
      buffer.clear();
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  buffer.clear(); // keeps its capacity: the next batch reuses it
  return true;
}

bool EventWriter::flush() { return fd_ < 0 || flush_buffer(fd_, buffer_, error_); }


namespace {

// reflect.Kind's names, as the manifest spells a runtime type's kind.
const char *kind_name(uint8_t kind) {
  static const char *kinds[] = {"invalid", "bool",      "int",        "int8",      "int16",  "int32",
                                "int64",   "uint",      "uint8",      "uint16",    "uint32", "uint64",
                                "uintptr", "float32",   "float64",    "complex64", "complex128",
                                "array",   "chan",      "func",       "interface", "map",    "ptr",
                                "slice",   "string",    "struct",     "unsafe.Pointer"};
  return kind < 27 ? kinds[kind] : "invalid";
}

} // namespace

// Whether append_interface shows the value behind an interface of this dynamic type by itself: a
// string, an error's message, a scalar (its descriptor's kind and size say so).
static bool shown_by_kind(const TypeName &t) {
  std::string_view kind = kind_name(t.kind);
  if (kind == "string" || t.name == "*errors.errorString" || t.name == "*fmt.wrapError" ||
      t.name == "*fmt.wrapErrors")
    return true;
  bool scalar = kind == "bool" || kind == "float32" || kind == "float64" || kind.starts_with("int") ||
                kind.starts_with("uint");
  return scalar && t.size >= 1 && t.size <= 8;
}

bool EventPrinter::append_contents(std::string &out, uint64_t bias, const DisplayOp &op,
                                   const ManifestCapture &capture, const PreparedCapture &pc, const uint8_t *event,
                                   bool json) {
  size_t index = 0; // the candidate's place in pc.contents
  const ManifestCapture::Contents *contents = nullptr;
  for (const ManifestCapture::Contents &k : capture.contents) {
    if (k.type_field == op.type_field) {
      contents = &k;
      break;
    }
    index += k.types.size();
  }
  if (!contents)
    return false;
  uint64_t type_addr = load_u64(event + capture.fields[op.type_field].offset);
  if (type_addr == 0)
    return false; // nil
  for (size_t t = 0; t < contents->types.size(); ++t) {
    const ManifestCapture::Contents::Type &type = contents->types[t];
    if (type_addr != type.descriptor + bias)
      continue;
    // The type word is this type's descriptor: its fields were read, as this type, and nothing else.
    if (json) {
      out += "{\"type\":";
      append_json_string(out, type.name);
      out += ",\"value\":";
    } else {
      out += type.name;
    }
    if (type.pointer && load_u64(event + capture.fields[contents->data_field].offset) == 0) {
      out += json ? "null}" : "(nil)";
      return true;
    }
    std::vector<uint64_t> outer = list_stack_; // the enclosing capture's lists, open around this value
    append_capture(out, *type.value, pc.contents[index + t], event, bias, json);
    list_stack_ = std::move(outer);
    if (json)
      out += '}';
    return true;
  }
  // Another type: shown as without contents when the tracer can show it by its kind, else named
  // with the marker; its bytes were not read, and are never guessed at.
  const TypeName *t = symbolizer_ ? symbolizer_->type_at(bias, type_addr) : nullptr;
  if (!t || shown_by_kind(*t))
    return false;
  if (json) {
    out += "{\"type\":";
    append_json_string(out, t->name);
    out += ",\"contents\":\"not known\"}";
  } else {
    out += "<contents not known for ";
    out += t->name;
    out += '>';
  }
  return true;
}

// An interface prints as its dynamic type and, where the type says what the data word points to,
// the value: a string's text, an error's message (errors.New and fmt.Errorf's errors keep it as
// their first field), a scalar of up to 8 bytes, or a pointer-shaped value's address. Anything
// else shows the data address. The speculative reads behind the first three are only shown when
// the type vouches for them, so their bytes never print as garbage.
void EventPrinter::append_interface(std::string &out, uint64_t bias, const DisplayOp &op,
                                    const ManifestCapture &capture, const uint8_t *event, bool json) const {
  uint64_t type_addr = load_u64(event + capture.fields[op.type_field].offset);
  uint64_t data = load_u64(event + capture.fields[op.data_field].offset);
  if (type_addr == 0) {
    out += json ? "null" : "nil";
    return;
  }
  // Descriptors are named by their link-time addresses; a PIE's sit at those plus its load bias.
  const TypeName *t = symbolizer_ ? symbolizer_->type_at(bias, type_addr) : nullptr;
  if (!t) {
    // Not a type descriptor of this binary (or the binary cannot be read): marked, never named
    // by a guess.
    if (json) {
      out += "{\"type\":null,\"type_addr\":\"";
      append_hex(out, type_addr);
      out += "\",\"data\":\"";
      append_hex(out, data);
      out += "\"}";
    } else {
      out += "<unknown type ";
      append_hex(out, type_addr);
      out += ">(";
      append_hex(out, data);
      out += ')';
    }
    return;
  }
  const std::string &name = t->name;
  const std::string_view kind = kind_name(t->kind);
  const uint64_t size = t->size;
  auto open = [&](const char *key) {
    if (json) {
      out += "{\"type\":";
      append_json_string(out, name);
      out += ",\"";
      out += key;
      out += "\":";
    } else {
      out += name;
      out += '(';
    }
  };
  auto close = [&] { out += json ? '}' : ')'; };
  bool message = name == "*errors.errorString" || name == "*fmt.wrapError" || name == "*fmt.wrapErrors";
  if (kind == "string" || message) {
    open(message ? "error" : "value");
    StringSlot s = read_string(event, capture.fields[op.text_field]);
    if (json)
      append_json_string(out, s.bytes);
    else
      append_text_string(out, s.bytes);
    close();
    return;
  }
  uint64_t raw = load_u64(event + capture.fields[op.value_field].offset);
  bool is_int = kind == "int" || kind == "int8" || kind == "int16" || kind == "int32" || kind == "int64";
  bool is_uint = kind == "uint" || kind == "uint8" || kind == "uint16" || kind == "uint32" || kind == "uint64" ||
                 kind == "uintptr";
  if ((is_int || is_uint || kind == "bool" || kind == "float32" || kind == "float64") && size >= 1 && size <= 8) {
    open("value");
    uint64_t bits = size == 8 ? raw : raw & ((uint64_t{1} << (8 * size)) - 1);
    if (kind == "bool") {
      out += bits ? "true" : "false";
    } else if (kind == "float32" || kind == "float64") {
      append_float(out, bits, static_cast<uint32_t>(size), json);
    } else if (is_int) {
      unsigned shift = static_cast<unsigned>(64 - 8 * size);
      append_i64(out, static_cast<int64_t>(bits << shift) >> shift);
    } else {
      append_u64(out, bits);
    }
    close();
    return;
  }
  bool pointer_shaped = kind == "ptr" || kind == "map" || kind == "chan" || kind == "func" || kind == "unsafe.Pointer";
  open(pointer_shaped ? "value" : "data");
  if (json)
    out += '"';
  append_hex(out, data);
  if (json)
    out += '"';
  close();
}


// A stack prints as Go's own traceback would name its frames, inlined calls expanded: in text one
// indented line per frame after the event ("    main.caller (main.go:12) [inlined]"), in JSON a
// "stack" array of {"function","file","line","inlined","pc","module"} (only "pc" when unknown); "pc"
// is the frame's return address as the process saw it, the same for a call and the frames inlined
// into it.
void EventPrinter::append_stack(std::string &out, uint64_t bias, const ManifestProbe &probe,
                                const uint8_t *event, bool json) {
  // stack_mode: window: the callers are unwound here, from the copied stack; the walk may end
  // before the stack does, and then says so after the frames.
  UnwoundStack unwound;
  const UnwoundStack *window = nullptr;
  uint32_t pid = 0;
  if (probe.stack_window) {
    struct weave_stack_window w;
    std::memcpy(&w, event + probe.stack_offset, sizeof(w));
    StackWindow sw;
    sw.pc = w.pc;
    sw.sp = w.sp;
    sw.lr = w.lr;
    sw.bytes = event + probe.stack_offset + sizeof(w);
    sw.len = std::min(w.len, probe.stack_window);
    if (probe.thread_window) {
      struct weave_stack_window t;
      std::memcpy(&t, event + probe.thread_offset, sizeof(t));
      sw.thread_pc = t.pc;
      sw.thread_sp = t.sp;
      sw.thread_bytes = event + probe.thread_offset + sizeof(t);
      sw.thread_len = std::min(t.len, probe.thread_window);
    }
    struct weave_event_header h;
    std::memcpy(&h, event, sizeof(h));
    pid = h.pid;
    if (symbolizer_)
      unwound = symbolizer_->unwind(bias, sw, probe.stack_depth, pid);
    else
      unwound.end = UnwoundStack::End::Unknown;
    if (w.len == 0) {
      unwound.end = UnwoundStack::End::Truncated;
      unwound.return_addresses.clear();
    }
    window = &unwound;
  }
  if (json)
    out += ",\"stack\":[";
  bool first = true;
  // A frame-pointer walk that reaches C code (cgo) has one true return address into it, the Go
  // frame's own; the next would be read through a %rbp the C code may use as it likes. So the walk
  // ends at the first PC outside Go code, and says so.
  UnwoundStack fp_end;
  bool fp_stopped = false;
  // The callee of the next frame, for leaving wrappers out as runtime.Callers does.
  const std::string *callee = nullptr;
  uint32_t count = window ? static_cast<uint32_t>(window->return_addresses.size()) : probe.stack_depth;
  // An arm64 frame-pointer walk ends at crosscall2, where C called Go: its R29 is C's, so the chain
  // goes no further, and the stack says so (amd64's goes on to the return address into C).
  const std::string *last_function = nullptr;
  bool ended_early = false;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t pc = window ? window->return_addresses[i] : load_u64(event + probe.stack_offset + 8 * i);
    if (!pc) {
      ended_early = true;
      break;
    }
    static const std::vector<Pclntab::Frame> none;
    const std::vector<Pclntab::Frame> *found = symbolizer_ ? &symbolizer_->frames(bias, pc) : &none;
    // A window's walk reaches C frames only by their CFI: name them from DWARF or symbols, the
    // binary's or a shared library's (whose path is then the frame's module).
    const std::string *module = symbolizer_ ? &symbolizer_->module() : nullptr;
    const std::string *library = nullptr;
    if (found->empty() && window && symbolizer_)
      found = &symbolizer_->c_frames(bias, pc, pid, &library);
    if (library)
      module = library;
    const auto &frames = *found;
    if (frames.empty()) {
      if (json) {
        out += first ? "{\"pc\":\"" : ",{\"pc\":\"";
        append_hex(out, pc);
        out += '"';
        if (library) {
          out += ",\"module\":";
          append_json_string(out, *library);
        }
        out += '}';
      } else {
        out += "    ";
        append_hex(out, pc);
        if (library) {
          out += " (";
          out += *library;
          out += ')';
        }
        out += '\n';
      }
      first = false;
      if (!window && symbolizer_ && symbolizer_->has_functions()) {
        fp_end.end = UnwoundStack::End::Unknown;
        fp_end.function = "0x";
        char digits[17];
        auto [end, ec] = std::to_chars(digits, digits + sizeof digits, pc, 16);
        fp_end.function.append(digits, ec == std::errc() ? end : digits);
        fp_stopped = true;
        break;
      }
      continue;
    }
    last_function = &frames.back().function;
    for (const auto &f : frames) {
      const std::string *called = callee;
      callee = &f.function;
      if (f.wrapper && !(called && (*called == "runtime.gopanic" || *called == "runtime.sigpanic" ||
                                    *called == "runtime.panicwrap")))
        continue;
      if (json) {
        out += first ? "{\"function\":" : ",{\"function\":";
        append_json_string(out, f.function);
        out += ",\"file\":";
        append_json_string(out, f.file);
        out += ",\"line\":";
        append_u64(out, static_cast<uint64_t>(f.line));
        out += f.inlined ? ",\"inlined\":true" : ",\"inlined\":false";
        out += ",\"pc\":\"";
        append_hex(out, pc);
        out += "\",\"module\":";
        append_json_string(out, *module);
        out += '}';
      } else {
        out += "    ";
        out += f.function;
        out += " (";
        out += f.file;
        out += ':';
        append_u64(out, static_cast<uint64_t>(f.line));
        out += f.inlined ? ") [inlined]\n" : ")\n";
      }
      first = false;
    }
  }
  if (json)
    out += ']';
  if (!window && !fp_stopped && ended_early && last_function && *last_function == "crosscall2") {
    fp_end.end = UnwoundStack::End::Switch;
    fp_end.function = *last_function;
    fp_stopped = true;
  }
  if (window)
    append_stack_end(out, *window, window->in_thread_window ? probe.thread_window : probe.stack_window, json);
  else if (fp_stopped)
    append_stack_end(out, fp_end, 0, json);
}

// Where a window's walk stopped short of the stack's first frame, and why: in text one more line
// ("    … truncated: window 8192 bytes"), in JSON a "stack_end" object {"reason", "window_bytes"
// (and "window": "thread" when the thread's window of a cgo callback ended) or "function"}. Nothing when the stack is complete or has the frames asked for.
void EventPrinter::append_stack_end(std::string &out, const UnwoundStack &stack, uint32_t window_bytes,
                                    bool json) {
  std::string reason, detail;
  switch (stack.end) {
  case UnwoundStack::End::Top:
  case UnwoundStack::End::Depth:
    return;
  case UnwoundStack::End::Truncated:
    reason = "truncated";
    break;
  case UnwoundStack::End::Switch:
    reason = "stack switch";
    break;
  case UnwoundStack::End::Unknown:
    reason = "no .gopclntab entry";
    break;
  case UnwoundStack::End::NoCfi:
    reason = "no CFI";
    break;
  case UnwoundStack::End::Lost:
    reason = "CFI needs a lost register";
    break;
  }
  if (json) {
    out += ",\"stack_end\":{\"reason\":";
    append_json_string(out, reason);
    if (stack.end == UnwoundStack::End::Truncated) {
      out += ",\"window_bytes\":";
      append_u64(out, window_bytes);
      if (stack.in_thread_window)
        out += ",\"window\":\"thread\"";
    } else {
      out += ",\"function\":";
      append_json_string(out, stack.function.empty() ? "?" : stack.function);
    }
    out += '}';
    return;
  }
  out += "    \u2026 ";
  out += reason;
  if (stack.end == UnwoundStack::End::Truncated) {
    out += stack.in_thread_window ? ": thread window " : ": window ";
    append_u64(out, window_bytes);
    out += " bytes\n";
  } else {
    out += " at ";
    out += stack.function.empty() ? "?" : stack.function;
    out += '\n';
  }
}


void EventPrinter::append_created_by(std::string &out, const struct weave_event_header &h, uint64_t bias) {
  // Goroutine 1 is main, made by the runtime's startup: no go statement to name (as in Calls::decode).
  if (!manifest_.has_gopc || h.goid <= 1 || !h.gopc)
    return;
  out += ",\"created_by\":{";
  if (manifest_.has_parent_goid && h.parent_goid) {
    out += "\"goid\":";
    append_u64(out, h.parent_goid);
    out += ',';
  } else {
    // Unknown, never a made-up 0: say why instead.
    out += "\"goid_unknown\":";
    append_json_string(out, manifest_.spawn ? "made before the tracer attached (its creation was not seen)"
                            : manifest_.has_parent_goid ? "not recorded"
                                                        : "this Go release records no parent goroutine, and "
                                                          "goroutine creation is not probed");
    out += ',';
  }
  uint64_t pc = h.gopc - bias;
  auto it = created_at_.find(pc);
  if (it == created_at_.end()) {
    if (created_at_.size() >= 65536) // bounded: a program has few go statements, a corrupt one many
      created_at_.clear();
    std::string site;
    static const std::vector<Pclntab::Frame> none;
    const std::vector<Pclntab::Frame> &frames = symbolizer_ ? symbolizer_->frames(bias, h.gopc) : none;
    if (!frames.empty()) {
      // gopc is a return address: frames() symbolizes the call before it, the go statement; its
      // innermost frame is where the statement is written (inlined or not).
      site += "\"function\":";
      append_json_string(site, frames.front().function);
      site += ",\"file\":";
      append_json_string(site, frames.front().file);
      site += ",\"line\":";
      site += std::to_string(frames.front().line);
    } else {
      site += "\"pc\":\"";
      append_hex(site, pc);
      site += '"';
    }
    it = created_at_.emplace(pc, std::move(site)).first;
  }
  out += it->second;
  out += '}';
}

// A func value prints as the name of the function it calls (main.handler, main.main.func1), or its
// address when the binary's table does not know it; nil is nil/null.
void EventPrinter::append_func(std::string &out, uint64_t bias, uint64_t pc, bool json) {
  if (pc == 0) {
    out += json ? "null" : "nil";
    return;
  }
  std::string name = symbolizer_ ? symbolizer_->function_at(bias, pc) : std::string();
  if (name.empty()) {
    name.clear();
    append_hex(name, pc);
  }
  if (json)
    append_json_string(out, name);
  else
    out += name;
}

} // namespace weave
