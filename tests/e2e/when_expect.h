// when_expect.h — what tests/e2e/when.yaml must give, checked against the fixture's own record of
// the calls it made (-truth, -rounds 8): exactly the calls whose recorded values satisfy the
// conditions, every value the condition read shown and true, only the returns of the calls shown,
// and --stats accounting for every run. Shared by test_when (amd64, 386) and the arm64 VM test.
#pragma once

#include "harness.h"

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace when_expect {

using nlohmann::json;


// The same conditions, evaluated here on what the program recorded it passed.
bool handle_passes(const json &a) {
  std::string path = a["req.Path"];
  return a["req.Header.Port"].get<int>() >= 8081 && path.rfind("/api/v", 0) == 0 && a["s.Hits"] != 3 &&
         a["deadline"].get<int64_t>() < -16;
}
bool nested_passes(const json &a) {
  return a["r.Path"] == "/api/v1" || a["r.Header.Port"] == 8083 || a["r.Hdr.ID"].get<int>() < -400;
}

// The --stats table at exit, by "probe kind" and column name.
std::map<std::string, std::map<std::string, long long>> stats_rows(const std::string &err) {
  std::map<std::string, std::map<std::string, long long>> rows;
  size_t at = err.find("weave: stats at exit");
  if (at == std::string::npos)
    return rows;
  std::istringstream lines(err.substr(at));
  std::string line;
  std::getline(lines, line); // the title
  std::vector<std::string> header;
  while (std::getline(lines, line)) {
    std::istringstream words(line.substr(std::min(line.size(), line.find(':') + 1)));
    std::vector<std::string> cells;
    for (std::string w; words >> w;)
      cells.push_back(w);
    if (header.empty()) {
      header = cells;
      continue;
    }
    if (cells.size() != header.size() || cells[0] == "total")
      break;
    for (size_t i = 3; i < cells.size(); ++i)
      rows[cells[0] + " " + cells[1]][header[i]] = cells[i] == "-" ? -1 : std::stoll(cells[i]);
  }
  return rows;
}

// truth: the fixture's -truth file; out: the tracer's JSON lines; err: its stderr with --stats.
inline void check(const std::string &truth, const std::string &out, const std::string &err) {
  std::map<std::string, std::vector<json>> want, got;
  std::map<std::string, int> calls, returns;
  const std::map<std::string, std::function<bool(const json &)>> passes = {{"main.(*Server).Handle", handle_passes},
                                                                           {"main.Nested", nested_passes}};
  for (auto &t : e2e::json_lines(truth)) {
    auto p = passes.find(t["function"]);
    if (p == passes.end())
      continue;
    ++calls[p->first];
    if (p->second(t["args"]))
      want[p->first].push_back(t["args"]);
  }
  for (auto &e : e2e::json_lines(out)) {
    if (e["kind"] == "return") {
      ++returns[e["function"]];
      CHECK(e["duration_ns"].get<uint64_t>() > 0); // every return shown has its entry
      continue;
    }
    json args;
    for (auto &[key, value] : e["args"].items())
      args[key] = value;
    got[e["function"]].push_back(args);
  }
  CHECK(calls["main.(*Server).Handle"] == 8);
  CHECK(calls["main.Nested"] == 8);
  for (const auto &[function, expected] : want) {
    CAPTURE(function);
    REQUIRE(got[function].size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      for (auto &[key, value] : got[function][i].items()) {
        CAPTURE(key);
        CHECK(value == expected[i][key]); // every value the condition read is shown, and true
      }
  }
  CHECK(want["main.(*Server).Handle"].size() == 5); // rounds 2, 4, 5, 6, 7
  CHECK(want["main.Nested"].size() == 5);           // rounds 1, 3, 5, 6, 7
  CHECK(returns["main.(*Server).Handle"] == 5);      // the returns of the calls shown, no others
  CHECK(returns.count("main.Nested") == 0);
  // --stats accounts for every run: hits == events + lost + filtered, per probe.
  std::map<std::string, std::map<std::string, long long>> stats = stats_rows(err);
  auto &handle = stats["main.(*Server).Handle entry"];
  CHECK(handle["hits"] == 8);
  CHECK(handle["events"] == 5);
  CHECK(handle["filtered"] == 3);
  auto &handle_ret = stats["main.(*Server).Handle return"];
  CHECK(handle_ret["events"] == 5);
  CHECK(handle_ret["filtered"] == handle_ret["hits"] - 5); // returns of the calls it dropped
  auto &nested = stats["main.Nested entry"];
  CHECK(nested["hits"] == 8);
  CHECK(nested["filtered"] == 3);
  for (auto &[row, cells] : stats) {
    CAPTURE(row);
    CHECK(cells["hits"] == cells["events"] + cells["lost"] + cells["filtered"]);
  }
  CHECK(err.find("!=") == std::string::npos); // no probe's numbers fail to add up
}

} // namespace when_expect
