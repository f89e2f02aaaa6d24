// Validates a parsed spec document (a YAML::Node tree, read from YAML or JSON) against
// specs/weave.schema.json.
//
// Hand-written because Debian ships no C++ JSON Schema validator, and because errors must carry the
// line:column of the node at fault, which only yaml-cpp's nodes know (nlohmann::json keeps no
// positions). It implements the draft 2020-12 keywords the schema uses and refuses a schema using
// any other (check_supported), so a keyword added to the schema cannot be silently ignored.
#include "spec/schema.h"

#include "support/resources.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <stdexcept>

namespace weave::spec_schema {

namespace {

// Keywords that only document; validation ignores them.
const std::set<std::string> kAnnotations = {"$schema", "$id",         "$comment", "$defs",
                                            "title",   "description", "default",  "examples"};
const std::set<std::string> kAssertions = {
    "$ref",    "type",     "properties", "required",  "additionalProperties",
    "items",   "minItems", "maxItems",   "minLength", "maxLength",
    "minimum", "maximum",  "enum", "anyOf"};
const std::set<std::string> kTypes = {"object", "array", "string", "integer", "boolean"};

[[noreturn]] void unsupported(const std::string &what) {
  throw std::logic_error("spec schema: " + what +
                         " is not supported by weave's validator (generator/spec/schema.cpp)");
}

// Where a node sits in the document, for messages.
struct Place {
  std::string name;  // the node itself: "the spec", "options.string_max", "probes[0]", "capture[1]"
  std::string owner; // the node as a holder of keys: "probe", "options"; "" at the top level
  std::string prefix; // put before the names of its keys: "options.", but "" inside a probe
};

std::string in_owner(const Place &place) {
  return place.owner.empty() ? " at the top level" : " in " + place.owner;
}

std::string plural(const std::string &noun) {
  if (noun.ends_with("s") || noun.ends_with("x"))
    return noun + "es";
  return noun + "s";
}

size_t code_points(std::string_view text) {
  size_t n = 0;
  for (unsigned char c : text)
    n += (c & 0xC0) != 0x80;
  return n;
}

std::string join_keys(const Schema &properties) {
  std::string text;
  for (auto &[key, _] : properties.items())
    text += (text.empty() ? "" : ", ") + key;
  return text;
}

std::string join_enum(const Schema &values) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0)
      text += i + 1 == values.size() ? " or " : ", ";
    text += quote(values[i].get<std::string>());
  }
  return text;
}

class Validator {
public:
  Validator(const Schema &root, const std::string &path) : root_(root), path_(path) {}

  // Every error found, in the order found; `check` adds to it and goes on with the next key or
  // item wherever what follows does not depend on what failed.
  mutable std::vector<UserError> errors;

  void check(const YAML::Node &node, const SourceLoc &loc, const Schema &schema,
             const Place &place) const {
    const Schema &s = resolve(schema);
    std::string type = s.value("type", "");
    if (!has_type(node, type) || (s.contains("enum") && !node.IsScalar())) {
      // "true" and "3" in quotes are strings to YAML and JSON alike: say what would be right.
      bool quoted = node.IsScalar() && node.Tag() == "!" && has_plain_type(node.Scalar(), type);
      fail(loc, place.name + " must be " + expected(s) + ", found " + describe_found(node),
           quoted ? "write " + node.Scalar() + " without quotes: a quoted value is a string"
                  : description(schema));
    }
    if (s.contains("enum"))
      check_enum(node, loc, s, schema, place);
    if (type == "object")
      check_object(node, loc, s, place);
    else if (type == "array")
      check_array(node, loc, s, schema, place);
    else if (type == "string")
      check_string(node, loc, s, schema, place);
    else if (type == "integer")
      check_integer(node, loc, s, schema, place);
  }

private:
  [[noreturn]] void fail(const SourceLoc &loc, std::string message, std::string hint = {}) const {
    throw UserError("spec-schema", std::move(message), loc, std::move(hint));
  }

  // An error that does not stop the checks of its siblings.
  void record(const SourceLoc &loc, std::string message, std::string hint = {}) const {
    errors.emplace_back("spec-schema", std::move(message), loc, std::move(hint));
  }

  // Checks one subtree; its first error is recorded and the caller goes on.
  template <typename F> void independently(F &&check_subtree) const {
    try {
      check_subtree();
    } catch (const UserError &e) {
      errors.push_back(e);
    }
  }

  const Schema &resolve(const Schema &schema) const {
    if (!schema.contains("$ref"))
      return schema;
    auto ref = schema["$ref"].get<std::string>();
    return resolve(root_.at(Schema::json_pointer(ref.substr(1))));
  }

  // A "$ref" may carry its own description, more specific than the shared definition's.
  std::string description(const Schema &schema) const {
    if (schema.contains("description"))
      return schema["description"].get<std::string>();
    const Schema &s = resolve(schema);
    return s.contains("description") ? s["description"].get<std::string>() : std::string();
  }

  // An array's items are named by their title ("probe"), else by their type.
  std::string item_noun(const Schema &items) const {
    const Schema &s = resolve(items);
    if (s.contains("title"))
      return s["title"].get<std::string>();
    static const std::map<std::string, std::string> nouns = {{"object", "mapping"},
                                                             {"array", "list"},
                                                             {"string", "string"},
                                                             {"integer", "integer"},
                                                             {"boolean", "boolean"}};
    auto it = nouns.find(s.value("type", ""));
    return it == nouns.end() ? "value" : it->second;
  }

  static bool has_type(const YAML::Node &node, const std::string &type) {
    // YAML scalars are untyped text, so a type is decided by content. Any scalar is a string,
    // as a YAML user would expect of `name: 2024`; but a quoted one (tag "!") is only a string,
    // as in JSON: `return: "true"` is a typo for `return: true` or a mistake, never silently
    // either.
    if (type.empty())
      return true;
    if (type == "object")
      return node.IsMap();
    if (type == "array")
      return node.IsSequence();
    if (type == "string")
      return node.IsScalar();
    if (type == "integer" || type == "boolean")
      return node.IsScalar() && node.Tag() != "!" && has_plain_type(node.Scalar(), type);
    unsupported("type \"" + type + "\"");
  }

  // Whether an unquoted scalar with this text is of `type` ("integer" or "boolean").
  static bool has_plain_type(const std::string &text, const std::string &type) {
    if (type == "integer")
      return parse_integer(text).has_value();
    if (type == "boolean")
      return text == "true" || text == "false";
    return false;
  }

  // What a schema accepts, as the end of "X must be ...".
  std::string expected(const Schema &s) const {
    if (s.contains("enum"))
      return "one of " + join_enum(s["enum"]);
    std::string type = s.value("type", "");
    if (type == "object")
      return "a mapping";
    if (type == "array")
      return s.contains("items") ? "a list of " + plural(item_noun(s["items"])) : "a list";
    if (type == "boolean")
      return "true or false";
    if (type == "string") {
      long long min = s.value("minLength", 0LL);
      std::string text = min == 1 ? "a non-empty string" : "a string";
      if (min > 1)
        text += " of at least " + std::to_string(min) + " characters";
      if (s.contains("maxLength"))
        text += std::string(min > 1 ? " and" : " of") + " at most " +
                std::to_string(s["maxLength"].get<long long>()) + " characters";
      return text;
    }
    if (type == "integer") {
      bool has_min = s.contains("minimum"), has_max = s.contains("maximum");
      if (has_min && has_max)
        return "an integer between " + std::to_string(s["minimum"].get<long long>()) + " and " +
               std::to_string(s["maximum"].get<long long>());
      if (has_min)
        return "an integer of at least " + std::to_string(s["minimum"].get<long long>());
      if (has_max)
        return "an integer of at most " + std::to_string(s["maximum"].get<long long>());
      return "an integer";
    }
    return "a value";
  }

  void check_enum(const YAML::Node &node, const SourceLoc &loc, const Schema &s,
                  const Schema &schema, const Place &place) const {
    std::vector<std::string> values;
    for (auto &value : s["enum"])
      values.push_back(value.get<std::string>());
    if (std::find(values.begin(), values.end(), node.Scalar()) != values.end())
      return;
    std::string hint = did_you_mean(node.Scalar(), values);
    fail(loc, place.name + " must be " + expected(s) + ", found " + describe_found(node),
         hint.empty() ? description(schema) : hint);
  }

  void check_object(const YAML::Node &node, const SourceLoc &loc, const Schema &s,
                    const Place &place) const {
    static const Schema no_properties = Schema::object();
    const Schema &properties = s.contains("properties") ? s["properties"] : no_properties;
    bool closed = !s.value("additionalProperties", true);
    std::vector<std::string> names;
    for (auto &[key, _] : properties.items())
      names.push_back(key);

    // Unknown keys first: a misspelt required key is better reported as the typo than as missing.
    for (const auto &pair : node) {
      const YAML::Node &key = pair.first;
      if (!key.IsScalar()) {
        record(location(key, path_),
               "a key must be a name, found " + describe_found(key) + in_owner(place));
        continue;
      }
      if (closed && !properties.contains(key.Scalar())) {
        std::string hint = did_you_mean(key.Scalar(), names);
        if (hint.empty())
          hint = names.empty() ? "no keys are allowed here"
                               : "valid keys here: " + join_keys(properties);
        record(location(key, path_), "unknown key " + quote(key.Scalar()) + in_owner(place), hint);
      }
    }
    for (auto &required : s.value("required", Schema::array())) {
      auto key = required.get<std::string>();
      if (!node[key]) {
        std::string hint = description(properties[key]);
        record(loc, "missing required key " + quote(key) + in_owner(place),
               hint.empty() ? hint : key + ": " + hint);
      }
    }
    // "anyOf": [{"required": [...]}, ...]: one alternative's keys all given ("function" or "line"),
    // else the first alternative's first key is reported missing, as "required" would.
    if (s.contains("anyOf")) {
      bool satisfied = false;
      for (auto &alternative : s["anyOf"]) {
        bool all = true;
        for (auto &required : alternative["required"])
          all = all && node[required.get<std::string>()];
        satisfied = satisfied || all;
      }
      if (!satisfied) {
        auto key = s["anyOf"][0]["required"][0].get<std::string>();
        std::string hint = description(properties[key]);
        record(loc, "missing required key " + quote(key) + in_owner(place), hint.empty() ? hint : key + ": " + hint);
      }
    }
    for (const auto &pair : node) {
      if (!pair.first.IsScalar())
        continue;
      const std::string &key = pair.first.Scalar();
      if (!properties.contains(key))
        continue;
      // An empty value's mark is the next token, often on a later line: point at its key instead.
      SourceLoc value_loc =
          pair.second.IsNull() ? location(pair.first, path_) : location(pair.second, path_);
      std::string name = place.prefix + key;
      independently([&] { check(pair.second, value_loc, properties[key], Place{name, name, name + "."}); });
    }
  }

  void check_array(const YAML::Node &node, const SourceLoc &loc, const Schema &s,
                   const Schema &schema, const Place &place) const {
    long long size = static_cast<long long>(node.size());
    auto count = [&](long long n) {
      std::string noun = s.contains("items") ? item_noun(s["items"]) : "item";
      return std::to_string(n) + " " + (n == 1 ? noun : plural(noun));
    };
    std::string found = size == 0 ? "an empty list" : "a list of " + count(size);
    if (s.contains("minItems") && size < s["minItems"].get<long long>())
      fail(loc,
           place.name + " must list at least " + count(s["minItems"].get<long long>()) +
               ", found " + found,
           description(schema));
    if (s.contains("maxItems") && size > s["maxItems"].get<long long>())
      fail(loc,
           place.name + " must list at most " + count(s["maxItems"].get<long long>()) + ", found " +
               found,
           description(schema));
    if (!s.contains("items"))
      return;
    const Schema &items = s["items"];
    const Schema &item_schema = resolve(items);
    for (size_t i = 0; i < node.size(); ++i) {
      std::string name = place.name + "[" + std::to_string(i) + "]";
      // Inside a titled item the location says which item it is, so its keys are named alone:
      // "unknown key in probe", "capture must be ...".
      Place item = item_schema.contains("title")
                       ? Place{name, item_schema["title"].get<std::string>(), ""}
                       : Place{name, name, name + "."};
      SourceLoc item_loc = location(node[i], path_);
      independently([&] { check(node[i], item_loc.line > 0 ? item_loc : loc, items, item); });
    }
  }

  void check_string(const YAML::Node &node, const SourceLoc &loc, const Schema &s,
                    const Schema &schema, const Place &place) const {
    long long length = static_cast<long long>(code_points(node.Scalar()));
    if (length < s.value("minLength", 0LL) ||
        (s.contains("maxLength") && length > s["maxLength"].get<long long>()))
      fail(loc, place.name + " must be " + expected(s) + ", found " + describe_found(node),
           description(schema));
  }

  void check_integer(const YAML::Node &node, const SourceLoc &loc, const Schema &s,
                     const Schema &schema, const Place &place) const {
    long long value = *parse_integer(node.Scalar());
    if ((s.contains("minimum") && value < s["minimum"].get<long long>()) ||
        (s.contains("maximum") && value > s["maximum"].get<long long>()))
      fail(loc, place.name + " must be " + expected(s) + ", found " + describe_found(node),
           description(schema));
  }

  const Schema &root_;
  const std::string &path_;
};

void check_count(const Schema &schema, const char *keyword) {
  if (schema.contains(keyword) && !schema[keyword].is_number_unsigned())
    unsupported(std::string("a non-count \"") + keyword + "\"");
}

void check_schema(const Schema &root, const Schema &schema) {
  if (!schema.is_object())
    unsupported("a schema that is not an object (" + schema.dump() + ")");
  for (auto &[keyword, value] : schema.items()) {
    if (!kAnnotations.contains(keyword) && !kAssertions.contains(keyword))
      unsupported("keyword \"" + keyword + "\"");
    if (keyword == "$ref" || !kAssertions.contains(keyword) || !schema.contains("$ref"))
      continue;
    unsupported("\"" + keyword + "\" beside \"$ref\"");
  }
  if (schema.contains("$ref")) {
    auto &ref = schema["$ref"];
    if (!ref.is_string() || !ref.get<std::string>().starts_with("#/$defs/"))
      unsupported("\"$ref\" " + ref.dump() + " (only \"#/$defs/...\")");
    const Schema *target = &schema;
    for (int hops = 0; target->contains("$ref"); ++hops) {
      auto pointer = Schema::json_pointer((*target)["$ref"].get<std::string>().substr(1));
      if (!root.contains(pointer))
        throw std::logic_error("spec schema: \"$ref\" " + (*target)["$ref"].dump() +
                               " points at nothing");
      if (hops > 16)
        unsupported("a \"$ref\" cycle through " + ref.dump());
      target = &root.at(pointer);
    }
  }
  // The validator dispatches on "type"; JSON Schema would apply these to any matching value.
  if (!schema.contains("type"))
    for (const char *keyword :
         {"properties", "required", "additionalProperties", "items", "minItems", "maxItems",
          "minLength", "maxLength", "minimum", "maximum"})
      if (schema.contains(keyword))
        unsupported(std::string("\"") + keyword + "\" without \"type\"");
  if (schema.contains("type") &&
      (!schema["type"].is_string() || !kTypes.contains(schema["type"].get<std::string>())))
    unsupported("type " + schema["type"].dump());
  for (const char *keyword : {"minItems", "maxItems", "minLength", "maxLength"})
    check_count(schema, keyword);
  for (const char *keyword : {"minimum", "maximum"})
    if (schema.contains(keyword) && !schema[keyword].is_number_integer())
      unsupported(std::string("a non-integer \"") + keyword + "\"");
  if (schema.contains("additionalProperties") && !schema["additionalProperties"].is_boolean())
    unsupported("an \"additionalProperties\" that is not true or false");
  if (schema.contains("enum")) {
    for (auto &value : schema["enum"])
      if (!value.is_string())
        unsupported("a non-string \"enum\" value " + value.dump());
  }
  if (schema.contains("required")) {
    for (auto &key : schema["required"])
      if (!key.is_string() || !schema.contains("properties") ||
          !schema["properties"].contains(key.get<std::string>()))
        throw std::logic_error("spec schema: required key " + key.dump() + " is not a property");
  }
  if (schema.contains("anyOf")) {
    // Only alternatives of required keys, each a property.
    if (!schema["anyOf"].is_array() || schema["anyOf"].empty())
      unsupported("an \"anyOf\" that is not a non-empty array");
    for (auto &alternative : schema["anyOf"]) {
      if (!alternative.is_object() || alternative.size() != 1 || !alternative.contains("required") ||
          !alternative["required"].is_array() || alternative["required"].empty())
        unsupported("an \"anyOf\" alternative other than {\"required\": [keys]}");
      for (auto &key : alternative["required"])
        if (!key.is_string() || !schema.contains("properties") ||
            !schema["properties"].contains(key.get<std::string>()))
          throw std::logic_error("spec schema: anyOf key " + key.dump() + " is not a property");
    }
  }
  if (schema.contains("items"))
    check_schema(root, schema["items"]);
  for (const char *keyword : {"properties", "$defs"}) {
    if (!schema.contains(keyword))
      continue;
    if (!schema[keyword].is_object())
      unsupported(std::string("a \"") + keyword + "\" that is not an object");
    for (auto &[_, sub] : schema[keyword].items())
      check_schema(root, sub);
  }
}

} // namespace

void check_supported(const Schema &schema) {
  check_schema(schema, schema);
}

const Schema &spec_schema() {
  static const Schema schema = [] {
    Schema parsed;
    try {
      parsed = Schema::parse(resource("specs/weave.schema.json"));
    } catch (const nlohmann::json::parse_error &e) {
      throw std::logic_error(std::string("specs/weave.schema.json is not JSON: ") + e.what());
    }
    check_supported(parsed);
    return parsed;
  }();
  return schema;
}

void validate(const YAML::Node &document, const Schema &schema, const std::string &path) {
  Validator validator(schema, path);
  try {
    validator.check(document, location(document, path), schema, {"the spec", "", ""});
  } catch (const UserError &e) {
    validator.errors.push_back(e);
  }
  if (!validator.errors.empty())
    throw combine_errors(std::move(validator.errors));
}

SourceLoc location(const YAML::Node &node, const std::string &path) {
  if (!node.IsDefined() || node.Mark().is_null())
    return {path, 0, 0};
  return {path, node.Mark().line + 1, node.Mark().column + 1};
}

SourceLoc text_location(const YAML::Node &node, const std::string &path) {
  SourceLoc loc = location(node, path);
  if (node.Tag() == "!" && loc.line > 0) // quoted: the mark is the quote, the text starts after it
    loc.column += 1;
  return loc;
}

std::optional<long long> parse_integer(std::string_view text) {
  if (text.starts_with("+"))
    text.remove_prefix(1);
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

std::string describe_found(const YAML::Node &node) {
  switch (node.Type()) {
  case YAML::NodeType::Undefined:
    return "nothing";
  case YAML::NodeType::Null:
    return "null";
  case YAML::NodeType::Sequence:
    return node.size() == 0 ? "an empty list" : "a list";
  case YAML::NodeType::Map:
    return node.size() == 0 ? "an empty mapping" : "a mapping";
  case YAML::NodeType::Scalar:
    break;
  }
  const std::string &text = node.Scalar();
  if (parse_integer(text) && node.Tag() != "!")
    return text;
  constexpr size_t kShown = 40;
  if (code_points(text) <= kShown)
    return quote(text);
  size_t cut = 0;
  for (size_t starts = 0; cut < text.size(); ++cut)
    if ((static_cast<unsigned char>(text[cut]) & 0xC0) != 0x80 && starts++ == kShown)
      break;
  return quote(text.substr(0, cut)) + "...";
}

std::string quote(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace weave::spec_schema
