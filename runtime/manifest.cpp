#include "manifest.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "event.h"

namespace weave {

namespace {

using json = nlohmann::json;

// ManifestError carries a message that already names the key; parse_manifest catches it.
struct ManifestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw ManifestError(path + ": " + what);
}

std::string describe(const json &v) {
  std::string text = v.dump();
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

const json &member(const json &obj, const std::string &path, const char *key) {
  auto it = obj.find(key);
  if (it == obj.end())
    fail(path.empty() ? key : path + "." + key, "missing");
  return *it;
}

std::string key_path(const std::string &path, const char *key) {
  return path.empty() ? key : path + "." + key;
}

const json &object_at(const json &obj, const std::string &path, const char *key) {
  const json &v = member(obj, path, key);
  if (!v.is_object())
    fail(key_path(path, key), "expected an object, found " + describe(v));
  return v;
}

const json &array_at(const json &obj, const std::string &path, const char *key) {
  const json &v = member(obj, path, key);
  if (!v.is_array())
    fail(key_path(path, key), "expected an array, found " + describe(v));
  return v;
}

std::string string_at(const json &obj, const std::string &path, const char *key) {
  const json &v = member(obj, path, key);
  if (!v.is_string())
    fail(key_path(path, key), "expected a string, found " + describe(v));
  return v.get<std::string>();
}

std::string optional_string(const json &obj, const std::string &path, const char *key) {
  return obj.contains(key) ? string_at(obj, path, key) : std::string();
}

// A non-negative integer: a JSON integer, or a string strtoull reads in full with base 0
// ("0xa0580", "123"). strtoull would accept "-1" and " 1"; those are refused.
uint64_t u64_value(const json &v, const std::string &path) {
  if (v.is_number_unsigned())
    return v.get<uint64_t>();
  if (v.is_number_integer())
    fail(path, "expected a non-negative integer, found " + describe(v));
  if (v.is_string()) {
    const std::string &s = v.get_ref<const std::string &>();
    if (!s.empty() && s[0] >= '0' && s[0] <= '9') {
      errno = 0;
      char *end = nullptr;
      unsigned long long n = std::strtoull(s.c_str(), &end, 0);
      if (errno == 0 && *end == '\0')
        return n;
    }
    fail(path, "expected an integer such as \"0x4a0580\", found " + describe(v));
  }
  fail(path, "expected an integer, found " + describe(v));
}

uint64_t u64_at(const json &obj, const std::string &path, const char *key) {
  return u64_value(member(obj, path, key), key_path(path, key));
}

uint32_t u32_at(const json &obj, const std::string &path, const char *key, uint32_t max) {
  uint64_t n = u64_at(obj, path, key);
  if (n > max)
    fail(key_path(path, key), std::to_string(n) + " is larger than " + std::to_string(max));
  return static_cast<uint32_t>(n);
}

std::string indexed(const std::string &path, const char *key, size_t i) {
  return key_path(path, key) + "[" + std::to_string(i) + "]";
}

// The ring buffer holds 4 MiB (weave_bpf.h); an event a good deal smaller keeps it useful.
constexpr uint32_t kMaxEventSize = 1 << 20;

FieldKind parse_kind(const json &obj, const std::string &path) {
  std::string kind = string_at(obj, path, "kind");
  if (kind == "int")
    return FieldKind::Int;
  if (kind == "uint")
    return FieldKind::Uint;
  if (kind == "bool")
    return FieldKind::Bool;
  if (kind == "pointer")
    return FieldKind::Pointer;
  if (kind == "float")
    return FieldKind::Float;
  if (kind == "func")
    return FieldKind::Func;
  if (kind == "string")
    return FieldKind::String;
  if (kind == "empty")
    return FieldKind::Empty;
  fail(path + ".kind", "unknown field kind \"" + kind +
                           "\" (this tracer decodes int, uint, bool, pointer, string); "
                           "the tracer and manifest come from different weave versions");
}

// Splits "A.B.C" into its segments; an empty segment is an error.
std::vector<std::string> split_name(const std::string &name, const std::string &path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    std::string part = name.substr(start, dot == std::string::npos ? dot : dot - start);
    if (part.empty())
      fail(path, "field name \"" + name + "\" has an empty component");
    parts.push_back(std::move(part));
    if (dot == std::string::npos)
      return parts;
    start = dot + 1;
  }
}

// Builds the display walk of a capture: its fields nest by the dots in their names, each struct
// in order of first appearance, so {"Port", "Inner.Host", "Inner.Port"} prints as
// {Port=.., Inner={Host=.., Port=..}}.
struct Node {
  std::string label;
  int field = -1;
  std::vector<Node> children;
};

// A list's fields: its count (-1: a fixed-length array) and its Go value's len (-1: none), and
// whether its elements are a map's pairs.
struct ListFields {
  int count = -1;
  int len = -1;
  bool map = false;
};

// `lists` maps a node path to its list's fields.
void emit(const Node &node, const std::string &node_path, const std::map<std::string, ListFields> &lists,
          const std::set<std::string> &interfaces, std::vector<DisplayOp> &ops) {
  if (node.field >= 0) {
    ops.push_back({DisplayOp::Value, node.label, static_cast<uint32_t>(node.field)});
    return;
  }
  if (interfaces.count(node_path)) {
    DisplayOp op{DisplayOp::Interface, node.label, 0};
    for (const Node &child : node.children) {
      uint32_t f = static_cast<uint32_t>(child.field);
      if (child.label == "type")
        op.type_field = f;
      else if (child.label == "data")
        op.data_field = f;
      else if (child.label == "value")
        op.value_field = f;
      else if (child.label == "text")
        op.text_field = f;
    }
    ops.push_back(op);
    return;
  }
  auto list = lists.find(node_path);
  if (list == lists.end()) {
    ops.push_back({DisplayOp::Open, node.label, 0});
    for (const Node &child : node.children)
      emit(child, node_path.empty() ? child.label : node_path + "." + child.label, lists, interfaces, ops);
    ops.push_back({DisplayOp::Close, "", 0});
    return;
  }
  DisplayOp open{DisplayOp::OpenList, node.label, 0};
  open.count_field = list->second.count;
  open.len_field = list->second.len;
  open.sorted = list->second.map;
  open.elements = static_cast<uint32_t>(node.children.size());
  ops.push_back(open);
  for (size_t e = 0; e < node.children.size(); ++e) {
    const Node &child = node.children[e];
    size_t first = ops.size();
    emit(child, node_path.empty() ? child.label : node_path + "." + child.label, lists, interfaces, ops);
    ops[first].label.clear(); // elements have no key
    ops[first].element = static_cast<int32_t>(e);
    ops[first].element_end = static_cast<uint32_t>(ops.size());
  }
  ops.push_back({DisplayOp::CloseList, "", 0});
}

bool c_has_interfaces(const ManifestCapture &capture) { return !capture.interfaces.empty(); }

std::vector<DisplayOp> build_display(const ManifestCapture &capture, const std::string &path) {
  std::vector<uint32_t> visible;
  for (uint32_t i = 0; i < capture.fields.size(); ++i)
    if (!capture.fields[i].hidden)
      visible.push_back(i);
  if (visible.empty())
    fail(path + ".fields", "every field is hidden");
  if (c_has_interfaces(capture) == false && visible.size() == 1 && capture.fields[visible[0]].name.empty() &&
      capture.lists.empty())
    return {{DisplayOp::Value, "", visible[0]}};
  std::map<std::string, ListFields> lists;
  for (size_t l = 0; l < capture.lists.size(); ++l) {
    const ManifestList &list = capture.lists[l];
    ListFields fields;
    fields.map = list.map;
    // A slice's or map's len is the visible "len" beside its "items" (a slice's is its count too).
    std::string len_name;
    if (!list.count.empty()) {
      size_t dot = list.path.rfind('.');
      len_name = dot == std::string::npos ? "len" : list.path.substr(0, dot) + ".len";
    }
    for (size_t f = 0; f < capture.fields.size(); ++f) {
      if (!list.count.empty() && capture.fields[f].name == list.count)
        fields.count = static_cast<int>(f);
      if (!len_name.empty() && capture.fields[f].name == len_name && !capture.fields[f].hidden &&
          capture.fields[f].kind == FieldKind::Int)
        fields.len = static_cast<int>(f);
    }
    if (!list.count.empty() && fields.count < 0)
      fail(indexed(path, "lists", l) + ".count", "no field named \"" + list.count + "\"");
    if (list.map && fields.count < 0)
      fail(indexed(path, "lists", l) + ".map", "a map's pairs need a count");
    lists[list.path] = fields;
  }
  Node root;
  for (size_t i = 0; i < capture.fields.size(); ++i) {
    if (capture.fields[i].hidden)
      continue;
    std::string field_path = indexed(path, "fields", i) + ".name";
    const std::string &name = capture.fields[i].name;
    if (name.empty())
      fail(field_path, "\"\" names the whole value, so it must be the capture's only field");
    Node *node = &root;
    std::vector<std::string> parts = split_name(name, field_path);
    for (size_t p = 0; p < parts.size(); ++p) {
      if (node->field >= 0)
        fail(field_path, "\"" + name + "\" nests inside a field that is a value, not a struct");
      Node *next = nullptr;
      for (Node &child : node->children)
        if (child.label == parts[p])
          next = &child;
      if (!next) {
        node->children.push_back({parts[p], -1, {}});
        next = &node->children.back();
      } else if (p + 1 == parts.size()) {
        fail(field_path, "\"" + name + "\" is named twice, or is also a struct of other fields");
      }
      node = next;
    }
    node->field = static_cast<int>(i);
  }
  std::set<std::string> interfaces(capture.interfaces.begin(), capture.interfaces.end());
  for (const std::string &path_of : interfaces) {
    // An interface node must hold exactly its four fields, each a value.
    for (const char *part : {"type", "data", "value", "text"}) {
      std::string want = path_of.empty() ? part : path_of + "." + part;
      bool found = false;
      for (const auto &f : capture.fields)
        found = found || f.name == want;
      if (!found)
        fail(path + ".interfaces", "interface \"" + path_of + "\" has no field \"" + want + "\"");
    }
  }
  std::vector<DisplayOp> ops;
  emit(root, "", lists, interfaces, ops);
  return ops;
}

ManifestField parse_field(const json &f, const std::string &path, uint32_t header_size,
                          uint32_t event_size) {
  if (!f.is_object())
    fail(path, "expected an object, found " + describe(f));
  ManifestField field;
  field.name = string_at(f, path, "name");
  field.kind = parse_kind(f, path);
  field.go_type = optional_string(f, path, "go_type");
  if (f.contains("hidden"))
    field.hidden = f["hidden"].is_boolean() && f["hidden"].get<bool>();
  if (f.contains("array"))
    field.array = f["array"].is_boolean() && f["array"].get<bool>();
  if (f.contains("size"))
    field.size = u32_at(f, path, "size", kMaxEventSize);
  field.offset = u32_at(f, path, "offset", kMaxEventSize);
  uint64_t end = uint64_t(field.offset) + (field.kind == FieldKind::Empty ? 0 : 8);
  if (f.contains("in_area"))
    field.in_area = f["in_area"].is_boolean() && f["in_area"].get<bool>();
  if (field.in_area && field.kind != FieldKind::String)
    fail(path + ".in_area", "only a string's bytes lie in the string area");
  if (field.kind == FieldKind::String) {
    field.max_len = u32_at(f, path, "max_len", kMaxEventSize);
    end += field.in_area ? 8 : field.max_len; // in_area: the position of its bytes
  }
  if (field.offset < header_size)
    fail(path + ".offset", std::to_string(field.offset) + " lies inside the " +
                               std::to_string(header_size) + "-byte event header");
  if (end > event_size)
    fail(path + ".offset", std::to_string(field.offset) + " + " +
                               std::to_string(end - field.offset) + " bytes end past event_size " +
                               std::to_string(event_size));
  return field;
}

// "contents": per interface, the types it may hold, each with the fields [first, last) of the
// capture that hold its value (hidden, named under "<interface>.#i."). Each becomes a capture of its
// own, its fields renamed from there, so that its display is built and checked like any other's.
void parse_contents(ManifestCapture &capture, const json &list, const std::string &path) {
  const uint32_t n = static_cast<uint32_t>(capture.fields.size());
  uint32_t next = 0; // candidates are numbered over the whole capture
  for (size_t i = 0; i < list.size(); ++i) {
    const json &k = list[i];
    std::string kpath = path + "[" + std::to_string(i) + "]";
    if (!k.is_object())
      fail(kpath, "expected an object, found " + describe(k));
    ManifestCapture::Contents contents;
    contents.iface = optional_string(k, kpath, "interface");
    contents.type_field = u32_at(k, kpath, "type_field", n - 1);
    contents.data_field = u32_at(k, kpath, "data_field", n - 1);
    const std::string word_prefix = contents.iface.empty() ? "" : contents.iface + ".";
    if (capture.fields[contents.type_field].name != word_prefix + "type" ||
        capture.fields[contents.data_field].name != word_prefix + "data")
      fail(kpath, "type_field and data_field must name the interface's type and data fields");
    const json &types = array_at(k, kpath, "types");
    for (size_t t = 0; t < types.size(); ++t, ++next) {
      const json &tj = types[t];
      std::string tpath = kpath + ".types[" + std::to_string(t) + "]";
      if (!tj.is_object())
        fail(tpath, "expected an object, found " + describe(tj));
      ManifestCapture::Contents::Type type;
      type.name = string_at(tj, tpath, "type");
      if (!tj.contains("descriptor") || !tj["descriptor"].is_number_unsigned())
        fail(tpath + ".descriptor", "expected an unsigned address");
      type.descriptor = tj["descriptor"].get<uint64_t>();
      type.pointer = tj.contains("pointer") && tj["pointer"].is_boolean() && tj["pointer"].get<bool>();
      uint32_t first = u32_at(tj, tpath, "first", n), last = u32_at(tj, tpath, "last", n);
      if (first >= last || first <= contents.data_field)
        fail(tpath, "[first, last) must be a non-empty range of fields after the interface's own");
      const std::string prefix = (contents.iface.empty() ? "" : contents.iface + ".") + "#" + std::to_string(next);
      auto strip = [&](const std::string &name, const std::string &where) -> std::optional<std::string> {
        if (name == prefix)
          return std::string();
        if (name.size() > prefix.size() && name.compare(0, prefix.size() + 1, prefix + ".") == 0)
          return name.substr(prefix.size() + 1);
        if (!where.empty())
          fail(where, "\"" + name + "\" is not under \"" + prefix + "\"");
        return std::nullopt;
      };
      auto value = std::make_shared<ManifestCapture>();
      value->expr = capture.expr;
      value->type = type.name;
      value->fault_bit = capture.fault_bit;
      for (uint32_t f = first; f < last; ++f) {
        ManifestField field = capture.fields[f];
        if (!field.hidden)
          fail(tpath, "its fields must be hidden in the capture");
        field.name = *strip(field.name, indexed(path, "fields", f));
        // Shown, but for what only guides the reads inside the value: a map's count of pairs and
        // their addresses ("#pairs", "#slot.0.key"), which the generator names with a '#'.
        field.hidden = field.name.starts_with('#') || field.name.find(".#") != std::string::npos;
        value->fields.push_back(field);
      }
      for (const ManifestList &l : capture.lists)
        if (auto p = strip(l.path, ""))
          value->lists.push_back({*p, l.count.empty() ? "" : strip(l.count, tpath + ".lists").value_or(""), l.map});
      for (const std::string &iface : capture.interfaces)
        if (auto p = strip(iface, ""))
          value->interfaces.push_back(*p);
      value->display = build_display(*value, tpath);
      type.value = std::move(value);
      contents.types.push_back(std::move(type));
    }
    capture.contents.push_back(std::move(contents));
  }
}

ManifestCapture parse_capture(const json &c, const std::string &path, uint32_t header_size,
                              uint32_t event_size) {
  if (!c.is_object())
    fail(path, "expected an object, found " + describe(c));
  ManifestCapture capture;
  capture.expr = string_at(c, path, "expr");
  if (capture.expr.empty())
    fail(path + ".expr", "empty");
  capture.type = optional_string(c, path, "type");
  capture.fault_bit = u32_at(c, path, "fault_bit", 63); // header.faults is a u64
  if (c.contains("unavailable")) {
    capture.unavailable = string_at(c, path, "unavailable");
    if (capture.unavailable.empty())
      fail(path + ".unavailable", "empty: it says why the value is not available");
    if (c.contains("fields") && !array_at(c, path, "fields").empty())
      fail(path + ".fields", "an unavailable value has no fields");
    return capture;
  }
  const json &fields = array_at(c, path, "fields");
  if (fields.empty())
    fail(path + ".fields", "empty: a capture has at least one field");
  for (size_t i = 0; i < fields.size(); ++i)
    capture.fields.push_back(
        parse_field(fields[i], indexed(path, "fields", i), header_size, event_size));
  if (c.contains("interfaces")) {
    const json &list = array_at(c, path, "interfaces");
    for (size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string())
        fail(indexed(path, "interfaces", i), "expected a string");
      capture.interfaces.push_back(list[i].get<std::string>());
    }
  }
  if (c.contains("assertion")) {
    const json &a = c["assertion"];
    std::string apath = path + ".assertion";
    if (!a.is_object())
      fail(apath, "expected an object, found " + describe(a));
    ManifestCapture::Assertion assertion;
    assertion.type_field = u32_at(a, apath, "type_field", static_cast<uint32_t>(capture.fields.size() - 1));
    assertion.type = string_at(a, apath, "type");
    if (!a.contains("descriptor") || !a["descriptor"].is_number_unsigned())
      fail(apath + ".descriptor", "expected an unsigned address");
    assertion.descriptor = a["descriptor"].get<uint64_t>();
    if (!capture.fields[assertion.type_field].hidden || capture.fields[assertion.type_field].kind != FieldKind::Uint)
      fail(apath + ".type_field", "must name a hidden uint field (the dynamic type word)");
    capture.assertion = assertion;
  }
  if (c.contains("lists")) {
    const json &lists = array_at(c, path, "lists");
    for (size_t i = 0; i < lists.size(); ++i) {
      std::string lpath = indexed(path, "lists", i);
      bool map = lists[i].contains("map") && lists[i]["map"].is_boolean() && lists[i]["map"].get<bool>();
      capture.lists.push_back({string_at(lists[i], lpath, "path"), optional_string(lists[i], lpath, "count"), map});
    }
  }
  capture.display = build_display(capture, path);
  if (c.contains("contents"))
    parse_contents(capture, array_at(c, path, "contents"), path + ".contents");
  return capture;
}

ManifestProbe parse_probe(const json &p, size_t index, uint32_t header_size) {
  std::string path = "probes[" + std::to_string(index) + "]";
  if (!p.is_object())
    fail(path, "expected an object, found " + describe(p));
  ManifestProbe probe;
  probe.id = u32_at(p, path, "id", UINT32_MAX);
  // The BPF side writes the id into the event and the tracer indexes probes by it.
  if (probe.id != index)
    fail(path + ".id",
         std::to_string(probe.id) + ", but ids must equal their index " + std::to_string(index));
  probe.name = string_at(p, path, "name");
  probe.function = string_at(p, path, "function");
  probe.abi = optional_string(p, path, "abi");
  probe.program = string_at(p, path, "program");
  if (probe.program.empty())
    fail(path + ".program", "empty");
  probe.event_size = u32_at(p, path, "event_size", kMaxEventSize);
  if (p.contains("stack")) {
    const json &stack = object_at(p, path, "stack");
    probe.stack_offset = u32_at(stack, path + ".stack", "offset", kMaxEventSize);
    probe.stack_depth = u32_at(stack, path + ".stack", "depth", 64);
    if (stack.contains("window")) {
      // stack_mode: window: a struct weave_stack_window and the copied bytes
      probe.stack_window = u32_at(stack, path + ".stack", "window", 1u << 16);
      if (probe.stack_offset < header_size ||
          probe.stack_offset + uint64_t{sizeof(struct weave_stack_window)} + probe.stack_window > probe.event_size)
        fail(path + ".stack", "outside the event record");
      if (stack.contains("thread")) {
        const json &thread = object_at(stack, path + ".stack", "thread");
        probe.thread_offset = u32_at(thread, path + ".stack.thread", "offset", kMaxEventSize);
        probe.thread_window = u32_at(thread, path + ".stack.thread", "window", 1u << 16);
        if (probe.thread_offset < probe.stack_offset + uint64_t{sizeof(struct weave_stack_window)} + probe.stack_window ||
            probe.thread_offset + uint64_t{sizeof(struct weave_stack_window)} + probe.thread_window > probe.event_size)
          fail(path + ".stack.thread", "outside the event record");
      }
    } else if (probe.stack_offset < header_size || probe.stack_offset + 8ull * probe.stack_depth > probe.event_size)
      fail(path + ".stack", "outside the event record");
  }
  if (p.contains("min_duration_ns"))
    probe.min_duration_ns = u64_at(p, path, "min_duration_ns");
  if (p.contains("holds_entry")) {
    if (!p["holds_entry"].is_boolean())
      fail(path + ".holds_entry", "not a bool");
    probe.holds_entry = p["holds_entry"].get<bool>();
  }
  probe.holds_entry = probe.holds_entry || probe.min_duration_ns > 0;
  if (p.contains("duration_offset")) {
    probe.duration_offset = u32_at(p, path, "duration_offset", kMaxEventSize);
    if (probe.duration_offset < header_size || probe.duration_offset + 8 > probe.event_size)
      fail(path + ".duration_offset", "outside the event record");
  }
  if (probe.event_size < header_size)
    fail(path + ".event_size", std::to_string(probe.event_size) + " is smaller than the " +
                                   std::to_string(header_size) + "-byte event header");

  const json &attach = array_at(p, path, "attach");
  if (attach.empty())
    fail(path + ".attach", "empty: a probe has at least one attach point");
  for (size_t i = 0; i < attach.size(); ++i) {
    std::string apath = indexed(path, "attach", i);
    const json &a = attach[i];
    if (!a.is_object())
      fail(apath, "expected an object, found " + describe(a));
    ManifestAttach point;
    std::string kind = string_at(a, apath, "kind");
    if (kind == "entry")
      point.kind = AttachKind::Entry;
    else if (kind == "return")
      point.kind = AttachKind::Return;
    else
      fail(apath + ".kind", "expected \"entry\" or \"return\", found \"" + kind + "\"");
    if (a.contains("vaddr"))
      point.vaddr = u64_at(a, apath, "vaddr");
    point.file_offset = u64_at(a, apath, "file_offset");
    point.cookie = u64_at(a, apath, "cookie");
    probe.attach.push_back(point);
  }

  // The string area: a u64 of the bytes used, then the bytes of the strings marked in_area.
  uint32_t area_offset = 0, area_size = 0;
  if (p.contains("strings")) {
    const json &area = object_at(p, path, "strings");
    area_offset = u32_at(area, path + ".strings", "offset", kMaxEventSize);
    area_size = u32_at(area, path + ".strings", "size", kMaxEventSize);
    if (area_offset < header_size || uint64_t{area_offset} + 8 + area_size > probe.event_size)
      fail(path + ".strings", "outside the event record");
    probe.strings_offset = area_offset;
  }
  probe.min_size = area_size && uint64_t{area_offset} + 8 + area_size == probe.event_size ? area_offset + 8
                                                                                         : probe.event_size;
  const json &captures = array_at(p, path, "captures");
  std::set<uint32_t> bits;
  std::set<std::string> exprs;
  for (size_t i = 0; i < captures.size(); ++i) {
    std::string cpath = indexed(path, "captures", i);
    ManifestCapture capture = parse_capture(captures[i], cpath, header_size, probe.event_size);
    for (ManifestField &field : capture.fields)
      if (field.in_area) {
        if (field.max_len > area_size)
          fail(cpath + ".fields", "a string's max_len exceeds its probe's string area" +
                                      std::string(area_size ? "" : " (the probe has no \"strings\")"));
        field.area_offset = area_offset;
        field.area_size = area_size;
      }
    if (!bits.insert(capture.fault_bit).second)
      fail(cpath + ".fault_bit",
           std::to_string(capture.fault_bit) + " is already used by another capture");
    // exprs are the keys of the JSON output's "args" object, so they must be unique.
    if (!exprs.insert(capture.expr).second)
      fail(cpath + ".expr", "\"" + capture.expr + "\" is captured twice");
    probe.captures.push_back(std::move(capture));
  }
  if (p.contains("inlined_into")) {
    const json &into = object_at(p, path, "inlined_into");
    std::string ipath = path + ".inlined_into";
    probe.inlined_into = ManifestProbe::InlinedInto{string_at(into, ipath, "function"),
                                                    optional_string(into, ipath, "file"),
                                                    optional_string(into, ipath, "physical"),
                                                    u32_at(into, ipath, "line", UINT32_MAX)};
  }
  if (p.contains("line")) {
    const json &at = object_at(p, path, "line");
    std::string lpath = path + ".line";
    ManifestProbe::Line line;
    line.file = string_at(at, lpath, "file");
    line.physical = optional_string(at, lpath, "physical");
    line.line = u32_at(at, lpath, "line", UINT32_MAX);
    line.pc = u64_at(at, lpath, "pc");
    line.inlined = at.contains("inlined") && at["inlined"].is_boolean() && at["inlined"].get<bool>();
    probe.line = std::move(line);
  }
  if (p.contains("dictionary")) {
    // A generic shape instance: its dictionary pointer, captured as a one-word pointer, names
    // the instantiation the caller wrote.
    const json &dict = object_at(p, path, "dictionary");
    std::string dpath = path + ".dictionary";
    uint32_t index = u32_at(dict, dpath, "capture", kMaxEventSize);
    if (index >= probe.captures.size() || probe.captures[index].fields.size() != 1 ||
        probe.captures[index].fields[0].kind != FieldKind::Pointer)
      fail(dpath + ".capture", "not the index of a capture of one pointer");
    probe.dict_capture = static_cast<int32_t>(index);
    const json &names = object_at(dict, dpath, "instantiations");
    for (const auto &[address, name] : names.items()) {
      if (!name.is_string())
        fail(dpath + ".instantiations." + address, "expected a string, found " + describe(name));
      probe.instantiations.emplace(u64_value(json(address), dpath + ".instantiations"), name.get<std::string>());
    }
  }
  return probe;
}

Manifest parse(const json &root) {
  if (!root.is_object())
    fail("manifest", "expected a JSON object at the top");
  Manifest m;
  uint64_t format = u64_at(root, "", "format");
  if (format != kManifestFormat)
    fail("format", std::to_string(format) + " is not supported: this tracer reads format " +
                       std::to_string(kManifestFormat) +
                       "; build the tracer and the manifest with the same weave");
  m.format = static_cast<int>(format);
  m.weave_version = optional_string(root, "", "weave_version");

  const json &target = object_at(root, "", "target");
  m.target.path = string_at(target, "target", "path");
  if (m.target.path.empty())
    fail("target.path", "empty");
  m.target.build_id = string_at(target, "target", "build_id");
  m.target.go_version = string_at(target, "target", "go_version");
  m.target.arch = string_at(target, "target", "arch");
  if (target.contains("pointer_size"))
    m.target.pointer_size = u32_at(target, "target", "pointer_size", 8);

  if (root.contains("options")) {
    const json &options = object_at(root, "", "options");
    if (options.contains("string_max"))
      m.string_max = u32_at(options, "options", "string_max", kMaxEventSize);
    if (options.contains("ring_size")) {
      m.ring_size = u32_at(options, "options", "ring_size", 1u << 30);
      if (m.ring_size < 4096 || (m.ring_size & (m.ring_size - 1)))
        fail("options.ring_size", "expected a power of two from 4096 up, found " + std::to_string(m.ring_size));
    }
    std::string wakeup = optional_string(options, "options", "ringbuf_wakeup");
    if (wakeup == "none")
      m.ringbuf_wakeup = false;
    else if (!wakeup.empty() && wakeup != "always")
      fail("options.ringbuf_wakeup", "expected \"always\" or \"none\", found \"" + wakeup + "\"");
  }

  m.event_header_size = u32_at(root, "", "event_header_size", kMaxEventSize);
  if (m.event_header_size != kEventHeaderSize)
    fail("event_header_size", std::to_string(m.event_header_size) +
                                  ", but this tracer's struct weave_event_header is " +
                                  std::to_string(kEventHeaderSize) + " bytes");

  if (root.contains("goid")) {
    const json &goid = object_at(root, "", "goid");
    if (goid.contains("offset"))
      m.goid_offset = u32_at(goid, "goid", "offset", UINT32_MAX);
    m.goid_source = optional_string(goid, "goid", "source");
  }
  if (root.contains("ancestry")) {
    const json &ancestry = object_at(root, "", "ancestry");
    m.has_gopc = ancestry.contains("gopc_offset");
    m.has_parent_goid = m.has_gopc && ancestry.contains("parent_goid_offset");
    if (m.has_gopc && ancestry.contains("spawn")) {
      const json &spawn = object_at(ancestry, "ancestry", "spawn");
      Manifest::Spawn sp;
      sp.function = string_at(spawn, "ancestry.spawn", "function");
      const json &programs = object_at(spawn, "ancestry.spawn", "programs");
      sp.entry_program = string_at(programs, "ancestry.spawn.programs", "entry");
      sp.return_program = string_at(programs, "ancestry.spawn.programs", "return");
      const json &attach = object_at(spawn, "ancestry.spawn", "attach");
      for (const auto &[kind, into] : {std::pair{"entry", &sp.entry_offsets}, std::pair{"return", &sp.return_offsets}}) {
        const json &points = array_at(attach, "ancestry.spawn.attach", kind);
        for (size_t i = 0; i < points.size(); ++i)
          into->push_back(u64_at(points[i], "ancestry.spawn.attach." + std::string(kind) + "[" + std::to_string(i) + "]",
                                 "file_offset"));
      }
      if (sp.entry_offsets.size() != 1 || sp.return_offsets.empty())
        throw ManifestError("ancestry.spawn.attach: one entry point and at least one return point expected");
      m.spawn = std::move(sp);
      m.has_parent_goid = true;
    }
    m.spawn_refused = optional_string(ancestry, "ancestry", "spawn_refused");
  }

  if (root.contains("type_descriptors")) {
    const json &range = object_at(root, "", "type_descriptors");
    Manifest::DescriptorRange r;
    r.start = u64_at(range, "type_descriptors", "start");
    r.end = u64_at(range, "type_descriptors", "end");
    if (r.start == 0 || r.end <= r.start)
      fail("type_descriptors", "expected 0 < start < end");
    m.type_descriptors = r;
  }

  const json &probes = array_at(root, "", "probes");
  for (size_t i = 0; i < probes.size(); ++i)
    m.probes.push_back(parse_probe(probes[i], i, m.event_header_size));
  // The lost-events map has one slot per probe id; 2^16 probes is far beyond any sane spec.
  if (m.probes.size() > 65536)
    fail("probes", std::to_string(m.probes.size()) + " probes; at most 65536");
  return m;
}

} // namespace

bool record_fits(const ManifestProbe &probe, const void *data, size_t size) {
  if (size < probe.min_size)
    return false;
  if (size >= probe.event_size)
    return true;
  // A short record: its used bytes, strings_len of them after the word that counts them, must be
  // all there (the area's readers are bounded by that word).
  uint64_t used = 0;
  std::memcpy(&used, static_cast<const char *>(data) + probe.strings_offset, sizeof used);
  return used <= size - probe.min_size;
}

size_t Manifest::attach_count() const {
  size_t n = 0;
  for (const ManifestProbe &p : probes)
    n += p.attach.size();
  return n;
}

const char *field_kind_name(FieldKind kind) {
  switch (kind) {
  case FieldKind::Int:
    return "int";
  case FieldKind::Uint:
    return "uint";
  case FieldKind::Bool:
    return "bool";
  case FieldKind::Pointer:
    return "pointer";
  case FieldKind::String:
    return "string";
  case FieldKind::Float:
    return "float";
  case FieldKind::Func:
    return "func";
  case FieldKind::Empty:
    return "empty";
  }
  return "?";
}

std::optional<Manifest> parse_manifest(std::string_view text, std::string &error) {
  error.clear();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    // nlohmann's text starts "[json.exception.parse_error.101] parse error at line 1, ...".
    std::string what = e.what();
    size_t bracket = what.find("] ");
    error = "not valid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2));
    return std::nullopt;
  }
  try {
    return parse(root);
  } catch (const ManifestError &e) {
    error = e.what();
    return std::nullopt;
  }
}

} // namespace weave
