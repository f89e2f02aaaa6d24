// End to end, for real: slices, arrays, maps, channels, floats and complex numbers, on the register
// ABI (amd64) and the stack ABI (386), compared with what the fixture passed.
#include "harness.h"

#include <doctest/doctest.h>

using nlohmann::json;

namespace {

// Traces `spec` on `binary` and returns (events of `function`, truth lines of `function`).
std::pair<std::vector<json>, std::vector<json>> trace(const std::string &name, const std::string &spec,
                                                      const std::string &binary, const std::string &function) {
  std::string dir = e2e::temp_dir(name);
  auto built = e2e::run({e2e::weave(), e2e::source(spec), e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> events, truth;
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == function)
      events.push_back(e);
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == function)
      truth.push_back(t);
  return {events, truth};
}

void check_collections(const std::string &binary) {
  auto [events, truth] = trace("types-" + binary, "tests/e2e/types.yaml", binary, "main.Collections");
  REQUIRE(truth.size() == 3);
  REQUIRE(events.size() == 3);
  for (size_t i = 0; i < 3; ++i)
    for (auto &[expr, expected] : truth[i]["args"].items()) {
      CAPTURE(i);
      CAPTURE(expr);
      CHECK(e2e::map_pairs_sorted(events[i]["args"][expr]) == e2e::map_pairs_sorted(expected)); // m: a set
    }
}

} // namespace

TEST_CASE("slices, arrays, maps, channels, floats and complex numbers: amd64") {
  e2e::require_bpf();
  check_collections("fixture");
}

TEST_CASE("slices, arrays, maps, channels, floats and complex numbers: 386") {
  e2e::require_bpf();
  check_collections("fixture_386");
}

TEST_CASE("floats passed on the stack (386 ABI0) are read exactly") {
  e2e::require_bpf();
  auto [events, truth] = trace("floats-386", "tests/e2e/floats386.yaml", "fixture_386", "main.Floats");
  REQUIRE(truth.size() == 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["args"] == truth[0]["args"]);
}

// Interfaces and errors: the dynamic type by name, the message or value behind it.
static void check_interfaces(const std::string &binary) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("interfaces-" + binary);
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/interfaces.yaml"), e2e::fixture(binary), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> want_args, want_results, entries, returns;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    if (t["function"] == "main.Check")
      want_args.push_back(t["args"]);
    if (t["function"] == "main.Check:return")
      want_results.push_back(t["args"]);
  }
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.Check")
      (e["kind"] == "entry" ? entries : returns).push_back(e);
  REQUIRE(want_args.size() == 3);
  REQUIRE(entries.size() == 3);
  REQUIRE(returns.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(entries[i]["args"] == want_args[i]);
    CHECK(returns[i]["results"] == want_results[i]);
  }
}

TEST_CASE("interfaces and errors: the dynamic type by name, the message or value behind it") {
  check_interfaces("fixture");
}

TEST_CASE("interfaces in a PIE: type descriptors are found at their load address less the bias") {
  check_interfaces("fixture_pie");
}

TEST_CASE("index and len()/cap() expressions; an index past a slice's length is a fault") {
  e2e::require_bpf();
  auto [events, truth] = trace("expressions", "tests/e2e/expressions.yaml", "fixture", "main.Collections");
  REQUIRE(truth.size() == 3);
  REQUIRE(events.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const json &want = truth[i]["args"];
    const json &got = events[i]["args"];
    int len = want["xs"]["len"];
    CHECK(got["xs[1]"] == want["xs"]["items"][1]);
    if (len > 7) {
      CHECK(got["xs[7]"] == want["xs"]["items"][7]);
    } else {
      CHECK(got["xs[7]"].is_null()); // past the length: a fault, never a stale element
      REQUIRE(events[i].contains("faults"));
      CHECK(events[i]["faults"][0] == "xs[7]");
    }
    CHECK(got["len(xs)"] == len);
    CHECK(got["cap(xs)"] == want["xs"]["cap"]);
    CHECK(got["names[1]"] == want["names"]["items"][1]);
    CHECK(got["arr[2]"] == want["arr"][2]);
    CHECK(got["pts[1].Y"] == want["pts"]["items"][1]["Y"]);
    CHECK(got["len(m)"] == want["m"]["len"]);
    CHECK(got["len(ch)"] == want["ch"]["len"]);
    CHECK(got["cap(ch)"] == want["ch"]["cap"]);
    CHECK(got["len(names[0])"] == want["names"]["items"][0].get<std::string>().size());
  }
}

TEST_CASE("func values print as the function they call") {
  e2e::require_bpf();
  auto [events, truth] = trace("funcs", "tests/e2e/funcs.yaml", "fixture", "main.Callback");
  REQUIRE(events.size() == 1);
  // The fixture passes a closure literal written in main: the compiler names it main.main.funcN.
  std::string fn = events[0]["args"]["fn"];
  CHECK(fn.rfind("main.main.func", 0) == 0);
  CHECK(events[0]["args"]["v"] == json({{"type", "string"}, {"value", "v"}}));
}
