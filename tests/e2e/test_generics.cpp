// End to end, for real: generic functions and methods on every kind of value, traced value for
// value against what each function says it was passed. Their shape instances take a hidden
// dictionary first (GO-ABI.md §1.2): read one register early, every value here would be wrong.
// The dictionary names the instantiation the caller wrote ("main.Sum[main.MyInt]"), which the
// fixture records too; stripped binaries have no ..dict. symbols and show the shape alone.
#include "harness.h"

#include <doctest/doctest.h>

#include <cstdlib>

#include <filesystem>
#include <map>
#include <regex>

using nlohmann::json;

namespace {

struct Traced {
  std::vector<json> events; // entry events, in order
  std::vector<json> truth;
  std::string text;
};

Traced trace(const std::string &binary, const std::string &format,
             const std::string &spec = "tests/e2e/generics.yaml") {
  std::string dir = e2e::temp_dir("generics-" + binary + "-" + format);
  auto built = e2e::run({e2e::weave(), e2e::source(spec), e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", format, "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  Traced t;
  t.text = traced.out;
  if (format == "json")
    for (auto &e : e2e::json_lines(traced.out))
      if (e["kind"] == "entry")
        t.events.push_back(e);
  t.truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  return t;
}

// Every truth line against the entry event of the same function in the same order; returns how
// many values were compared.
size_t compare(const Traced &t, bool instantiations, bool stripped = false, bool newer = false) {
  std::map<std::string, std::vector<const json *>> by_function;
  for (const json &e : t.events)
    by_function[e["function"]].push_back(&e);
  std::map<std::string, size_t> seen;
  size_t values = 0;
  // The version matrix runs this test on fixtures of Go 1.21 and newer.
  newer = newer || std::getenv("WEAVE_MATRIX_FIXTURES") != nullptr;
  for (const json &want : t.truth) {
    std::string function = want["function"];
    if (newer) // Go 1.20+ leave the shapes unnumbered: go.shape.int_0 is go.shape.int
      function = std::regex_replace(function, std::regex(R"((go\.shape\.[^,\]]*?)_\d+)"), "$1");
    if (stripped) { // .gopclntab writes "main.Sum[...]" (Go 1.26: the full name); only some are probed
      std::string elided = function.substr(0, function.find('[')) + "[...]" + function.substr(function.rfind(']') + 1);
      if (!by_function.count(function))
        function = elided;
      if (!by_function.count(function))
        continue;
    }
    CAPTURE(function);
    size_t i = seen[function]++;
    REQUIRE(i < by_function[function].size());
    const json &got = *by_function[function][i];
    CAPTURE(got.dump());
    for (auto &[expr, value] : want["args"].items()) {
      if (stripped && !got["args"].contains(expr))
        continue; // not captured: the stripped spec names no struct fields
      CAPTURE(expr);
      CHECK(e2e::map_pairs_sorted(got["args"][expr]) == e2e::map_pairs_sorted(value)); // a map's pairs as a set
      ++values;
    }
    CHECK_FALSE(got["args"].contains("~dict")); // read, never shown
    if (instantiations && want["instantiation"] != "")
      CHECK(got["instantiation"] == want["instantiation"]);
    else
      CHECK_FALSE(got.contains("instantiation"));
  }
  for (auto &[function, events] : by_function) {
    CAPTURE(function);
    CHECK(events.size() == seen[function]); // no event without its truth line
  }
  return values;
}

} // namespace

TEST_CASE("generic functions and methods: every value, and the instantiation the caller wrote") {
  e2e::require_bpf();
  Traced t = trace("generics", "json");
  REQUIRE(t.truth.size() == 33); // 11 calls a round, 3 rounds
  size_t values = compare(t, true);
  CHECK(values == 81); // 27 a round
  MESSAGE(values << " values compared");
}

TEST_CASE("generics in a PIE: the dictionary's address is found less the load bias") {
  e2e::require_bpf();
  compare(trace("generics_pie", "json"), true);
}

TEST_CASE("generics on 386: the dictionary is the first stack word") {
  e2e::require_bpf();
  compare(trace("generics_386", "json"), true);
}

TEST_CASE("stripped generics: declared params, the dictionary added, the shape alone") {
  e2e::require_bpf();
  Traced t = trace("generics_stripped", "json", "tests/e2e/generics_stripped.yaml");
  size_t values = compare(t, false, true);
  CHECK(values == 24); // a round: Sum's xs and scale in two calls, Add's v and tag, func1's d and why
  MESSAGE(values << " values compared");
}

TEST_CASE("generics as text: the shape function, then the instantiation") {
  e2e::require_bpf();
  Traced t = trace("generics", "text");
  // Go 1.20 and newer (the version matrix) leave shapes unnumbered: go.shape.int, not go.shape.int_0.
  const std::string n = std::getenv("WEAVE_MATRIX_FIXTURES") ? "" : "_0";
  CHECK(t.text.find(" main.Sum[go.shape.int" + n + "] as main.Sum[main.MyInt](xs={len=2, cap=2, items=[0, 7]}, scale=-3)") !=
        std::string::npos);
  CHECK(t.text.find(" main.(*Set[go.shape.int" + n + "]).Add as main.(*Set[int]).Add(s.name=\"ints\", v=5, tag=\"tag-0\")") !=
        std::string::npos);
  CHECK(t.text.find(" main.Counter[go.shape.int" + n + "].func1(d=1, why=\"why-0\")") != std::string::npos);
  CHECK(t.text.find("~dict") == std::string::npos);
}

TEST_CASE("generics built with -N -l: DWARF's .dict is the dictionary, counted once") {
  e2e::require_bpf();
  Traced t = trace("generics_debug", "json");
  REQUIRE(t.truth.size() == 33);
  size_t values = compare(t, true);
  CHECK(values == 81);
  MESSAGE(values << " values compared");
}

// Last: without a newer Go it exits with ctest's skip code, and the cases after it would not run.
TEST_CASE("generics built by a newer Go: a method's dictionary follows its receiver") {
  e2e::require_bpf();
  if (!std::filesystem::exists(e2e::fixture("generics_newer"))) {
    MESSAGE("skipped: no newer Go than the pinned one to build the fixture with (WEAVE_GO_NEWER)");
    std::exit(77);
  }
  size_t values = compare(trace("generics_newer", "json"), true, false, true);
  CHECK(values == 81);
  // Its debug build (-N -l): DWARF's .dict is the dictionary, after the receiver as in the optimized one.
  size_t debug_values = compare(trace("generics_newer_debug", "json"), true, false, true);
  CHECK(debug_values == 81);
}
