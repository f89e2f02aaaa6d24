// End to end, for real: the Calls stage's call ids (runtime/calls.h). The spawn fixture starts a
// goroutine per request and per piece of work, nests calls on each, and records every call itself:
// its goroutine id (parsed from runtime.Stack's header), arguments and result. Every entry event's
// "call" must join exactly one return's, and the pair must be the program's own call: the same
// goroutine, and the result the program computed from those very arguments.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

using nlohmann::json;

namespace {

const char *kSpec = "probes:\n"
                    "  - function: main.Work\n"
                    "    capture: [req, k, depth]\n"
                    "    return: true\n"
                    "  - function: main.Handle\n"
                    "    capture: [req]\n"
                    "    return: true\n";

struct Traced {
  std::vector<json> events; // the tracer's JSON lines, or empty with --graph
  std::string out, err;
  std::vector<json> truth;  // the program's own records
};

Traced trace(const std::string &fixture, const std::vector<std::string> &options, int requests, int spawn) {
  std::string dir = e2e::temp_dir("calls-" + fixture);
  std::ofstream(dir + "/spec.yaml") << kSpec;
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

} // namespace

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
