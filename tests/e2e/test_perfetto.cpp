// End to end, for real: --perfetto writes the calls as a timeline in the Chrome trace-event JSON
// format. Every paired call is one complete slice on its goroutine's track, as long as the
// return event says, with the captures the fixture recorded passing as its arguments; entries of
// probes without returns are instants; slices on a track nest, never overlap partially.
#include "harness.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

using nlohmann::json;

TEST_CASE("--perfetto: paired calls are slices on their goroutine's track, values as arguments") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("perfetto");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.(*Server).Handle\n"
                                       "    capture: [s.Name, req.Path]\n"
                                       "    return: true\n"
                                       "  - function: main.Nested\n"
                                       "    capture: [r.Path]\n"
                                       "  - function: main.Deep\n"
                                       "    capture: [n]\n"
                                       "    return: true\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::string file = dir + "/trace.json";
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--perfetto", file, "--", e2e::fixture("fixture"),
                          "-truth", dir + "/truth.jsonl", "-rounds", "4", "-deep", "20"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  json trace = json::parse(e2e::read_file(file));
  REQUIRE(trace["traceEvents"].is_array());
  std::vector<json> truth_handle, truth_nested;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    if (t["function"] == "main.(*Server).Handle")
      truth_handle.push_back(t["args"]);
    if (t["function"] == "main.Nested")
      truth_nested.push_back(t["args"]);
  }
  std::vector<uint64_t> durations; // of the Handle returns, in order
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.(*Server).Handle" && e["kind"] == "return")
      durations.push_back(e["duration_ns"]);
  std::vector<json> handle, nested;
  std::set<std::pair<long long, long long>> named;
  std::map<std::pair<long long, long long>, std::vector<std::pair<double, double>>> slices; // by track
  size_t deep = 0;
  for (const json &ev : trace["traceEvents"]) {
    std::pair<long long, long long> track{ev["pid"], ev["tid"]};
    if (ev["ph"] == "M") {
      CHECK(ev["name"] == "thread_name");
      named.insert(track);
      continue;
    }
    CHECK(named.count(track) == 1); // every track is named before it is used
    if (ev["ph"] == "X") {
      slices[track].push_back({ev["ts"].get<double>(), ev["ts"].get<double>() + ev["dur"].get<double>()});
      if (ev["name"] == "main.(*Server).Handle")
        handle.push_back(ev);
      deep += ev["name"] == "main.Deep";
    } else if (ev["ph"] == "i" && ev["name"] == "main.Nested") {
      nested.push_back(ev);
    }
  }
  REQUIRE(truth_handle.size() == 4);
  REQUIRE(handle.size() == truth_handle.size());
  REQUIRE(durations.size() == handle.size());
  for (size_t i = 0; i < handle.size(); ++i) {
    CAPTURE(i);
    CHECK(handle[i]["args"]["args"]["s.Name"] == truth_handle[i]["s.Name"]);
    CHECK(handle[i]["args"]["args"]["req.Path"] == truth_handle[i]["req.Path"]);
    CHECK(handle[i]["args"]["results"].contains("~r0"));
    CHECK(std::llround(handle[i]["dur"].get<double>() * 1000) == static_cast<long long>(durations[i]));
  }
  REQUIRE(nested.size() == truth_nested.size());
  for (size_t i = 0; i < nested.size(); ++i)
    CHECK(nested[i]["args"]["r.Path"] == truth_nested[i]["r.Path"]);
  CHECK(deep == 21); // -deep 20: Deep(20) .. Deep(0), nested on one track
  for (auto &[track, list] : slices) {
    // Sorted by start (longer first on a tie), each slice ends inside every slice still open.
    std::sort(list.begin(), list.end(), [](auto &a, auto &b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> open;
    for (auto &[begin, end] : list) {
      while (!open.empty() && open.back() <= begin)
        open.pop_back();
      if (!open.empty())
        CHECK(end <= open.back() + 1e-6);
      open.push_back(end);
    }
  }
}
