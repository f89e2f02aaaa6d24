// End to end, for real: the stack captured at a probe, symbolized by the tracer, lists the same
// frames (inlined ones included, with their files and lines) that the traced program itself gets
// from runtime.Callers + runtime.CallersFrames at that call; on the stripped build too.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>

using nlohmann::json;

namespace {

void check_stacks(const std::string &binary) {
  std::string dir = e2e::temp_dir("stacks-" + binary);
  // The stripped build has no DWARF: Leaf's parameter is declared.
  std::string spec = e2e::source("tests/e2e/stacks.yaml");
  if (binary == "fixture_stripped") {
    spec = dir + "/spec.yaml";
    std::ofstream(spec) << "probes:\n  - function: main.Leaf\n    params: [{name: n, type: int}]\n"
                           "    results: [{name: r, type: int}]\n    capture: [n]\n    stack: 10\n";
  }
  auto built = e2e::run({e2e::weave(), spec, e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "2"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth, events;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == "main.Leaf")
      truth.push_back(t["args"]);
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.Leaf")
      events.push_back(e);
  REQUIRE(truth.size() == 2);
  REQUIRE(events.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(events[i]["args"]["n"] == truth[i]["n"]);
    const json &want = truth[i]["stack"];
    const json &got = events[i]["stack"];
    REQUIRE(got.is_array());
    REQUIRE(got.size() >= 4);
    // inlineMe2 and inlineMe1 are inlined into CallChain, which main.main calls.
    CHECK(got[0]["function"] == "main.inlineMe2");
    CHECK(got[0]["inlined"] == true);
    CHECK(got[1]["function"] == "main.inlineMe1");
    CHECK(got[1]["inlined"] == true);
    CHECK(got[2]["function"] == "main.CallChain");
    CHECK(got[2]["inlined"] == false);
    // The whole stack, down to runtime.goexit: a walk that stops early or invents a frame fails.
    CHECK(got.size() == want.size());
    size_t n = std::min(got.size(), want.size());
    for (size_t f = 0; f < n; ++f) {
      CAPTURE(f);
      CHECK(got[f]["function"] == want[f]["function"]);
      CHECK(got[f]["file"] == want[f]["file"]);
      CHECK(got[f]["line"] == want[f]["line"]);
    }
    MESSAGE(binary << ": " << n << " frames equal to runtime.CallersFrames, " << want.size() << " there");
  }
}

} // namespace

TEST_CASE("symbolized stacks match runtime.CallersFrames, inlined frames included") {
  e2e::require_bpf();
  check_stacks("fixture");
}

TEST_CASE("symbolized stacks on the stripped build (no symbols, no DWARF)") {
  e2e::require_bpf();
  check_stacks("fixture_stripped");
}

TEST_CASE("symbolized stacks in a PIE: the load bias comes with every event") {
  e2e::require_bpf();
  check_stacks("fixture_pie");
}

TEST_CASE("text output lists one frame per line, inlined ones marked") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("stacks-text");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/stacks.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--", e2e::fixture("fixture"), "-truth", "/dev/null", "-rounds", "1"});
  REQUIRE(traced.status == 0);
  CHECK(traced.out.find("    main.inlineMe2 (weave.test/fixture/main.go:") != std::string::npos);
  CHECK(traced.out.find(") [inlined]\n    main.inlineMe1 (") != std::string::npos);
  CHECK(traced.out.find("    main.CallChain (weave.test/fixture/main.go:") != std::string::npos);
}
