// Internal to the spec stage: checks a parsed spec document against specs/weave.schema.json, and
// the few YAML helpers the parser shares with the validator.
#pragma once

#include "common/diag.h"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>

namespace weave::spec_schema {

// Ordered, so that properties keep the schema's order in "valid keys here: ..." hints.
using Schema = nlohmann::ordered_json;

// The embedded specs/weave.schema.json, parsed and checked once. Throws std::logic_error when it
// uses a keyword the validator does not implement (a build bug, caught by the unit tests).
const Schema &spec_schema();

// Throws std::logic_error when `schema` uses a keyword or form the validator does not implement.
void check_supported(const Schema &schema);

// Throws UserError [spec-schema] for the nodes of `document` that do not conform to `schema` (which
// must pass check_supported): every independent one, as the first error carrying the others (the
// siblings of a node at fault are still checked). `path` is only used in locations.
void validate(const YAML::Node &document, const Schema &schema, const std::string &path);

// The 1-based location of a node; line 0 when yaml-cpp has no mark for it.
SourceLoc location(const YAML::Node &node, const std::string &path);
// Where a scalar's text begins, for errors that point inside it (a capture's field, a condition's
// operator): one past the mark when the scalar is quoted.
SourceLoc text_location(const YAML::Node &node, const std::string &path);

// A YAML 1.2 core-schema decimal integer ("64", "-3", "+7"); nullopt for anything else or overflow.
std::optional<long long> parse_integer(std::string_view text);

// How a node is named when it is not what was expected: "a mapping", "an empty list", "null",
// or the scalar quoted ("abc", shortened when long) — integers unquoted.
std::string describe_found(const YAML::Node &node);

// The text quoted as a JSON string, so control characters and quotes stay visible.
std::string quote(std::string_view text);

} // namespace weave::spec_schema
