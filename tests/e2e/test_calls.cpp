// End to end, for real: the Calls stage's call ids (runtime/calls.h). The spawn fixture starts a
// goroutine per request and per piece of work, nests calls on each, and records every call itself:
// its goroutine id (parsed from runtime.Stack's header), arguments and result. Every entry event's
// "call" must join exactly one return's, and the pair must be the program's own call: the same
// goroutine, and the result the program computed from those very arguments. And ancestry: every
// event on a goroutine the program started names, in "created_by" and in --graph's tree headers,
// the goroutine that started it and the go statement's function and line, as the program recorded
// them. Go 1.21+ records the parent goroutine in g.parentGoid; the pinned Go 1.19 does not, and
// there weave's own probe on goroutine creation (runtime.newproc1) learns it; a goroutine made
// before the tracer attached has no parent the tracer could know, and it must say so.
#include "harness.h"
#include "spawn_expect.h"

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

using nlohmann::json;

namespace {

using spawn_expect::kSpec;
using spawn_expect::kSpecStripped;

struct Traced {
  std::vector<json> events; // the tracer's JSON lines, or empty with --graph
  std::string out, err;
  std::vector<json> truth;  // the program's own records
};

Traced trace(const std::string &fixture, const std::vector<std::string> &options, int requests, int spawn,
             const char *spec = kSpec) {
  std::string dir = e2e::temp_dir("calls-" + fixture);
  std::ofstream(dir + "/spec.yaml") << spec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::vector<std::string> argv = {dir + "/out/tracer"};
  argv.insert(argv.end(), options.begin(), options.end());
  for (std::string arg : {std::string("--"), e2e::fixture(fixture), std::string("-truth"), dir + "/truth.jsonl",
                          std::string("-requests"), std::to_string(requests), std::string("-spawn"),
                          std::to_string(spawn)})
    argv.push_back(arg);
  auto r = e2e::run(argv);
  INFO(r.err);
  REQUIRE(r.status == 0);
  Traced t;
  t.out = r.out;
  t.err = r.err;
  t.truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  if (std::find(options.begin(), options.end(), "json") != options.end())
    t.events = e2e::json_lines(r.out);
  return t;
}

void check_call_ids(const std::string &fixture) {
  constexpr int kRequests = 6, kSpawn = 4;
  Traced t = trace(fixture, {"--format", "json", "--no-summary"}, kRequests, kSpawn);
  // The program's own calls: Work by (req, k, depth), Handle by req.
  std::map<std::tuple<int, int, int>, json> work;
  std::map<int, json> handle;
  for (const json &r : t.truth) {
    if (r["kind"] != "call")
      continue;
    if (r["function"] == "main.Work")
      work[{r["req"].get<int>(), r["k"].get<int>(), r["depth"].get<int>()}] = r;
    else
      handle[r["req"].get<int>()] = r;
  }
  REQUIRE(work.size() == size_t(kRequests * kSpawn * 3));
  REQUIRE(handle.size() == size_t(kRequests));

  std::map<uint64_t, json> entries, returns;
  for (const json &e : t.events) {
    INFO(e.dump());
    REQUIRE(e.contains("call"));
    uint64_t call = e["call"];
    CHECK(call > 0);
    auto &side = e["kind"] == "entry" ? entries : returns;
    CHECK(side.count(call) == 0); // one entry and one return per call
    side[call] = e;
  }
  // Every entry joins exactly one return by its call id, and every return one entry.
  REQUIRE(entries.size() == work.size() + handle.size());
  REQUIRE(returns.size() == entries.size());
  size_t joined_work = 0, joined_handle = 0;
  for (const auto &[call, entry] : entries) {
    CAPTURE(call);
    REQUIRE(returns.count(call) == 1);
    const json &ret = returns[call];
    INFO(entry.dump());
    INFO(ret.dump());
    CHECK(ret["function"] == entry["function"]);
    CHECK(ret["goid"] == entry["goid"]);
    REQUIRE(ret.contains("duration_ns"));
    CHECK(ret["ts_ns"].get<uint64_t>() - ret["duration_ns"].get<uint64_t>() == entry["ts_ns"].get<uint64_t>());
    const json &args = entry["args"];
    if (entry["function"] == "main.Work") {
      auto key = std::tuple{args["req"].get<int>(), args["k"].get<int>(), args["depth"].get<int>()};
      REQUIRE(work.count(key) == 1);
      const json &truth = work[key];
      CHECK(ret["results"]["~r0"] == truth["result"]); // the program's result for these arguments
      CHECK(entry["goid"] == truth["goid"]);          // on the goroutine it ran on
      ++joined_work;
    } else {
      REQUIRE(handle.count(args["req"].get<int>()) == 1);
      const json &truth = handle[args["req"].get<int>()];
      CHECK(ret["results"]["~r0"] == truth["result"]);
      CHECK(entry["goid"] == truth["goid"]);
      ++joined_handle;
    }
  }
  CHECK(joined_work == work.size());
  CHECK(joined_handle == handle.size());
}

void check_created_by(const std::string &fixture, const char *spec = kSpec) {
  constexpr int kRequests = 5, kSpawn = 3;
  Traced t = trace(fixture, {"--format", "json", "--no-summary"}, kRequests, kSpawn, spec);
  spawn_expect::check_created_by(t.events, spawn_expect::spawn_truth(t.truth), kRequests, kSpawn);
}

} // namespace

TEST_CASE("ancestry: every event names the goroutine that started its goroutine and the go statement (amd64)") {
  e2e::require_bpf();
  check_created_by("spawn");
}

TEST_CASE("ancestry: every event names the goroutine that started its goroutine and the go statement (386)") {
  e2e::require_bpf();
  check_created_by("spawn_386");
}

TEST_CASE("ancestry: a stripped build, runtime.g's layout from weave's table for the Go release") {
  e2e::require_bpf();
  check_created_by("spawn_stripped", kSpecStripped);
}

TEST_CASE("ancestry: a stripped 386 build, runtime.g's 4-byte-word layout from the table") {
  e2e::require_bpf();
  check_created_by("spawn_386_stripped", kSpecStripped);
}

TEST_CASE("ancestry: a goroutine made before the tracer attached has no parent it could know, and says so") {
  e2e::require_bpf();
  // Before Go 1.21 nothing in the goroutine records its parent: what the tracer knows it learned
  // watching goroutines being made. Go 1.21+ records it, for early goroutines too.
  constexpr int kEarly = 3, kRequests = 2, kSpawn = 2;
  std::string dir = e2e::temp_dir("calls-early");
  std::ofstream(dir + "/spec.yaml") << kSpec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("spawn"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto target = e2e::spawn({e2e::fixture("spawn"), "-truth", dir + "/truth.jsonl", "-early", std::to_string(kEarly),
                            "-requests", std::to_string(kRequests), "-spawn", std::to_string(kSpawn)},
                           dir);
  REQUIRE(target.wait_for_err("ready")); // its early goroutines are made
  auto trace = e2e::spawn(
      {dir + "/out/tracer", "--format", "json", "--no-summary", "--pid", std::to_string(target.pid)}, dir);
  REQUIRE_MESSAGE(trace.wait_for_err("weave: tracing"), trace.read_err());
  kill(target.pid, SIGUSR1);
  CHECK(target.wait() == 0);
  CHECK(trace.wait() == 0);
  INFO(trace.read_err());
  Traced t;
  t.events = e2e::json_lines(trace.read_out());
  t.truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  spawn_expect::check_early(t.events, spawn_expect::spawn_truth(t.truth), kEarly, kRequests, kSpawn);
}

TEST_CASE("ancestry: --graph heads each goroutine's tree with its maker, and nests it under the spawning call") {
  e2e::require_bpf();
  constexpr int kRequests = 3, kSpawn = 2;
  Traced t = trace("spawn", {"--graph", "--no-summary"}, kRequests, kSpawn);
  INFO(t.out);
  spawn_expect::check_graph(t.out, spawn_expect::spawn_truth(t.truth), kRequests, kSpawn);
}

TEST_CASE("ancestry: --perfetto draws a flow from the spawning call's slice to each spawned goroutine") {
  e2e::require_bpf();
  constexpr int kRequests = 3, kSpawn = 3;
  std::string path = e2e::temp_dir("calls-perfetto") + "/trace.json";
  Traced t = trace("spawn", {"--perfetto", path, "--no-summary", "-o", "/dev/null"}, kRequests, kSpawn);
  spawn_expect::SpawnTruth truth = spawn_expect::spawn_truth(t.truth);
  std::map<uint64_t, json> &spawns = truth.spawns;
  json trace = json::parse(e2e::read_file(path));
  std::map<uint64_t, json> starts, finishes; // flow id -> event
  std::vector<json> handles;                   // main.Handle's slices
  for (const json &e : trace["traceEvents"]) {
    if (e["ph"] == "s")
      CHECK(starts.emplace(e["id"].get<uint64_t>(), e).second);
    else if (e["ph"] == "f")
      CHECK(finishes.emplace(e["id"].get<uint64_t>(), e).second);
    else if (e["ph"] == "X" && e["name"] == "main.Handle")
      handles.push_back(e);
  }
  REQUIRE(handles.size() == size_t(kRequests));
  // One arrow per goroutine Handle started (main.main, which started Handle's, is not traced).
  REQUIRE(finishes.size() == size_t(kRequests * kSpawn));
  REQUIRE(starts.size() == finishes.size());
  std::set<uint64_t> children;
  for (const auto &[id, f] : finishes) {
    INFO(f.dump());
    REQUIRE(starts.count(id) == 1);
    const json &s = starts[id];
    INFO(s.dump());
    CHECK(f["bp"] == "e");
    uint64_t child = f["tid"];
    REQUIRE(spawns.count(child) == 1);
    CHECK(spawn_expect::runs(truth, child) == "main.Work");
    const json &spawn = spawns[child];
    CHECK(s["tid"] == spawn["parent"]); // from the goroutine that ran the go statement
    CHECK(s["pid"] == f["pid"]);
    // ... inside the slice of the Handle call that spawned it.
    size_t inside = 0;
    for (const json &h : handles)
      if (h["tid"] == s["tid"] && h["ts"].get<double>() <= s["ts"].get<double>() &&
          s["ts"].get<double>() <= h["ts"].get<double>() + h["dur"].get<double>()) {
        CHECK(h["args"]["args"]["req"] == spawn["req"]);
        ++inside;
      }
    CHECK(inside == 1);
    CHECK(children.insert(child).second);
  }
}

TEST_CASE("call ids: every entry joins its own return, on the goroutine the program saw (amd64)") {
  e2e::require_bpf();
  check_call_ids("spawn");
}

TEST_CASE("call ids: every entry joins its own return, on the goroutine the program saw (386)") {
  e2e::require_bpf();
  check_call_ids("spawn_386");
}

TEST_CASE("call ids: --graph ends every line of a call with its id, the one JSON gives it") {
  e2e::require_bpf();
  constexpr int kRequests = 3, kSpawn = 2;
  Traced t = trace("spawn", {"--graph", "--no-summary"}, kRequests, kSpawn);
  INFO(t.out);
  // Work(req, k, 2) { Work(req, k, 1) { Work(req, k, 0) = ... } main.Work = ... } main.Work = ...
  std::regex open(R"(^ +[0-9.]+( *)main\.Work\(req=(\d+), k=(\d+), depth=(\d+)\) \{  #(\d+)$)");
  std::regex leaf(R"(^ +[0-9.]+( *)main\.Work\(req=(\d+), k=(\d+), depth=0\) = \(~r0=(\d+)\)  \S+  #(\d+)$)");
  std::regex close(R"(^ +[0-9.]+( *)\} main\.Work = \(~r0=(\d+)\)  \S+  #(\d+)$)");
  std::map<uint64_t, std::tuple<int, int, int>> opened; // id -> req, k, depth
  std::vector<uint64_t> stack;
  std::set<uint64_t> ids;
  size_t closed = 0, leaves = 0;
  std::istringstream in(t.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    INFO(line);
    if (std::regex_match(line, m, open)) {
      uint64_t id = std::stoull(m[5]);
      CHECK(ids.insert(id).second);
      opened[id] = {std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
      stack.push_back(id);
    } else if (std::regex_match(line, m, leaf)) {
      uint64_t id = std::stoull(m[5]);
      CHECK(ids.insert(id).second);
      int req = std::stoi(m[2]), k = std::stoi(m[3]);
      CHECK(std::stoi(m[4]) == req * 1000 + k * 10);
      ++leaves;
    } else if (std::regex_match(line, m, close)) {
      REQUIRE_FALSE(stack.empty());
      CHECK(std::stoull(m[3]) == stack.back()); // closes the call it opened, by id
      auto [req, k, depth] = opened[stack.back()];
      // Work(req, k, d) returns the sum over d' <= d of req*1000 + k*10 + d'.
      int want = 0;
      for (int d = 0; d <= depth; ++d)
        want += req * 1000 + k * 10 + d;
      CHECK(std::stoi(m[2]) == want);
      stack.pop_back();
      ++closed;
    }
  }
  CHECK(stack.empty());
  CHECK(leaves == size_t(kRequests * kSpawn));
  CHECK(closed == size_t(kRequests * kSpawn * 2));
}
