// End to end, for real: a wildcard over a package becomes one probe per function, each call gives
// an entry and a return event, and the limits and exclusions say what they did.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>

using nlohmann::json;

TEST_CASE("main.* probes every function of the package, entries and returns paired") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("wildcard");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/wildcard.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  std::set<std::string> probed;
  for (const auto &p : manifest["probes"])
    probed.insert(p["function"]);
  // Exactly the functions the fixture defines, less the excluded ones and main.addr, which the
  // compiler inlined everywhere (no body, nothing to probe).
  std::set<std::string> expected = {"main.Ints",       "main.SpillOver",   "main.Strings",    "main.Pointers",
                                    "main.ByValue",    "main.Nested",      "main.(*Server).Handle",
                                    "main.Server.Describe", "main.Floats", "main.Lookup",     "main.Divmod",
                                    "main.Deep",       "main.Collections", "main.Callback",   "main.Check",
                                    "main.Sleepy",     "main.MayPanic",    "main.Leaf",       "main.CallChain",
                                    "main.str"};
  CHECK(probed == expected);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("fixture"), "-truth",
                          dir + "/truth.jsonl", "-rounds", "2", "-deep", "20", "-sleepers", "1"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::map<std::string, int> entries, returns;
  for (const auto &e : e2e::json_lines(traced.out))
    (e["kind"] == "entry" ? entries : returns)[e["function"]]++;
  for (const auto &f : expected) {
    CAPTURE(f);
    CHECK(entries[f] > 0);
    if (f != "main.MayPanic") // its odd calls panic and never return
      CHECK(entries[f] == returns[f]);
  }
  CHECK(entries["main.MayPanic"] == 6);
  CHECK(returns["main.MayPanic"] == 3);
  CHECK(entries["main.Ints"] == 2);
  CHECK(entries["main.Deep"] == 21);
}

TEST_CASE("wildcards: no match, too many matches, and runtime functions only when named") {
  std::string dir = e2e::temp_dir("wildcard-errors");
  auto run_spec = [&](const std::string &text) {
    std::ofstream(dir + "/spec.yaml") << text;
    return e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  };
  auto none = run_spec("probes:\n  - function: 'main.Nothing*'\n");
  CHECK(none.status == 1);
  CHECK(none.err.find("error[no-match]") != std::string::npos);
  auto many = run_spec("probes:\n  - function: 'main.*'\noptions: {max_functions: 3}\n");
  CHECK(many.status == 1);
  CHECK(many.err.find("error[too-many-functions]") != std::string::npos);
  CHECK(many.err.find("the limit is 3") != std::string::npos);
  // *.Describe matches main.Server.Describe but not the runtime's own functions.
  auto runtime = run_spec("probes:\n  - function: '*mallocgc'\n");
  CHECK(runtime.status == 1);
  CHECK(runtime.err.find("error[no-match]") != std::string::npos);
  auto named = run_spec("probes:\n  - function: 'runtime.mallocgc*'\n");
  INFO(named.err);
  CHECK(named.status == 0);
}
