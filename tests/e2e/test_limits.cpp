// End to end, for real: limits: {events_per_second: N} per probe and over all probes are enforced
// in BPF, in one-second windows of the monotonic clock: no window lets more through, the returns
// of dropped calls are dropped too, and --stats and the summary count what was dropped exactly.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>

using nlohmann::json;

TEST_CASE("limits: per probe and in total, per one-second window, dropped calls counted") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("limits");
  // Each round calls Ints once and Strings twice: 10 rounds are 30 calls, well inside a second.
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Ints\n"
                                       "    capture: [a]\n"
                                       "    limits: {events_per_second: 3}\n"
                                       "  - function: main.Strings\n"
                                       "    return: true\n"
                                       "    limits: {events_per_second: 5}\n"
                                       "options: {limits: {events_per_second: 6}}\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--stats", "--format", "json", "--", e2e::fixture("fixture"),
                          "-truth", "/dev/null", "-rounds", "10"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::map<uint64_t, std::map<std::string, int>> per_window; // entries by second, by function
  int returns = 0;
  std::map<std::string, int> entries;
  for (auto &e : e2e::json_lines(traced.out)) {
    if (e["kind"] == "return") {
      ++returns;
      CHECK(e["duration_ns"].get<uint64_t>() > 0); // only the returns of calls that were shown
      continue;
    }
    ++per_window[e["ts_ns"].get<uint64_t>() / 1000000000][e["function"]];
    ++entries[e["function"]];
  }
  REQUIRE(!per_window.empty());
  for (auto &[window, counts] : per_window) {
    CAPTURE(window);
    CHECK(counts["main.Ints"] <= 3);
    CHECK(counts["main.Strings"] <= 5);
    CHECK(counts["main.Ints"] + counts["main.Strings"] <= 6);
  }
  if (per_window.size() == 1) {
    // In call order: Ints, Strings, Strings per round; the total of 6 binds first in round 2.
    CHECK(entries["main.Ints"] == 2);
    CHECK(entries["main.Strings"] == 4);
  }
  CHECK(returns == entries["main.Strings"]);
  // hits == events + lost + filtered + limited, and the summary's count is the limited column's.
  CHECK(traced.err.find("stats do not add up") == std::string::npos);
  std::smatch m;
  std::string err = traced.err;
  REQUIRE(std::regex_search(err, m, std::regex(R"(limits: dropped (\d+) calls)")));
  int dropped = std::stoi(m[1]);
  CHECK(dropped == 30 - entries["main.Ints"] - entries["main.Strings"]);
  REQUIRE(std::regex_search(err, m, std::regex(R"(total\s+\d+\s+(\d+)\s+(\d+)\s+\d+\s+(\d+)\s+(\d+))")));
  CHECK(std::stoi(m[1]) == 50);      // hits: 30 entries, 20 returns
  CHECK(std::stoi(m[4]) == dropped); // the limited column
}

TEST_CASE("limits: a rate must be a positive integer, said where the spec says it") {
  std::string dir = e2e::temp_dir("limits-errors");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Ints\n    limits: {events_per_second: 0}\n";
  auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  CHECK(r.status != 0);
  CHECK(r.err.find("spec.yaml:3:") != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
}
