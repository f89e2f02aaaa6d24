// End to end, for real: min_duration shows only the calls that took at least that long, the entry
// just before its return (held in BPF until then), with the nested calls traced meanwhile before
// both; capture_at_return reads what the call left behind its pointer arguments; and the paths it
// cannot follow are refused with the reason. The fixture (tests/e2e/slow) prints what each call did.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>

using nlohmann::json;

namespace {

const char *kSpec = "probes:\n"
                    "  - function: main.Handle\n"
                    "    capture: [i, w.name]\n"
                    "    return: true\n"
                    "    min_duration: 10ms\n"
                    "    capture_at_return: [w.status, len(buf.b)]\n"
                    "  - function: main.Step\n"
                    "    capture: [n]\n"
                    "    return: true\n";

std::string build(const std::string &dir, const std::string &spec, const std::string &fixture = "slow") {
  std::ofstream(dir + "/spec.yaml") << spec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  return dir + "/out/tracer";
}

} // namespace

void check_slow_calls(const std::string &fixture) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir(fixture);
  std::string tracer = build(dir, kSpec, fixture);
  // 8 calls: the odd ones sleep 20 ms, the even ones return at once.
  auto traced = e2e::run({tracer, "--stats", "--format", "json", "-o", dir + "/events.jsonl", "--",
                          e2e::fixture(fixture), "-calls", "8", "-slow-ms", "20"},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(traced.out);
  REQUIRE(truth.size() == 8);
  std::vector<json> events = e2e::json_lines(e2e::read_file(dir + "/events.jsonl"));
  std::map<int64_t, json> by_i;
  for (const json &t : truth)
    by_i[t["i"].get<int64_t>()] = t;

  // A fast call is shown only when the program itself measured at least min_duration around it
  // (a busy machine can stretch one): what the tracer decides is held to the program's own clock.
  int handle_entries = 0, handle_returns = 0, steps = 0, step_returns = 0;
  std::set<int64_t> shown;
  for (size_t k = 0; k < events.size(); ++k) {
    const json &e = events[k];
    CAPTURE(e.dump());
    if (e["function"] == "main.Step") {
      (e["kind"] == "entry" ? steps : step_returns)++;
      continue;
    }
    REQUIRE(e["function"] == "main.Handle");
    if (e["kind"] == "return") {
      ++handle_returns;
      continue;
    }
    ++handle_entries;
    int64_t i = e["args"]["i"].get<int64_t>();
    const json &t = by_i.at(i);
    shown.insert(i);
    if (t["sleep_ms"] != 20) // only the slow calls, and fast ones the program saw take 10 ms
      CHECK(t["elapsed_ns"].get<uint64_t>() >= 10'000'000);
    CHECK(e["args"]["w.name"] == "w" + std::to_string(i));
    // The return follows its entry at once, with what the call left behind its pointers.
    REQUIRE(k + 1 < events.size());
    const json &r = events[k + 1];
    CAPTURE(r.dump());
    REQUIRE(r["function"] == "main.Handle");
    REQUIRE(r["kind"] == "return");
    CHECK(r["goid"] == e["goid"]);
    CHECK(r["results"]["w.status@return"] == t["status"]);
    CHECK(r["results"]["len(buf.b)@return"] == t["len"]);
    CHECK(r["results"]["~r0"] == t["result"]);
    uint64_t duration = r["duration_ns"].get<uint64_t>();
    CHECK(duration >= 10'000'000);
    CHECK(duration <= t["elapsed_ns"].get<uint64_t>());
    CHECK(r["ts_ns"].get<uint64_t>() - e["ts_ns"].get<uint64_t>() == duration);
    // The nested calls ran inside it and were emitted meanwhile: Step(i) and Step(i+100), entry
    // and return each, are the four events before it, and its entry's timestamp is before theirs.
    REQUIRE(k >= 4);
    std::vector<int64_t> nested;
    for (size_t j = k - 4; j < k; ++j) {
      CHECK(events[j]["function"] == "main.Step");
      CHECK(events[j]["ts_ns"].get<uint64_t>() > e["ts_ns"].get<uint64_t>());
      CHECK(events[j]["ts_ns"].get<uint64_t>() < r["ts_ns"].get<uint64_t>());
      if (events[j]["kind"] == "entry")
        nested.push_back(events[j]["args"]["n"].get<int64_t>());
    }
    CHECK(nested == std::vector<int64_t>{i, i + 100});
  }
  for (const json &t : truth)
    if (t["sleep_ms"] == 20)
      CHECK(shown.count(t["i"].get<int64_t>()) == 1); // every slow call
  CHECK(handle_entries >= 4);
  CHECK(handle_returns == handle_entries);
  CHECK(steps == 16); // every Step call, the fast Handle calls' included
  CHECK(step_returns == 16);

  // --stats: the fast calls are filtered, entry and return; nothing evicted or left in flight.
  CHECK(traced.err.find("stats do not add up") == std::string::npos);
  std::smatch m;
  std::string err = traced.err;
  for (const char *kind : {"entry", "return"}) {
    CAPTURE(kind);
    REQUIRE(std::regex_search(err, m, std::regex(std::string(R"(main\.Handle\s+)") + kind +
                                                 R"(\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+))")));
    CHECK(std::stoi(m[1]) == 8); // hits
    CHECK(std::stoi(m[2]) == handle_entries); // events: the calls shown
    CHECK(std::stoi(m[3]) == 0);              // lost
    CHECK(std::stoi(m[4]) == 8 - handle_entries); // filtered: the fast calls
  }
  CHECK(err.find("evicted") == std::string::npos);
  CHECK(err.find("still in flight") == std::string::npos);
}

TEST_CASE("min_duration: only the slow calls, entry then return, nested calls first, values at return") {
  check_slow_calls("slow");
}

// On 386 every argument is on the stack (ABI0): capture_at_return saves the pointer loaded from
// its stack slot, and g comes from thread-local storage for the pairing.
TEST_CASE("min_duration and capture_at_return on 386") {
  check_slow_calls("slow_386");
}

TEST_CASE("min_duration: --graph nests the calls made inside a held call under it") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("slow-graph");
  std::string tracer = build(dir, kSpec);
  auto traced = e2e::run({tracer, "--graph", "-o", dir + "/graph.txt", "--", e2e::fixture("slow"), "-calls", "4",
                          "-slow-ms", "20"},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::string graph = e2e::read_file(dir + "/graph.txt");
  INFO(graph);
  for (int i : {1, 3}) {
    CAPTURE(i);
    std::string n = std::to_string(i), n100 = std::to_string(i + 100), status = std::to_string(200 + i);
    std::regex tree(R"(\n +[0-9.]+ main\.Handle\(i=)" + n + R"([,)][^\n]*\{  #\d+\n +[0-9.]+   main\.Step\(n=)" + n +
                    R"(\) = [^\n]*\n +[0-9.]+   main\.Step\(n=)" + n100 + R"(\) = [^\n]*\n +[0-9.]+ \} main\.Handle = \([^\n]*w\.status@return=)" +
                    status + R"([,)][^\n]*ms  #\d+\n)");
    CHECK(std::regex_search(graph, tree));
  }
  // The fast calls are not shown (unless the program itself measured 10 ms around one: a busy
  // machine); their nested calls stand alone.
  for (const json &t : e2e::json_lines(traced.out)) {
    if (t["sleep_ms"] == 20 || t["elapsed_ns"].get<uint64_t>() >= 10'000'000)
      continue;
    std::string i = std::to_string(t["i"].get<int64_t>());
    CHECK(graph.find("main.Handle(i=" + i) == std::string::npos);
    CHECK(std::regex_search(graph, std::regex(R"(\n +[0-9.]+ main\.Step\(n=)" + i + R"(\) = )")));
  }
}

TEST_CASE("capture_at_return: a path with no pointer to follow is refused, saying why and where") {
  std::string dir = e2e::temp_dir("slow-refused");
  struct Case {
    std::string expr, why;
  };
  for (const Case &c : {Case{"i", "i is read from the argument itself (i: int in RCX"},
                        Case{"opts.Level", "opts.Level is read from the argument itself (opts.Level: int in RSI"},
                        Case{"w", "w is read from the argument itself (w: *main.Writer in RAX"}}) {
    CAPTURE(c.expr);
    std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Handle\n    return: true\n"
                                         "    capture_at_return: [w.status, " + c.expr + "]\n";
    auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("slow"), "-o", dir + "/out"});
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find("spec.yaml:4:35: error[no-pointer-at-return]: capture_at_return: " + c.expr +
                     " has no pointer to follow: " + c.why) != std::string::npos);
    CHECK(r.err.find("the call could not have changed the caller's copy") != std::string::npos);
  }
  // Without return: true there is no return to read at: said where the key is.
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Handle\n    min_duration: 5ms\n";
  auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("slow"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("spec.yaml:3:19: error[spec-schema]: min_duration needs return: true") != std::string::npos);
}

TEST_CASE("min_duration: a held entry that never returns is counted: evicted when replaced, held at exit") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("slow-evicted");
  std::string tracer = build(dir, kSpec);
  // Call 2 panics out of Handle (its caller recovers), so its entry stays in the map until call 3,
  // made from the same goroutine at the same depth, replaces it; with -hang another goroutine is
  // still in Handle when the program exits.
  auto traced = e2e::run({tracer, "--stats", "--format", "json", "-o", dir + "/events.jsonl", "--",
                          e2e::fixture("slow"), "-calls", "8", "-slow-ms", "20", "-panic-at", "2", "-hang"},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(traced.out);
  REQUIRE(truth.size() == 9);
  std::vector<int64_t> shown, want = {1, 3, 5, 7};
  for (const json &e : e2e::json_lines(e2e::read_file(dir + "/events.jsonl")))
    if (e["function"] == "main.Handle" && e["kind"] == "entry")
      shown.push_back(e["args"]["i"].get<int64_t>());
  CHECK(shown == want);
  std::string err = traced.err;
  std::smatch m;
  // entry: 9 hits = 4 events + 3 filtered (calls 0, 4, 6) + 1 evicted (call 2) + 1 held (the hang)
  REQUIRE(std::regex_search(err, m, std::regex(R"(main\.Handle\s+entry\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+))")));
  CHECK(m[1] == "9");
  CHECK(m[2] == "4");
  CHECK(m[3] == "0");
  CHECK(m[4] == "3");
  CHECK(m[5] == "1");
  CHECK(m[6] == "1");
  // return: 7 hits (call 2 and the hang never return) = 4 events + 3 filtered
  REQUIRE(std::regex_search(err, m, std::regex(R"(main\.Handle\s+return\s+\d+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+0\s+0\s)")));
  CHECK(m[1] == "7");
  CHECK(m[2] == "4");
  CHECK(m[4] == "3");
  CHECK(err.find("stats do not add up") == std::string::npos);
  CHECK(err.find("min_duration: 1 call evicted from the map of calls in flight") != std::string::npos);
  CHECK(err.find("min_duration: 1 call still in flight at exit") != std::string::npos);
}

TEST_CASE("capture_at_return without min_duration: every call's return, with what it left behind") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("slow-at-return");
  std::string tracer = build(dir, "probes:\n"
                                  "  - function: main.Handle\n"
                                  "    capture: [i]\n"
                                  "    return: true\n"
                                  "    capture_at_return: [w.status, len(buf.b), w.name]\n");
  auto traced = e2e::run({tracer, "--format", "json", "-o", dir + "/events.jsonl", "--", e2e::fixture("slow"),
                          "-calls", "6", "-slow-ms", "1"},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(traced.out);
  REQUIRE(truth.size() == 6);
  std::vector<json> events = e2e::json_lines(e2e::read_file(dir + "/events.jsonl"));
  REQUIRE(events.size() == 12);
  for (size_t k = 0; k < 6; ++k) {
    const json &e = events[2 * k], &r = events[2 * k + 1];
    CAPTURE(r.dump());
    CHECK(e["kind"] == "entry");
    CHECK(e["args"]["i"] == truth[k]["i"]);
    REQUIRE(r["kind"] == "return");
    CHECK(r["results"]["w.status@return"] == truth[k]["status"]);
    CHECK(r["results"]["len(buf.b)@return"] == truth[k]["len"]);
    CHECK(r["results"]["w.name@return"] == "w" + std::to_string(k));
    CHECK(r["duration_ns"].get<uint64_t>() > 0);
    CHECK(!r.contains("faults"));
  }
}
