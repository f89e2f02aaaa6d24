// End to end for the tracer's ways of finding its target: a command after `--`, `--pid`, every
// process running the binary, and the refusals (another build of the binary, no privileges).
#include "harness.h"

#include <doctest/doctest.h>

#include <csignal>
#include <map>
#include <set>
#include <sstream>

namespace {

std::string build(const std::string &dir) {
  auto r = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  return dir + "/out/tracer";
}

size_t count_function(const std::vector<nlohmann::json> &events, const std::string &function, int pid = 0) {
  size_t n = 0;
  for (const auto &e : events)
    if (e["function"] == function && (pid == 0 || e["pid"] == pid))
      ++n;
  return n;
}

} // namespace

TEST_CASE("--pid traces one running process and exits when it does") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("mode-pid");
  std::string tracer = build(dir);
  auto target = e2e::spawn({e2e::fixture("fixture"), "-wait-signal", "-rounds", "2"}, dir);
  REQUIRE(target.wait_for_err("ready"));
  const int target_pid = target.pid;
  auto trace = e2e::spawn({tracer, "--format", "json", "--pid", std::to_string(target_pid)}, dir);
  REQUIRE_MESSAGE(trace.wait_for_err("weave: tracing"), trace.read_err());
  kill(target_pid, SIGUSR1);
  CHECK(target.wait() == 0);
  CHECK(trace.wait() == 0);
  auto events = e2e::json_lines(trace.read_out());
  CHECK(count_function(events, "main.Ints", target_pid) == 2);
  CHECK(events.size() == 2 * 9); // nine calls a round
  for (const auto &e : events)
    CHECK(e["pid"] == target_pid);
}

TEST_CASE("without --pid or a command, every process running the binary is traced until Ctrl-C") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("mode-all");
  std::string tracer = build(dir);
  auto trace = e2e::spawn({tracer, "--format", "json", "--binary", e2e::fixture("fixture")}, dir);
  REQUIRE_MESSAGE(trace.wait_for_err("weave: tracing"), trace.read_err());
  auto first = e2e::run({e2e::fixture("fixture"), "-rounds", "1"});
  auto second = e2e::run({e2e::fixture("fixture"), "-rounds", "2"});
  REQUIRE(first.status == 0);
  REQUIRE(second.status == 0);
  kill(trace.pid, SIGINT);
  CHECK(trace.wait() == 0);
  auto events = e2e::json_lines(trace.read_out());
  std::set<int> pids;
  for (const auto &e : events)
    if (e["function"] == "main.Ints")
      pids.insert(e["pid"].get<int>());
  // Other tests may run the fixture at the same time: count at least our two processes' calls.
  CHECK(pids.size() >= 2);
  CHECK(count_function(events, "main.Ints") >= 3);
  CHECK(trace.read_err().find("events") != std::string::npos); // the exit summary
}

TEST_CASE("the tracer refuses a binary with another build id") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("mode-buildid");
  std::string tracer = build(dir);
  auto r = e2e::run({tracer, "--", e2e::fixture("hello")});
  CHECK(r.status == 2);
  CHECK(r.err.find("build id") != std::string::npos);
  CHECK(r.err.find("regenerate") != std::string::npos);
}

TEST_CASE("--version says what the tracer was built for") {
  std::string dir = e2e::temp_dir("mode-version");
  std::string tracer = build(dir);
  auto r = e2e::run({tracer, "--version"});
  CHECK(r.status == 0);
  auto manifest = nlohmann::json::parse(e2e::read_file(dir + "/out/probes.json"));
  CHECK(r.out.find(manifest["target"]["build_id"].get<std::string>()) != std::string::npos);
  CHECK(r.out.find("go1.19.8") != std::string::npos);
}

TEST_CASE("without privileges the tracer says it cannot load BPF") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("mode-unprivileged");
  std::string tracer = build(dir);
  auto r = e2e::run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                     tracer, "--binary", e2e::fixture("fixture")});
  CAPTURE(r.err);
  CHECK(r.status != 0);
  CHECK(r.err.find("cannot load BPF programs") != std::string::npos);
}

namespace {

// A tracer attached with --pid while main.Sleepy calls are in flight: with -hold, each of the 5
// sleeper goroutines makes its first Sleepy call and waits inside it ("held" says all 5 are there)
// until a second SIGUSR1, sent once the tracer is attached; then each makes its second call. So
// exactly the first call of every goroutine returns without an entry, whatever the machine's load,
// and every format says so. Returns the tracer's stdout.
constexpr size_t kSleepers = 5;

std::string trace_mid_call(const std::string &dir, const std::vector<std::string> &format) {
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/latency.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto target = e2e::spawn({e2e::fixture("fixture"), "-wait-signal", "-hold", "-rounds", "0", "-sleepers",
                            std::to_string(kSleepers)},
                           dir);
  REQUIRE(target.wait_for_err("ready"));
  kill(target.pid, SIGUSR1); // the sleepers start, and their first calls wait inside Sleepy
  REQUIRE_MESSAGE(target.wait_for_err("held"), target.read_err());
  std::vector<std::string> argv = {dir + "/out/tracer", "--pid", std::to_string(target.pid), "--no-summary"};
  argv.insert(argv.end(), format.begin(), format.end());
  auto trace = e2e::spawn(argv, dir);
  REQUIRE_MESSAGE(trace.wait_for_err("weave: tracing"), trace.read_err());
  kill(target.pid, SIGUSR1); // the held calls return, then the second calls are made and traced
  CHECK(target.wait() == 0);
  CHECK(trace.wait() == 0);
  return trace.read_out();
}

} // namespace

TEST_CASE("a return whose entry came before the tracer attached says so, in text and JSON") {
  e2e::require_bpf();
  // JSON: such a return has "entry_seen": false and no duration_ns; every other one has both an
  // entry and a duration. Each goroutine (goid) makes two calls one after the other, and the first
  // is cut by the attach.
  std::string json_out = trace_mid_call(e2e::temp_dir("mode-midcall-json"), {"--format", "json"});
  std::map<long long, int> entries, paired, unpaired;
  for (const auto &e : e2e::json_lines(json_out)) {
    if (e["function"] != "main.Sleepy")
      continue;
    long long goid = e["goid"].get<long long>();
    if (e["kind"] == "entry") {
      ++entries[goid];
      continue;
    }
    CAPTURE(e.dump());
    if (e.contains("duration_ns")) {
      CHECK_FALSE(e.contains("entry_seen"));
      CHECK(e["duration_ns"].get<long long>() >= e["results"]["~r0"].get<long long>() * 1000000);
      ++paired[goid];
    } else {
      REQUIRE(e.contains("entry_seen"));
      CHECK(e["entry_seen"] == false);
      ++unpaired[goid];
    }
  }
  // Every goroutine: its first call was under way at the attach, its second traced whole.
  CHECK(unpaired.size() == kSleepers);
  CHECK(entries.size() == kSleepers);
  for (auto [goid, n] : unpaired) {
    CAPTURE(goid);
    CHECK(n == 1);
    CHECK(entries[goid] == 1);
  }
  size_t whole = 0;
  for (auto [goid, n] : entries) {
    CAPTURE(goid);
    CHECK(n == 1);
    CHECK(paired[goid] == 1); // the call whose entry was seen returned with a duration
    whole += static_cast<size_t>(n);
  }
  MESSAGE(unpaired.size() << " returns without their entry, " << whole << " whole calls");

  // Text: the same marker the call tree uses, where the duration would be.
  std::string text = trace_mid_call(e2e::temp_dir("mode-midcall-text"), {});
  size_t marked = 0, returns = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\u2190 main.Sleepy(") == std::string::npos)
      continue;
    ++returns;
    CAPTURE(line);
    bool unseen = line.size() > 18 && line.substr(line.size() - 18) == "  (entry not seen)";
    marked += unseen;
    // Otherwise the line ends in a duration of at least 10ms ("10.1ms", "1.2s").
    if (!unseen)
      CHECK((line.substr(line.size() - 2) == "ms" || line.back() == 's'));
  }
  CHECK(marked == kSleepers);
  CHECK(returns == 2 * kSleepers);
}
