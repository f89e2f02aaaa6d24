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

TEST_CASE("ring_size: the spec's size, --ring-size over it, and the knobs named when events are lost") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("ring-size");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Strings\n"
                                       "    capture: [s, long]\n"
                                       "options: {string_max: 1000, ring_size: 131072}\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto spec_size = e2e::run({dir + "/out/tracer", "-v", "-o", "/dev/null", "--", e2e::fixture("fixture"), "-truth",
                             "/dev/null", "-rounds", "1"});
  INFO(spec_size.err);
  REQUIRE(spec_size.status == 0);
  CHECK(spec_size.err.find("ring buffer: 128 KiB") != std::string::npos);
  // 4 KiB holds a dozen of these records (sent as the bytes they use, ~300; 2 KiB at most): hundreds
  // of calls between two drains (every 5 ms) lose some, on
  // any machine but one where the tracer drains faster than the calls come; either way the
  // summary adds up, and names the knobs exactly when something was lost.
  const int rounds = 300;
  auto tiny = e2e::run({dir + "/out/tracer", "-v", "--ring-size", "4K", "--stats", "-o", "/dev/null", "--",
                        e2e::fixture("fixture"), "-truth", "/dev/null", "-rounds", std::to_string(rounds)});
  INFO(tiny.err);
  REQUIRE(tiny.status == 0);
  CHECK(tiny.err.find("ring buffer: 4 KiB") != std::string::npos);
  CHECK(tiny.err.find("stats do not add up") == std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(tiny.err, m, std::regex(R"(main\.Strings \(entry\): (\d+) events?, (\d+) lost)")));
  uint64_t events = std::stoull(m[1]), lost = std::stoull(m[2]);
  CHECK(events + lost == 2 * rounds);
  bool hinted = tiny.err.find("to lose fewer: a larger ring buffer (now 4 KiB: --ring-size or options.ring_size), "
                              "smaller records (the largest losing probe's is") != std::string::npos;
  CHECK(hinted == (lost > 0));
  // Refused: a size the kernel cannot have, in the spec and on the command line.
  std::ofstream(dir + "/bad.yaml") << "probes:\n  - function: main.Strings\noptions: {ring_size: 100000}\n";
  auto bad = e2e::run({e2e::weave(), dir + "/bad.yaml", e2e::fixture("fixture"), "-o", dir + "/bad"});
  CHECK(bad.status == 1);
  CHECK(bad.err.find("error[spec-schema]") != std::string::npos);
  CHECK(bad.err.find("bad.yaml:3:22") != std::string::npos);
  CHECK(bad.err.find("not a power of two") != std::string::npos);
  auto flag = e2e::run({dir + "/out/tracer", "--ring-size", "3M", "--", "/bin/true"});
  CHECK(flag.status != 0);
  CHECK(flag.err.find("power of two") != std::string::npos);
}

TEST_CASE("records as long as their data: a record larger than the whole ring arrives as the bytes it uses") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("ring-short");
  // Two strings of up to 4,000 bytes: an 8 KiB record, which a 4 KiB ring could never reserve.
  // Sent as the bytes used (the fixed part and the strings' ~150 bytes), the 6 calls' records
  // fit in it all at once, drained or not: every call is an event, each string as the program
  // passed it.
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Strings\n"
                                       "    capture: [s, long]\n"
                                       "options: {string_max: 4000}\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  REQUIRE(manifest["probes"][0]["event_size"].get<int>() > 8000);
  auto traced = e2e::run({dir + "/out/tracer", "--ring-size", "4K", "--stats", "--format", "json", "-o",
                          dir + "/events.jsonl", "--", e2e::fixture("fixture"), "-truth", dir + "/truth.jsonl",
                          "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  CHECK(traced.err.find("main.Strings (entry): 6 events, 0 lost") != std::string::npos);
  CHECK(traced.err.find("stats do not add up") == std::string::npos);
  std::vector<json> truth;
  for (const json &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == "main.Strings")
      truth.push_back(t["args"]);
  std::vector<json> events = e2e::json_lines(e2e::read_file(dir + "/events.jsonl"));
  REQUIRE(truth.size() == 6);
  REQUIRE(events.size() == truth.size());
  for (size_t i = 0; i < events.size(); ++i) {
    CAPTURE(i);
    INFO(events[i].dump());
    CHECK(events[i]["args"]["long"] == truth[i]["long"]);
    if (truth[i]["s"].is_string()) // else bytes that are not UTF-8 (test_trace compares those)
      CHECK(events[i]["args"]["s"] == truth[i]["s"]);
    else
      CHECK(events[i]["args"]["s"].get<std::string>().rfind("bad<0xff><0xfe>", 0) == 0);
  }
}

TEST_CASE("records that wrap past the ring's end: each one that arrives is the program's, byte for byte") {
  e2e::require_bpf();
  // Only the calls whose `long` is over 2,100 bytes (rounds 201..379): records of 2.2 to 4 KiB, each
  // more than half the ring. The ring then holds one at a time, and of any two records read one
  // after the other at least one has its data wrap past the ring's end (the first ends past the
  // middle, or wraps itself), so the tracer joins at least every other record: a reader that joined
  // them wrongly shows as a string that differs from the one the program recorded. Events the full
  // ring refused are counted as lost; the ones that arrive must be exact and in call order.
  // (Generated probes submit without wakeups, so this is the timer's drain; test_runtime_bpf runs
  // the wakeup's.)
  const int rounds = 380, kept = 179;
  std::string dir = e2e::temp_dir("ring-wrap");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Strings\n"
                                       "    capture: [s, long]\n"
                                       "    when: 'len(long) > 2100'\n"
                                       "options: {string_max: 4000}\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "-v", "--ring-size", "4K", "--stats", "--format", "json", "-o",
                          dir + "/events.jsonl", "--", e2e::fixture("fixture"), "-truth", dir + "/truth.jsonl",
                          "-rounds", std::to_string(rounds)});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  CHECK(traced.err.find("stats do not add up") == std::string::npos);
  CHECK(traced.err.find("no kernel could have written") == std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(traced.err, m, std::regex(R"(main\.Strings \(entry\): (\d+) events?, (\d+) lost)")));
  uint64_t counted = std::stoull(m[1]), lost = std::stoull(m[2]);
  CHECK(counted + lost == kept);
  REQUIRE(std::regex_search(traced.err, m, std::regex(R"(ring buffer: (\d+) records? wrapped past its end)")));
  uint64_t wrapped = std::stoull(m[1]);

  std::vector<json> truth;
  for (const json &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == "main.Strings" && t["args"]["long"].get<std::string>().size() > 2100)
      truth.push_back(t["args"]);
  REQUIRE(truth.size() == kept);
  std::vector<json> events = e2e::json_lines(e2e::read_file(dir + "/events.jsonl"));
  CHECK(events.size() == counted);
  CHECK(wrapped >= events.size() / 2);
  size_t next = 0; // events arrive in call order: each matches a later truth line than the last
  for (size_t i = 0; i < events.size(); ++i) {
    CAPTURE(i);
    const json &args = events[i]["args"];
    while (next < truth.size() && truth[next]["s"] != args["s"])
      ++next;
    REQUIRE(next < truth.size()); // else a string no call passed
    CHECK(args["long"] == truth[next]["long"]);
    CHECK(args["len(long)"] == truth[next]["long"].get<std::string>().size());
    ++next;
  }
  MESSAGE(events.size() << " events (" << wrapped << " wrapped), " << lost << " lost");
}
