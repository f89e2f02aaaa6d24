// End to end, for real: capture paths as Go reads them. Fields promoted through embedded structs
// and embedded pointers (depth 1 and 2, a shallower field hiding a deeper one), fields of results
// read at the return (an unnamed *PutResponse as ~r0, named results), and declarations that name
// the binary's own types by their full paths. Every value is compared with what the program
// recorded (tests/e2e/paths). Declared layouts are checked against DWARF field by field: the
// net/url.URL of Go <= 1.25 declared on a Go 1.26 binary, which moved Fragment before RawQuery, is
// refused in one line.
#include "harness.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>

using nlohmann::json;

namespace {

e2e::Result build(const std::string &dir, const std::string &spec_text, const std::string &binary = "paths") {
  std::ofstream(dir + "/spec.yaml") << spec_text;
  return e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(binary), "-o", dir + "/out"});
}

// The first line of weave's error output: a mismatch must be told in one.
std::string first_line(const std::string &text) { return text.substr(0, text.find('\n')); }

// net/url.URL spelled out field by field, in the order of Go <= 1.25 (Debian's 1.19 has OmitHost
// too) or of Go 1.26.
std::string url_struct(bool go126) {
  std::vector<std::pair<std::string, std::string>> fields =
      go126 ? std::vector<std::pair<std::string, std::string>>{{"Scheme", "string"}, {"Opaque", "string"},
                                                               {"User", "unsafe.Pointer"}, {"Host", "string"},
                                                               {"Path", "string"}, {"Fragment", "string"},
                                                               {"RawQuery", "string"}, {"RawPath", "string"},
                                                               {"RawFragment", "string"}, {"ForceQuery", "bool"},
                                                               {"OmitHost", "bool"}}
            : std::vector<std::pair<std::string, std::string>>{{"Scheme", "string"}, {"Opaque", "string"},
                                                               {"User", "unsafe.Pointer"}, {"Host", "string"},
                                                               {"Path", "string"}, {"RawPath", "string"},
                                                               {"OmitHost", "bool"}, {"ForceQuery", "bool"},
                                                               {"RawQuery", "string"}, {"Fragment", "string"},
                                                               {"RawFragment", "string"}};
  std::string out = "{pointer: {struct: [";
  for (size_t i = 0; i < fields.size(); ++i)
    out += (i ? ", " : "") + std::string("{name: ") + fields[i].first + ", type: " + fields[i].second + "}";
  return out + "]}}";
}

std::string visit_spec(const std::string &u_type) {
  return "probes:\n  - function: main.Visit\n    params: [{name: u, type: " + u_type +
         "}, {name: n, type: int}]\n    capture: [u.Path, u.RawPath, u.RawQuery, u.Fragment, n]\n";
}

struct Traced {
  std::vector<json> events, truth;
};

Traced trace(const std::string &dir, const std::string &spec_path, const std::string &binary) {
  auto built = e2e::run({e2e::weave(), spec_path, e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(built.err.find("warning") == std::string::npos);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "2"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  return {e2e::json_lines(traced.out), e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))};
}

// Every recorded value set against the event of the same function and kind, in order; a return's
// capture_at_return values are its results named EXPR@return.
void compare(const Traced &run, size_t expected_sets) {
  std::map<std::string, size_t> seen;
  size_t compared = 0;
  for (const json &t : run.truth) {
    std::string function = t["function"], kind = t["kind"];
    size_t k = seen[function + kind]++;
    std::vector<const json *> events;
    for (const json &e : run.events)
      if (e["function"] == function && e["kind"] == kind)
        events.push_back(&e);
    CAPTURE(function);
    CAPTURE(kind);
    REQUIRE(k < events.size());
    const json &e = *events[k];
    CHECK_FALSE(e.contains("faults"));
    if (kind == "entry") {
      CHECK(e["args"] == t["values"]);
    } else {
      for (const auto &[expr, value] : t["values"].items()) {
        CAPTURE(expr);
        REQUIRE(e["results"].contains(expr + "@return"));
        CHECK(e["results"][expr + "@return"] == value);
      }
    }
    ++compared;
  }
  CHECK(compared == expected_sets);
}

} // namespace

TEST_CASE("promoted fields, results' fields at the return and the binary's own type names: values match") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("paths");
  Traced run = trace(dir, e2e::source("tests/e2e/paths.yaml"), "paths");
  // 2 rounds: processPub, Put (entry, return), Lookup (entry, return), Visit, UsePair.
  compare(run, 14);
}

TEST_CASE("an ambiguous selector is refused as Go refuses it, naming both paths") {
  std::string dir = e2e::temp_dir("paths-ambiguous");
  auto r = build(dir, "probes:\n  - function: main.(*client).processPub\n    capture: [c.X]\n");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[ambiguous-selector]") != std::string::npos);
  CHECK(r.err.find("c.Left.X and c.Right.X") != std::string::npos);
  CHECK(r.err.find("spec.yaml:3:17") != std::string::npos); // at the X
  CHECK_FALSE(std::filesystem::exists(dir + "/out/tracer"));
}

TEST_CASE("a field that is not promoted gets a hint with its full path") {
  std::string dir = e2e::temp_dir("paths-hint");
  // subject is inside pa, a named (not embedded) field of the embedded parseState.
  auto r = build(dir, "probes:\n  - function: main.(*client).processPub\n    capture: [c.subject]\n");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[unknown-field]") != std::string::npos);
  CHECK(r.err.find("did you mean c.parseState.pa.subject?") != std::string::npos);
}

TEST_CASE("capture_at_return names parameters and results, and an unknown root lists both") {
  std::string dir = e2e::temp_dir("paths-unknown-result");
  auto r = build(dir, "probes:\n  - function: main.Lookup\n    return: true\n    capture_at_return: [\"~r0.Prev\"]\n");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[unknown-parameter]") != std::string::npos);
  CHECK(r.err.find("has no parameter or result ~r0") != std::string::npos);
  CHECK(r.err.find("parameters: key, into; results: resp, found, count") != std::string::npos);
}

TEST_CASE("a declared layout is checked against DWARF field by field, and a difference refused in one line") {
  // The binary's own order builds (values are checked in the first case, through *net/url.URL).
  std::string same_dir = e2e::temp_dir("paths-layout-same");
  auto same = build(same_dir, visit_spec(url_struct(false)));
  INFO(same.err);
  CHECK(same.status == 0);
  // Go 1.26's order on the Go 1.19 binary.
  std::string newer_dir = e2e::temp_dir("paths-layout-126-on-119");
  auto newer = build(newer_dir, visit_spec(url_struct(true)));
  CHECK(newer.status == 1);
  CHECK(first_line(newer.err).find("error[params-mismatch]") != std::string::npos);
  CHECK(first_line(newer.err).find("param 1 'u': declared *net/url.URL field Fragment at offset 72, binary has it at 112") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(newer_dir + "/out/tracer"));
  // A field's type: string where the binary has an int.
  std::string type_dir = e2e::temp_dir("paths-layout-type");
  auto typed = build(type_dir, "probes:\n  - function: main.UsePair\n    params: [{name: p, type: {pointer: {struct: "
                               "[{name: Key, type: string}, {name: Val, type: string}]}}}, {name: scale, type: int}]\n"
                               "    capture: [p.Key]\n");
  CHECK(typed.status == 1);
  CHECK(first_line(typed.err).find("param 1 'p': declared *main.Pair[string,int64] field Val as string (16 bytes), "
                                   "binary has int64 (8 bytes)") != std::string::npos);
  // A scalar parameter of the wrong size.
  std::string scalar_dir = e2e::temp_dir("paths-layout-scalar");
  auto scalar = build(scalar_dir, "probes:\n  - function: main.UsePair\n    params: [{name: p, type: \"*main.Pair[string,int64]\"}, "
                                  "{name: scale, type: int32}]\n    capture: [scale]\n");
  CHECK(scalar.status == 1);
  CHECK(first_line(scalar.err).find("param 2 'scale': declared int32 (4 bytes), binary has int (8 bytes)") !=
        std::string::npos);
}

TEST_CASE("net/url.URL declared in Go 1.25's field order is refused on a Go 1.26 binary") {
  if (!std::filesystem::exists(e2e::fixture("paths_newer"))) {
    MESSAGE("skipped: no newer Go toolchain built paths_newer (WEAVE_GO_NEWER)");
    exit(77);
  }
  auto version = e2e::run({WEAVE_GO, "version", e2e::fixture("paths_newer")});
  std::smatch m;
  std::regex go_minor(R"(go1\.(\d+))");
  REQUIRE(std::regex_search(version.out, m, go_minor));
  if (std::stoi(m[1]) < 26) {
    MESSAGE("skipped: paths_newer was built by go1." << m[1] << ", whose net/url.URL has the old field order");
    exit(77);
  }
  std::string dir = e2e::temp_dir("paths-layout-125-on-126");
  auto old_order = build(dir, visit_spec(url_struct(false)), "paths_newer");
  CHECK(old_order.status == 1);
  CHECK(first_line(old_order.err).find("error[params-mismatch]") != std::string::npos);
  CHECK(first_line(old_order.err).find("param 1 'u': declared *net/url.URL field RawPath at offset 72, binary has it at 104") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out/tracer"));
  // Its own order builds.
  std::string ok_dir = e2e::temp_dir("paths-layout-126-on-126");
  auto own = build(ok_dir, visit_spec(url_struct(true)), "paths_newer");
  INFO(own.err);
  CHECK(own.status == 0);
}

TEST_CASE("the Go 1.26 build traces the same paths, values matched") {
  e2e::require_bpf();
  if (!std::filesystem::exists(e2e::fixture("paths_newer"))) {
    MESSAGE("skipped: no newer Go toolchain built paths_newer (WEAVE_GO_NEWER)");
    exit(77);
  }
  std::string dir = e2e::temp_dir("paths-newer");
  Traced run = trace(dir, e2e::source("tests/e2e/paths.yaml"), "paths_newer");
  compare(run, 14);
}
