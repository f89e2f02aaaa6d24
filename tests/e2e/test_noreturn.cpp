// End to end, for real: a function that never returns (a goroutine body looping forever, so its
// code has no RET) probed with return: true. Its entries and their values are traced; its results
// are said to be unknowable, with a warning, not an error.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>

using nlohmann::json;

TEST_CASE("a function that never returns keeps its entries, its results marked unknowable") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("noreturn");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - {function: main.spin, args: all, return: true}\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("forever"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(built.err.find("[no-return]") != std::string::npos);
  CHECK(built.err.find("not knowable") != std::string::npos);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  REQUIRE(manifest["probes"].size() == 1); // the entry alone: no return event to wait for
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("forever"), "-truth",
                          dir + "/truth.jsonl", "-workers", "1"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  REQUIRE(truth.size() == 1);
  // Goroutines start in any order: compare by id, each exactly once.
  std::map<int64_t, json> want, seen;
  for (const json &t : truth)
    want[t["id"].get<int64_t>()] = t;
  // The program's own line ("received ...") shares stdout with the events.
  std::string events;
  std::istringstream lines(traced.out);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("{"))
      events += line + "\n";
  for (const json &e : e2e::json_lines(events)) {
    CHECK(e["function"] == "main.spin");
    REQUIRE(e["kind"] == "entry");
    int64_t id = e["args"]["id"].get<int64_t>();
    CHECK(seen.count(id) == 0);
    seen[id] = e;
  }
  REQUIRE(seen.size() == want.size());
  for (const auto &[id, t] : want) {
    CAPTURE(id);
    REQUIRE(seen.count(id) == 1);
    CHECK(seen[id]["args"]["name"] == t["name"]);
    CHECK(seen[id]["args"].contains("out"));
  }
}
