// The maps and slices of tests/e2e/assert's -maps calls (Stash, Shelve) under contents: true, and
// the tracer's JSON of them turned into Go's %#v syntax, to be compared with the program's own
// %#v: shared by test_assert.cpp (the JSON lines and text) and test_fleet.cpp (OTLP attributes).
#pragma once

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace contents_maps {

using ojson = nlohmann::ordered_json; // a struct's fields in the order the tracer printed them

// The spec: slice_max 4, so that the longer values are cut; `returns`: each call a span (OTLP);
// `stripped`: the signatures declared, for a binary without DWARF.
inline std::string spec(bool returns, bool stripped = false) {
  std::string ret = returns ? "    return: true\n" : "";
  if (stripped)
    ret = "    params: [{name: v, type: 'interface {}'}, {name: k, type: int}]\n"
          "    results: [{name: ~r0, type: int}]\n" +
          ret;
  return "options:\n"
         "  slice_max: 4\n"
         "probes:\n"
         "  - function: main.Stash\n"
         "    capture: [k, v]\n"
         "    contents: true\n"
         "    contents_types: ['map[string]string', '[]int', '[]string', 'map[int]main.Point']\n" +
         ret +
         "  - function: main.Shelve\n"
         "    capture: [k, v]\n"
         "    contents: true\n"
         "    contents_types: [main.Inventory, '*main.Inventory']\n" +
         ret;
}

constexpr size_t kMapsSliceMax = 4;

// The fields of the fixture's structs, in declaration order, with their types.
inline const std::map<std::string, std::vector<std::pair<std::string, std::string>>> kStructs = {
    {"main.Point", {{"X", "int"}, {"Y", "int"}}},
    {"main.Inventory", {{"Name", "string"}, {"Tags", "map[string]int"}, {"Counts", "[]int"}}},
};

inline std::string go_quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

// "map[K]V" -> {K, V}: the key type ends at the bracket that closes the first one.
inline std::pair<std::string, std::string> map_types(const std::string &type) {
  int depth = 0;
  for (size_t i = 3; i < type.size(); ++i) {
    depth += type[i] == '[' ? 1 : type[i] == ']' ? -1 : 0;
    if (depth == 0)
      return {type.substr(4, i - 4), type.substr(i + 1)};
  }
  return {"", ""};
}

// Whether the tracer shows fewer pairs or elements than the value has (`len` past the items).
template <class J> bool cut(const J &v) { return v.contains("len") && v["len"].template get<size_t>() > v["items"].size(); }

// The tracer's JSON of a value of Go type `type`, in Go's %#v syntax (a nil map or slice and an
// empty one are alike to the tracer: both print as T{}). `cuts` counts the values shown cut, whose
// text cannot be the program's: those are checked by check_cut instead.
template <class J> std::string go_syntax(const std::string &type, const J &v, int &cuts) {
  if (type == "string")
    return go_quote(v.template get<std::string>());
  if (type == "int")
    return std::to_string(v.template get<int64_t>());
  if (type.starts_with("map[")) {
    auto [key, value] = map_types(type);
    cuts += cut(v);
    std::string out = type + "{";
    for (size_t i = 0; i < v["items"].size(); ++i)
      out += (i ? ", " : "") + go_syntax(key, v["items"][i]["key"], cuts) + ":" +
             go_syntax(value, v["items"][i]["value"], cuts);
    return out + "}";
  }
  if (type.starts_with("[]")) {
    cuts += cut(v);
    std::string out = type + "{";
    for (size_t i = 0; i < v["items"].size(); ++i)
      out += (i ? ", " : "") + go_syntax(type.substr(2), v["items"][i], cuts);
    return out + "}";
  }
  if (type.starts_with("*"))
    return "&" + go_syntax(type.substr(1), v, cuts);
  auto fields = kStructs.find(type);
  if (fields == kStructs.end())
    return "<no rendering for " + type + ">";
  std::string out = type + "{";
  size_t i = 0;
  for (const auto &[name, field_type] : fields->second) {
    out += (i++ ? ", " : "") + name + ":";
    out += v.contains(name) ? go_syntax(field_type, v[name], cuts) : "<missing>";
  }
  return out + "}";
}

// Go's %#v with nil maps and slices spelled as the tracer can show them: T{}.
inline std::string without_nil(std::string gov) {
  for (const char *nil : {"map[string]string(nil)", "map[string]int(nil)", "[]int(nil)", "[]string(nil)",
                          "map[int]main.Point(nil)"}) {
    std::string empty = std::string(nil).substr(0, std::strlen(nil) - 5) + "{}";
    for (size_t at; (at = gov.find(nil)) != std::string::npos;)
      gov.replace(at, std::strlen(nil), empty);
  }
  return gov;
}

} // namespace contents_maps
