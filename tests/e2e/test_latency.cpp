// End to end, for real: goroutine ids and call durations. Entries and returns pair by goroutine and
// distance from the goroutine's stack top, so concurrent goroutines, recursion that grows the stack,
// and calls that panic instead of returning all keep their durations right: on amd64 (g in R14) and
// on 386 (ABI0, g behind GS).
#include "harness.h"

#include <doctest/doctest.h>

#include <map>

using nlohmann::json;

namespace {

std::vector<json> trace_latency(const std::string &binary, const std::string &name, std::vector<std::string> args) {
  std::string dir = e2e::temp_dir(name + "-" + binary);
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/latency.yaml"), e2e::fixture(binary), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::vector<std::string> argv = {dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary),
                                   "-truth", "/dev/null", "-rounds", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto traced = e2e::run(argv, 120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  return e2e::json_lines(traced.out);
}

void check_sleepers(const std::string &binary) {
  e2e::require_bpf();
  auto events = trace_latency(binary, "latency-sleepers", {"-sleepers", "4"});
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
    CHECK(ns < static_cast<uint64_t>(ms) * 1000000 + 40000000); // sleeps overshoot, never by 40 ms here
  }
  CHECK(returns == 8);
  CHECK(entries_by_goid.size() == 4);
  for (auto &[goid, n] : entries_by_goid)
    CHECK(n == 2);
}

void check_panics(const std::string &binary) {
  e2e::require_bpf();
  auto events = trace_latency(binary, "latency-panic", {"-sleepers", "1"});
  int entries = 0, returns = 0;
  for (const auto &e : events) {
    if (e["function"] != "main.MayPanic")
      continue;
    if (e["kind"] == "entry") {
      ++entries;
      continue;
    }
    ++returns;
    CHECK(e["results"]["~r0"].get<int>() % 2 == 0);
    REQUIRE(e.contains("duration_ns"));
    CHECK(e["duration_ns"].get<uint64_t>() < 5000000); // not inflated by a stale entry
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
