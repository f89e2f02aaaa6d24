// End to end for the tracer's ways of finding its target: a command after `--`, `--pid`, every
// process running the binary, and the refusals (another build of the binary, no privileges).
#include "harness.h"

#include <doctest/doctest.h>

#include <csignal>
#include <set>

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
  CHECK(trace.wait(20000) == 0);
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
  CHECK(trace.wait(20000) == 0);
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
                     tracer, "--binary", e2e::fixture("fixture")}, 20000);
  CAPTURE(r.err);
  CHECK(r.status != 0);
  CHECK(r.err.find("cannot load BPF programs") != std::string::npos);
}
