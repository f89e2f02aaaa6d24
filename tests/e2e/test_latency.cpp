// End to end, for real: goroutine ids and call durations. Entries and returns pair by goroutine and
// distance from the goroutine's stack top, so concurrent goroutines, recursion that grows the stack,
// and calls that panic instead of returning all keep their durations right: on amd64 (g in R14) and
// on 386 (ABI0, g behind GS).
#include "harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

using nlohmann::json;

namespace {

// The tracer's events; `truth` gets what the fixture recorded (its own measurements around calls).
std::vector<json> trace_latency(const std::string &binary, const std::string &name, std::vector<std::string> args,
                                std::vector<json> *truth = nullptr) {
  std::string dir = e2e::temp_dir(name + "-" + binary);
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/latency.yaml"), e2e::fixture(binary), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::vector<std::string> argv = {dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary),
                                   "-truth", dir + "/truth.jsonl", "-rounds", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto traced = e2e::run(argv, 120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  if (truth)
    *truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  return e2e::json_lines(traced.out);
}

// What the fixture measured around each call of `function` (time.Now before, time.Since after),
// by the value of `key`: a traced duration lies inside that window, on a quiet machine or a busy one.
std::map<int, std::vector<uint64_t>> measured(const std::vector<json> &truth, const std::string &function,
                                              const std::string &key) {
  std::map<int, std::vector<uint64_t>> out;
  for (const auto &t : truth) {
    if (t["function"] != function)
      continue;
    const json &ns = t["args"]["measured_ns"];
    if (ns.is_array())
      for (const auto &n : ns)
        out[t["args"][key].get<int>()].push_back(n.get<uint64_t>());
    else
      out[t["args"][key].get<int>()].push_back(ns.get<uint64_t>());
  }
  for (auto &[k, list] : out)
    std::sort(list.begin(), list.end());
  return out;
}

void check_sleepers(const std::string &binary) {
  e2e::require_bpf();
  std::vector<json> truth;
  auto events = trace_latency(binary, "latency-sleepers", {"-sleepers", "4"}, &truth);
  std::map<int, std::vector<uint64_t>> outside = measured(truth, "main.Sleepy", "ms"), traced;
  std::map<uint64_t, int> entries_by_goid;
  int returns = 0;
  for (const auto &e : events) {
    if (e["function"] != "main.Sleepy")
      continue;
    uint64_t goid = e["goid"];
    CHECK(goid > 1); // not main: each sleeper has its own goroutine
    if (e["kind"] == "entry") {
      entries_by_goid[goid]++;
      continue;
    }
    ++returns;
    int ms = e["results"]["~r0"];
    REQUIRE(e.contains("duration_ns"));
    uint64_t ns = e["duration_ns"];
    CAPTURE(ms);
    CAPTURE(ns);
    CHECK(ns >= static_cast<uint64_t>(ms) * 1000000);
    traced[ms].push_back(ns);
  }
  CHECK(returns == 8);
  CHECK(entries_by_goid.size() == 4);
  for (auto &[goid, n] : entries_by_goid)
    CHECK(n == 2);
  // Each of a goroutine's two calls within what the program measured around one of them: with both
  // lists sorted, the k-th shortest traced call fits the k-th shortest measured one exactly when
  // some pairing of calls with measurements fits.
  REQUIRE(outside.size() == 4);
  for (auto &[ms, list] : traced) {
    std::sort(list.begin(), list.end());
    CAPTURE(ms);
    REQUIRE(outside[ms].size() == list.size());
    for (size_t k = 0; k < list.size(); ++k) {
      CAPTURE(list[k]);
      CAPTURE(outside[ms][k]);
      CHECK(list[k] <= outside[ms][k]);
    }
  }
}

void check_panics(const std::string &binary) {
  e2e::require_bpf();
  std::vector<json> truth;
  auto events = trace_latency(binary, "latency-panic", {"-sleepers", "1"}, &truth);
  std::map<int, std::vector<uint64_t>> outside = measured(truth, "main.MayPanic", "n");
  int entries = 0, returns = 0;
  for (const auto &e : events) {
    if (e["function"] != "main.MayPanic")
      continue;
    if (e["kind"] == "entry") {
      ++entries;
      continue;
    }
    ++returns;
    int n = e["results"]["~r0"];
    CHECK(n % 2 == 0);
    REQUIRE(e.contains("duration_ns"));
    // Not inflated by a stale entry (the panicked call before it): within what the program
    // measured around this very call.
    REQUIRE(outside[n].size() == 1);
    CAPTURE(n);
    CHECK(e["duration_ns"].get<uint64_t>() <= outside[n][0]);
  }
  CHECK(entries == 6);
  CHECK(returns == 3);
}

void check_deep(const std::string &binary) {
  e2e::require_bpf();
  const int depth = 2000;
  auto events = trace_latency(binary, "latency-deep", {"-deep", std::to_string(depth)});
  std::vector<uint64_t> durations; // returns come innermost first
  for (const auto &e : events)
    if (e["function"] == "main.Deep" && e["kind"] == "return") {
      REQUIRE(e.contains("duration_ns"));
      durations.push_back(e["duration_ns"]);
    }
  REQUIRE(durations.size() == depth + 1);
  // An outer call lasts at least as long as the call it made: durations never shrink going out.
  size_t shrinking = 0;
  for (size_t i = 1; i < durations.size(); ++i)
    shrinking += durations[i] < durations[i - 1];
  CHECK(shrinking == 0);
}

} // namespace

TEST_CASE("concurrent goroutines: each return carries its own call's duration") { check_sleepers("fixture"); }

TEST_CASE("a call that panics never returns, and the calls after it still pair correctly") {
  check_panics("fixture");
}

TEST_CASE("recursion that grows the stack: every level pairs with its own entry") { check_deep("fixture"); }

TEST_CASE("386: goroutine ids from GS, and durations for concurrent goroutines") { check_sleepers("fixture_386"); }

TEST_CASE("386: a call that panics never returns, and later calls still pair") { check_panics("fixture_386"); }

TEST_CASE("386: recursion that grows the stack pairs level by level") { check_deep("fixture_386"); }
