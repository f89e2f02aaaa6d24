// spawn_expect.h — what tests/e2e/spawn's traces must say of goroutine ancestry, checked against
// the program's own record (-truth: each goroutine it started, with its parent and the go
// statement's line; each call, with the goroutine it ran on): every event's created_by, the
// goroutines made before a --pid attach, and --graph's trees. Shared by test_calls (amd64, 386)
// and the arm64 VM test.
#pragma once

#include "harness.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace spawn_expect {

using nlohmann::json;

// The spec its checks are written for: Work's and Handle's entries and returns.
inline const char *const kSpec = "probes:\n"
                                 "  - function: main.Work\n"
                                 "    capture: [req, k, depth]\n"
                                 "    return: true\n"
                                 "  - function: main.Handle\n"
                                 "    capture: [req]\n"
                                 "    return: true\n";

// The same for a stripped build: no DWARF, so the parameters are declared, and runtime.g's layout
// (where g.parentGoid and g.gopc are) comes from weave's table for the Go release.
inline const char *const kSpecStripped = "probes:\n"
                                         "  - function: main.Work\n"
                                         "    params: [{name: req, type: int}, {name: k, type: int}, {name: depth, type: int}]\n"
                                         "    results: [{name: r, type: int}]\n"
                                         "    capture: [req]\n"
                                         "    return: true\n"
                                         "  - function: main.Handle\n"
                                         "    params: [{name: req, type: int}, {name: spawn, type: int}]\n"
                                         "    results: [{name: r, type: int}]\n"
                                         "    capture: [req]\n"
                                         "    return: true\n";

// The program's record.
struct SpawnTruth {
  std::map<uint64_t, json> spawns;      // each goroutine the program started -> its record (parent, line, req)
  std::map<uint64_t, std::string> runs; // what it runs: main.Handle (started by main.main) or main.Work (by Handle)
};

inline SpawnTruth spawn_truth(const std::vector<json> &records) {
  SpawnTruth t;
  for (const json &r : records) {
    if (r["kind"] == "spawn")
      t.spawns[r["goid"].get<uint64_t>()] = r;
    else if (r["kind"] == "call")
      t.runs[r["goid"].get<uint64_t>()] = r["function"];
  }
  return t;
}

// Go 1.21+ records every goroutine's parent (g.parentGoid), those made before the tracer too.
// What goroutine `goid` runs, "" when the program recorded no call on it.
inline std::string runs(const SpawnTruth &t, uint64_t goid) {
  auto it = t.runs.find(goid);
  return it == t.runs.end() ? std::string() : it->second;
}

inline bool parent_recorded() {
  std::string v = e2e::matrix_version();
  return !v.empty() && std::stoi(v.substr(v.find('.') + 1)) >= 21;
}

// Every event of a run with `requests` requests of `spawn` pieces of work: created_by is the
// goroutine the program saw run the go statement, and that statement's function, file and line.
inline void check_created_by(const std::vector<json> &events, const SpawnTruth &t, size_t requests, size_t spawn) {
  REQUIRE(t.spawns.size() == requests + requests * spawn);
  size_t checked = 0;
  std::set<uint64_t> goroutines;
  for (const json &e : events) {
    INFO(e.dump());
    uint64_t goid = e["goid"];
    REQUIRE(t.spawns.count(goid) == 1); // every traced call runs on a goroutine the program started
    const json &spawned = t.spawns.at(goid);
    REQUIRE(e.contains("created_by"));
    const json &by = e["created_by"];
    // Known for every goroutine made while the tracer traced: g.parentGoid (Go 1.21+), or weave's
    // probe on goroutine creation before 1.21.
    REQUIRE(by.contains("goid"));
    CHECK(by["goid"] == spawned["parent"]);
    CHECK_FALSE(by.contains("goid_unknown"));
    CHECK(by["line"] == spawned["line"]);
    // Work runs on goroutines Handle started; Handle on goroutines main started.
    CHECK(by["function"] == (runs(t, goid) == "main.Work" ? "main.Handle" : "main.main"));
    std::string file = by["file"];
    REQUIRE(file.size() >= 7);
    CHECK(file.substr(file.size() - 7) == "main.go");
    goroutines.insert(goid);
    ++checked;
  }
  CHECK(checked == 2 * (requests * spawn * 3 + requests)); // every entry and return
  CHECK(goroutines.size() == t.spawns.size());
  MESSAGE(checked << " events' created_by equal to the program's own record of " << goroutines.size()
                  << " goroutines");
}

// A run attached by --pid after the program made `early` goroutines: before Go 1.21 those have no
// parent the tracer could have seen, and say so; those made after have theirs.
inline void check_early(const std::vector<json> &events, const SpawnTruth &t, size_t early, size_t requests,
                        size_t spawn) {
  const bool recorded = parent_recorded();
  REQUIRE(t.spawns.size() == early + requests + requests * spawn);
  size_t made_early = 0, later = 0;
  for (const json &e : events) {
    INFO(e.dump());
    uint64_t goid = e["goid"];
    REQUIRE(t.spawns.count(goid) == 1);
    const json &spawned = t.spawns.at(goid);
    REQUIRE(e.contains("created_by"));
    const json &by = e["created_by"];
    CHECK(by["line"] == spawned["line"]);
    if (spawned["req"] == 0 && !recorded) {
      CHECK(by["function"] == "main.main");
      CHECK_FALSE(by.contains("goid")); // never a guess
      CHECK(by["goid_unknown"] == "made before the tracer attached (its creation was not seen)");
      ++made_early;
    } else {
      REQUIRE(by.contains("goid"));
      CHECK(by["goid"] == spawned["parent"]);
      (spawned["req"] == 0 ? made_early : later) += 1;
    }
  }
  CHECK(made_early == 2 * 3 * early); // Work(0, k, 2) nests three calls: entries and returns
  CHECK(later == 2 * (requests * spawn * 3 + requests));
}

// --graph's text: each goroutine's tree is headed once by its maker and the go statement, and a
// piece of work's tree sits inside the tree of the main.Handle call that spawned it.
inline void check_graph(const std::string &out, const SpawnTruth &t, size_t requests, size_t spawn) {
  REQUIRE(t.spawns.size() == requests + requests * spawn);
  std::regex header(R"(^( *)goroutine (\d+) \(pid \d+\), created by (goroutine (\d+)|an unknown goroutine) in (\S+) at (\S+):(\d+):$)");
  std::regex handle_open(R"(^ +[0-9.]+( *)main\.Handle\(req=(\d+)\) \{  #\d+$)");
  std::set<uint64_t> headed;
  int open_req = 0; // the main.Handle call whose tree the lines are in, 0 outside one
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    INFO(line);
    std::smatch m;
    if (std::regex_match(line, m, handle_open)) {
      open_req = std::stoi(m[2]);
      continue;
    }
    if (line.rfind("goroutine ", 0) == 0)
      open_req = 0; // a tree of its own begins
    if (!std::regex_match(line, m, header))
      continue;
    uint64_t goid = std::stoull(m[2]);
    REQUIRE(t.spawns.count(goid) == 1);
    const json &spawned = t.spawns.at(goid);
    REQUIRE(m[4].matched);
    CHECK(std::stoull(m[4]) == spawned["parent"].get<uint64_t>());
    CHECK(std::stoi(m[7]) == spawned["line"].get<int>());
    std::string file = m[6];
    CHECK(file.substr(file.size() - 7) == "main.go");
    // A piece of work's goroutine is made in main.Handle, a request's in main.main.
    if (runs(t, goid) == "main.Work") {
      CHECK(m[5] == "main.Handle");
      CHECK(m[1].length() > 0); // inside the tree of the Handle call that spawned it
      CHECK(open_req == spawned["req"].get<int>());
    } else {
      CHECK(m[5] == "main.main");
      CHECK(m[1].length() == 0); // main.main is not traced: a tree of its own
    }
    CHECK(headed.insert(goid).second);
  }
  CHECK(headed.size() == t.spawns.size()); // Handle's goroutines and Work's, each headed once
}

} // namespace spawn_expect
