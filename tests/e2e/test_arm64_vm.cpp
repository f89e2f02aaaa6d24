// arm64 for real, under emulation: `weave build` on this amd64 host turns the arm64 Go fixture into an
// arm64 tracer (weave picks weave-tracer-arm64, the runtime cross-built against Debian's arm64 static
// libraries), and qemu-system-aarch64 (TCG, -M virt, cortex-a72) boots Debian's own arm64 kernel with
// an initramfs of busybox-static:arm64, the tracers and the fixture. Inside the VM the tracer runs the
// fixture; its events and the fixture's own record of what it passed come back over the serial console
// and are compared here value for value, as the amd64 tests do. That kernel (6.1) has no
// uprobe_multi, so the tracer attaches one perf-event uprobe per probe point there.
//
// Without qemu, the kernel and busybox (scripts/arm64-deps.sh) or weave-tracer-arm64, each case exits
// 77 (skipped) and says which is missing.
#include "arm64_vm.h"
#include "harness.h"
#include "spawn_expect.h"
#include "same_stack.h"
#include "when_expect.h"
#include "when_return_expect.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string tracer_runtime() { return std::string(WEAVE_BINARY_DIR) + "/weave-tracer-arm64"; }

[[noreturn]] void skip(const std::string &why) {
  std::cout << "SKIPPED: " << why << std::endl;
  std::exit(77);
}

void require_vm() {
  if (std::string why = arm64vm::missing(); !why.empty())
    skip(why);
  if (!fs::exists(tracer_runtime()))
    skip(tracer_runtime() + " was not built: it needs g++-aarch64-linux-gnu and the arm64 sysroot of "
         "scripts/arm64-deps.sh when CMake configures");
}

// One run of a tracer on the fixture inside the VM.
struct Job {
  std::string name;                      // [a-z0-9-]+, names its files
  std::string tracer;                    // host path of the weave-built tracer
  std::string fixture;                   // host path of the arm64 Go program it runs
  std::vector<std::string> fixture_args; // after `-truth /out/NAME.truth`
  std::vector<std::string> tracer_args = {}; // after `-v --format json`
  bool json = true;                          // false: no `--format json` (--graph's text)
  // When set, the job's shell commands instead of the run above: they run ./tracer-NAME and
  // ./fixture-NAME and write /out/NAME.out, .err, .truth and .rc themselves.
  std::string script = {};
};

struct JobResult {
  int status = -1;
  std::string out, err, truth;
  std::string fixture_rc; // a scripted job's /out/NAME.frc: the fixture's own exit status
  std::map<std::string, std::string> files; // every /out/NAME.X a scripted job left, by X
  double seconds = 0; // inside the VM, from /proc/uptime
};

struct VmRun {
  std::map<std::string, JobResult> jobs;
  double boot_seconds = 0; // guest uptime when init started
  double wall_seconds = 0; // qemu, host wall clock
};

const char *const kArm64Loader = "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1"; // libc6-arm64-cross

std::string quote(const std::string &s) { return "'" + s + "'"; }

// `files`: more guest path -> host file pairs (a cgo fixture's shared libraries).
VmRun run_in_vm(const std::string &dir, const std::vector<Job> &jobs,
                const std::vector<std::pair<std::string, std::string>> &files = {}) {
  arm64vm::Boot boot;
  boot.work_dir = dir;
  boot.files = files;
  for (const auto &job : jobs) {
    boot.files.emplace_back("w/tracer-" + job.name, job.tracer);
    boot.files.emplace_back("w/fixture-" + job.name, job.fixture);
    // A job that hangs is killed after 60 s and reported by its exit status; the others still run.
    std::string cmd = "timeout -s KILL 60 ./tracer-" + job.name + (job.json ? " -v --format json" : " -v");
    for (const auto &arg : job.tracer_args)
      cmd += " " + quote(arg);
    cmd += " -- ./fixture-" + job.name + " -truth /out/" + job.name + ".truth";
    for (const auto &arg : job.fixture_args)
      cmd += " " + quote(arg);
    std::string run = job.script.empty() ? cmd + " > /out/" + job.name + ".out 2> /out/" + job.name +
                                               ".err\necho $? > /out/" + job.name + ".rc\n"
                                         : job.script;
    boot.script += "t0=$(cut -d' ' -f1 /proc/uptime)\n" + run + "t1=$(cut -d' ' -f1 /proc/uptime)\n" +
                   "echo \"$t0 $t1\" > /out/" + job.name + ".time\n";
  }
  arm64vm::Result result = arm64vm::boot(boot);
  VmRun run;
  run.wall_seconds = result.wall_seconds;
  run.boot_seconds = result.boot_seconds;
  std::vector<std::string> messages;
  { // The console shows on failure only.
  INFO(result.error);
  REQUIRE(result.complete);
  for (const auto &job : jobs) {
    JobResult &r = run.jobs[job.name];
    REQUIRE(result.out.count(job.name + ".rc"));
    r.status = std::stoi(result.out[job.name + ".rc"]);
    r.out = result.out[job.name + ".out"];
    r.err = result.out[job.name + ".err"];
    r.truth = result.out[job.name + ".truth"];
    for (const auto &[file, contents] : result.out)
      if (file.rfind(job.name + ".", 0) == 0)
        r.files[file.substr(job.name.size() + 1)] = contents;
    r.fixture_rc = r.files["frc"];
    std::istringstream t(result.out[job.name + ".time"]);
    double t0 = 0, t1 = 0;
    t >> t0 >> t1;
    r.seconds = t1 - t0;
    // Debian 12's kernel is 6.1: no uprobe_multi (6.6), so each probe point is a perf-event uprobe.
    CHECK(r.err.find("perf-event link") != std::string::npos);
    CHECK(r.err.find("no uprobe_multi") != std::string::npos);
    messages.push_back(job.name + ": exit " + std::to_string(r.status) + ", " + std::to_string(r.seconds) +
                       " s in the VM");
  }
  }
  for (const auto &m : messages)
    MESSAGE(m);
  MESSAGE("VM: kernel up to init " << run.boot_seconds << " s; qemu wall " << run.wall_seconds << " s");
  return run;
}

// weave build for an arm64 binary on this amd64 host, with no --runtime: weave must pick the arm64
// runtime by itself. `spec`: relative to the source tree, or an absolute path.
std::string build_tracer(const std::string &dir, const std::string &spec, const std::string &binary) {
  auto built = e2e::run({e2e::weave(), "build", spec[0] == '/' ? spec : e2e::source(spec), binary, "-o", dir});
  REQUIRE_MESSAGE(built.status == 0, built.err);
  std::string tracer = dir + "/tracer";
  std::string head = e2e::read_file(tracer).substr(0, 20);
  REQUIRE(head.size() == 20);
  CHECK((static_cast<unsigned char>(head[18]) | static_cast<unsigned char>(head[19]) << 8) == 183); // EM_AARCH64
  return tracer;
}

std::vector<json> select(const std::vector<json> &events, const std::string &function, const std::string &kind) {
  std::vector<json> out;
  for (const auto &e : events)
    if (e["function"] == function && e["kind"] == kind)
      out.push_back(e);
  return out;
}

// As tests/e2e/test_trace.cpp: the fixture's invalid string, given as hex, as the tracer renders it.
std::string expected_bytes(const std::string &hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    int byte = std::stoi(hex.substr(i, 2), nullptr, 16);
    out += byte < 0x80 ? std::string(1, static_cast<char>(byte)) : "<0x" + hex.substr(i, 2) + ">";
  }
  return out;
}

// Every value of tests/e2e/fixture.yaml against the fixture's truth, as test_trace.cpp does on amd64.
size_t compare_values(const JobResult &r) {
  static const std::set<std::string> probed = {
      "main.Ints",    "main.SpillOver", "main.Strings",          "main.Pointers",
      "main.ByValue", "main.Nested",    "main.(*Server).Handle", "main.Server.Describe"};
  std::vector<json> events = e2e::json_lines(r.out), truth;
  for (auto &line : e2e::json_lines(r.truth))
    if (probed.count(line["function"]))
      truth.push_back(line);
  REQUIRE(truth.size() == 3 * 9);
  std::map<std::string, std::vector<json>> by_function;
  for (const auto &e : events) {
    CHECK(e["kind"] == "entry");
    CHECK(e["goid"].get<uint64_t>() == 1); // the main goroutine, g read from R28
    CHECK(e["ts_ns"].get<uint64_t>() > 0);
    by_function[e["function"]].push_back(e);
  }
  std::map<std::string, size_t> seen;
  size_t compared = 0;
  for (const auto &t : truth) {
    std::string function = t["function"];
    CAPTURE(function);
    auto &fevents = by_function[function];
    size_t index = seen[function]++;
    REQUIRE(index < fevents.size());
    const json &event = fevents[index];
    for (auto &[expr, expected] : t["args"].items()) {
      CAPTURE(expr);
      REQUIRE(event["args"].contains(expr));
      const json &actual = event["args"][expr];
      if (expected.is_null()) {
        CHECK(actual.is_null());
        REQUIRE(event.contains("faults"));
        CHECK(std::find(event["faults"].begin(), event["faults"].end(), expr) != event["faults"].end());
      } else if (expected.is_object() && expected.contains("hex")) {
        CHECK(actual.get<std::string>() == expected_bytes(expected["hex"]));
      } else if (expected.is_string() && expected.get<std::string>().size() > 64) {
        CHECK(actual.get<std::string>() == expected.get<std::string>().substr(0, 64));
        REQUIRE(event.contains("truncated"));
      } else {
        CHECK(actual == expected);
      }
      ++compared;
    }
  }
  for (auto &[function, fevents] : by_function)
    CHECK_MESSAGE(fevents.size() == seen[function], function);
  CHECK(events.size() == truth.size());
  return compared;
}

void check_values(const JobResult &r) {
  INFO(r.err);
  REQUIRE(r.status == 0);
  size_t compared = compare_values(r);
  MESSAGE("compared " << compared << " values");
  CHECK(compared == 3 * (12 + 4 + 3 + 3 + 5 + 6 + 5 + 7 + 3));
}

void check_returns(const JobResult &r) {
  {
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto events = e2e::json_lines(r.out);
    auto truth = e2e::json_lines(r.truth);
    std::vector<json> want_args, want_results;
    for (const auto &t : truth) {
      if (t["function"] == "main.Divmod")
        want_args.push_back(t["args"]);
      if (t["function"] == "main.Divmod:return")
        want_results.push_back(t["args"]);
    }
    auto entries = select(events, "main.Divmod", "entry");
    auto returns = select(events, "main.Divmod", "return");
    REQUIRE(want_args.size() == 3);
    REQUIRE(want_results.size() == 3);
    REQUIRE(entries.size() == 3);
    REQUIRE(returns.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(entries[i]["args"] == want_args[i]);
      CHECK(returns[i]["results"] == want_results[i]); // q, r and desc (a string) from R0, R1, R2/R3
      CHECK(entries[i]["goid"] == 1);
      CHECK(returns[i]["goid"] == 1);
      CHECK(returns[i]["ts_ns"].get<uint64_t>() >= entries[i]["ts_ns"].get<uint64_t>());
    }
    // SpillOver(a..h int, s string, y int): all ten in registers on arm64, the result in R0.
    auto spill_entries = select(events, "main.SpillOver", "entry");
    auto spill_returns = select(events, "main.SpillOver", "return");
    std::vector<json> spill_truth;
    for (const auto &t : truth)
      if (t["function"] == "main.SpillOver")
        spill_truth.push_back(t["args"]);
    REQUIRE(spill_truth.size() == 3);
    REQUIRE(spill_entries.size() == 3);
    REQUIRE(spill_returns.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      const json &args = spill_entries[i]["args"];
      CHECK(args.size() == 10);
      for (auto &[name, value] : spill_truth[i].items()) {
        CAPTURE(name);
        CHECK(args[name] == value);
      }
      // The fixture passes 2..7 for b..g and records only a, h, s and y.
      for (int k = 2; k <= 7; ++k)
        CHECK(args[std::string(1, static_cast<char>('a' + k - 1))] == k);
      int64_t sum = 1 + 2 + 3 + 4 + 5 + 6 + 7 + spill_truth[i]["h"].get<int64_t>() +
                    static_cast<int64_t>(spill_truth[i]["s"].get<std::string>().size()) +
                    spill_truth[i]["y"].get<int64_t>();
      CHECK(spill_returns[i]["results"]["~r0"] == sum);
    }
  }
}

const int kDepth = 1000; // ~2,000 hits at ~73 µs each under TCG

void check_deep(const JobResult &r) {
  const int depth = kDepth;
  {
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto events = e2e::json_lines(r.out);
    auto entries = select(events, "main.Deep", "entry");
    auto returns = select(events, "main.Deep", "return");
    CHECK(entries.size() == depth + 1);
    CHECK(returns.size() == depth + 1);
    bool in_order = entries.size() == depth + 1;
    for (size_t i = 0; in_order && i < entries.size(); ++i)
      in_order = entries[i]["args"]["n"] == depth - static_cast<int>(i);
    CHECK(in_order);
    uint64_t goid = entries.empty() ? 0 : entries[0]["goid"].get<uint64_t>();
    CHECK(goid > 1); // Deep runs on a goroutine of its own
    size_t other = 0;
    for (const auto &e : events)
      other += e["function"] == "main.Deep" && e["goid"] != goid;
    CHECK(other == 0);
    // Deep(n) returns the sum of byte(k) for k = 1..n: the innermost first, the outermost last.
    int64_t want = 0;
    for (int k = 1; k <= depth; ++k)
      want += static_cast<uint8_t>(k);
    if (!returns.empty()) {
      CHECK(returns.front()["results"]["~r0"] == 0);
      CHECK(returns.back()["results"]["~r0"] == want);
    }
  }
}

void check_sleepers(const JobResult &r) {
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::map<uint64_t, int> entries_by_goid, returns_by_goid;
  std::map<int, std::vector<uint64_t>> traced; // ms -> durations
  int returns = 0;
  for (const auto &e : e2e::json_lines(r.out)) {
    if (e["function"] != "main.Sleepy")
      continue;
    uint64_t goid = e["goid"];
    CHECK(goid > 1);
    if (e["kind"] == "entry") {
      entries_by_goid[goid]++;
      continue;
    }
    ++returns;
    returns_by_goid[goid]++;
    int ms = e["results"]["~r0"];
    REQUIRE(e.contains("duration_ns"));
    uint64_t ns = e["duration_ns"];
    CAPTURE(ms);
    CAPTURE(ns);
    CHECK(ns >= static_cast<uint64_t>(ms) * 1000000);
    traced[ms].push_back(ns);
  }
  // Each call within what the program measured around one of its goroutine's two calls (sorted,
  // the k-th shortest traced fits the k-th shortest measured exactly when some pairing fits): an
  // emulated CPU on a busy host oversleeps by any amount, the program's clock sees it too.
  std::map<int, std::vector<uint64_t>> outside;
  for (const auto &t : e2e::json_lines(r.truth))
    if (t["function"] == "main.Sleepy")
      for (const auto &n : t["args"]["measured_ns"])
        outside[t["args"]["ms"].get<int>()].push_back(n.get<uint64_t>());
  REQUIRE(outside.size() == 4);
  for (auto &[ms, list] : traced) {
    std::sort(list.begin(), list.end());
    std::sort(outside[ms].begin(), outside[ms].end());
    CAPTURE(ms);
    REQUIRE(outside[ms].size() == list.size());
    for (size_t k = 0; k < list.size(); ++k)
      CHECK(list[k] <= outside[ms][k]);
  }
  CHECK(returns == 8);
  CHECK(entries_by_goid.size() == 4); // four goroutines, four distinct ids
  CHECK(returns_by_goid == entries_by_goid);
  for (auto &[goid, n] : entries_by_goid)
    CHECK(n == 2);
}

void check_stacks(const JobResult &r) {
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::vector<json> truth, events;
  for (auto &t : e2e::json_lines(r.truth))
    if (t["function"] == "main.Leaf")
      truth.push_back(t["args"]);
  for (auto &e : e2e::json_lines(r.out))
    if (e["function"] == "main.Leaf")
      events.push_back(e);
  REQUIRE(truth.size() == 2);
  REQUIRE(events.size() == 2);
  size_t frames = 0;
  for (size_t i = 0; i < 2; ++i) {
    CHECK(events[i]["args"]["n"] == truth[i]["n"]);
    const json &want = truth[i]["stack"];
    const json &got = events[i]["stack"];
    INFO(got.dump());
    INFO(want.dump());
    REQUIRE(got.is_array());
    REQUIRE(got.size() >= 4);
    CHECK(got[0]["function"] == "main.inlineMe2");
    CHECK(got[0]["inlined"] == true);
    CHECK(got[1]["function"] == "main.inlineMe1");
    CHECK(got[1]["inlined"] == true);
    CHECK(got[2]["function"] == "main.CallChain");
    CHECK(got[2]["inlined"] == false);
    CHECK(got.size() == want.size()); // the whole stack, down to runtime.goexit
    size_t n = std::min(got.size(), want.size());
    for (size_t f = 0; f < n; ++f) {
      CAPTURE(f);
      CHECK(got[f]["function"] == want[f]["function"]);
      CHECK(got[f]["file"] == want[f]["file"]);
      CHECK(got[f]["line"] == want[f]["line"]);
    }
    frames += n;
  }
  MESSAGE(frames << " frames equal to runtime.CallersFrames");
}

// Entries (and returns, when the spec has them) of `function` against the fixture's truth lines of
// `function` (and `function:return`), every recorded expression.
void check_against_truth(const JobResult &r, const std::string &function, size_t calls) {
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::vector<json> want_args, want_results;
  for (auto &t : e2e::json_lines(r.truth)) {
    if (t["function"] == function)
      want_args.push_back(t["args"]);
    if (t["function"] == function + ":return")
      want_results.push_back(t["args"]);
  }
  auto events = e2e::json_lines(r.out);
  auto entries = select(events, function, "entry");
  auto returns = select(events, function, "return");
  REQUIRE(want_args.size() == calls);
  REQUIRE(entries.size() == calls);
  REQUIRE(returns.size() == want_results.size());
  size_t compared = 0;
  for (size_t i = 0; i < calls; ++i) {
    CAPTURE(i);
    for (auto &[expr, expected] : want_args[i].items()) {
      CAPTURE(expr);
      CHECK(e2e::map_pairs_sorted(entries[i]["args"][expr]) == e2e::map_pairs_sorted(expected)); // maps: sets
      ++compared;
    }
    if (i < want_results.size()) {
      CHECK(returns[i]["results"] == want_results[i]);
      compared += want_results[i].size();
    }
  }
  MESSAGE(function << ": compared " << compared << " values");
  CHECK(compared > 0);
}

// The stripped build (-ldflags=-s -w): no DWARF, parameters declared by tests/e2e/stripped.yaml,
// placed by the arm64 ABI model, the goroutine id's offset from the Go version table.
void check_stripped(const JobResult &r) {
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::vector<json> spill_truth, nested_truth, spill, spill_ret, nested;
  for (auto &t : e2e::json_lines(r.truth)) {
    if (t["function"] == "main.SpillOver")
      spill_truth.push_back(t["args"]);
    if (t["function"] == "main.Nested")
      nested_truth.push_back(t["args"]);
  }
  for (auto &e : e2e::json_lines(r.out)) {
    if (e["function"] == "main.SpillOver")
      (e["kind"] == "entry" ? spill : spill_ret).push_back(e);
    if (e["function"] == "main.Nested")
      nested.push_back(e["args"]);
  }
  REQUIRE(spill_truth.size() == 2);
  REQUIRE(nested_truth.size() == 2);
  REQUIRE(spill.size() == 2);
  REQUIRE(spill_ret.size() == 2);
  REQUIRE(nested.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(spill[i]["args"] == spill_truth[i]);
    CHECK(spill[i]["goid"] == 1);
    CHECK(spill_ret[i]["results"]["sum"] == 1 + 2 + 3 + 4 + 5 + 6 + 7 + (8 + static_cast<int>(i)) + 7 +
                                                (100 + static_cast<int>(i)));
    CHECK(nested[i]["r.Path"] == nested_truth[i]["r.Path"]);
    CHECK(nested[i]["r.Header.Port"] == nested_truth[i]["r.Header.Port"]);
    CHECK(nested[i]["r.Hdr.Host"] == nested_truth[i]["r.Hdr.Host"]);
  }
}

// The jobs of one fixture build: the tracers weave builds for it (picking weave-tracer-arm64 itself)
// and the runs the checks above read.
std::vector<Job> jobs_for(const std::string &dir, const std::string &fixture) {
  std::string values = build_tracer(dir + "/values", "tests/e2e/fixture.yaml", fixture);
  std::string returns = build_tracer(dir + "/returns", "tests/e2e/returns.yaml", fixture);
  std::string latency = build_tracer(dir + "/latency", "tests/e2e/latency.yaml", fixture);
  std::string stacks = build_tracer(dir + "/stacks", "tests/e2e/stacks.yaml", fixture);
  std::string types = build_tracer(dir + "/types", "tests/e2e/types.yaml", fixture);
  std::string interfaces = build_tracer(dir + "/interfaces", "tests/e2e/interfaces.yaml", fixture);
  std::string when = build_tracer(dir + "/when", "tests/e2e/when.yaml", fixture);
  return {{"values", values, fixture, {"-rounds", "3"}},
          {"when", when, fixture, {"-rounds", "8"}, {"--stats"}},
          {"types", types, fixture, {"-rounds", "3"}},
          {"interfaces", interfaces, fixture, {"-rounds", "3"}},
          {"divmod", returns, fixture, {"-rounds", "3"}},
          {"deep", returns, fixture, {"-rounds", "0", "-deep", std::to_string(kDepth)}},
          {"sleepers", latency, fixture, {"-rounds", "0", "-sleepers", "4"}},
          {"stacks", stacks, fixture, {"-rounds", "2"}}};
}

void check_all(VmRun &vm) {
  {
    INFO("job values");
    check_values(vm.jobs["values"]);
  }
  {
    INFO("job types"); // slices, an array, a map and a channel, floats and a complex128 behind pointers
    check_against_truth(vm.jobs["types"], "main.Collections", 3);
  }
  {
    INFO("job interfaces"); // dynamic types by name: type descriptors found in the arm64 binary
    check_against_truth(vm.jobs["interfaces"], "main.Check", 3);
  }
  {
    INFO("job when"); // conditions decided in BPF before the rest is read, records built on the stack
    const JobResult &r = vm.jobs["when"];
    INFO(r.err);
    REQUIRE(r.status == 0);
    when_expect::check(r.truth, r.out, r.err);
  }
  {
    INFO("job divmod");
    check_returns(vm.jobs["divmod"]);
  }
  {
    INFO("job deep");
    check_deep(vm.jobs["deep"]);
  }
  {
    INFO("job sleepers");
    check_sleepers(vm.jobs["sleepers"]);
  }
  {
    INFO("job stacks");
    check_stacks(vm.jobs["stacks"]);
  }
}

} // namespace

// One boot runs every job of a build (boots dominate under TCG); each check says which job it read.
// The pinned Go 1.19 build, or, run by the version matrix (tests/matrix), the row's toolchain's.
TEST_CASE("arm64 in qemu (the fixture and its stripped build): values, results at every RET, goroutine ids, "
          "durations, stacks") {
  require_vm();
  std::string version = e2e::matrix_version().empty() ? "1.19" : e2e::matrix_version();
  std::string dir = e2e::temp_dir("arm64-go" + version);
  std::vector<Job> jobs = jobs_for(dir, e2e::fixture("fixture_arm64"));
  // The same program stripped rides along in this boot: parameters declared in the spec, stacks
  // symbolized from .gopclntab alone.
  std::string stripped = e2e::fixture("fixture_arm64_stripped");
  MESSAGE("Go " << version << ": " << e2e::fixture("fixture_arm64") << ", " << stripped);
  std::ofstream(dir + "/stripped-stacks.yaml")
      << "probes:\n  - function: main.Leaf\n    params: [{name: n, type: int}]\n"
         "    results: [{name: r, type: int}]\n    capture: [n]\n    stack: 10\n";
  auto spec_built = e2e::run({e2e::weave(), "build", dir + "/stripped-stacks.yaml", stripped, "-o", dir + "/sstacks"});
  REQUIRE_MESSAGE(spec_built.status == 0, spec_built.err);
  jobs.push_back({"stripped", build_tracer(dir + "/stripped", "tests/e2e/stripped.yaml", stripped), stripped,
                  {"-rounds", "2"}});
  jobs.push_back({"stripped-stacks", dir + "/sstacks/tracer", stripped, {"-rounds", "2"}});
  // stack_mode: window: the stack copied and unwound by the tracer with .gopclntab's SP deltas,
  // from LR while Leaf has pushed nothing (its entry), then from the saved LR at each frame's SP.
  std::ofstream(dir + "/window-stacks.yaml")
      << "probes:\n  - function: main.Leaf\n    capture: [n]\n    stack: 10\n    stack_mode: window\n";
  auto window_built = e2e::run({e2e::weave(), "build", dir + "/window-stacks.yaml", e2e::fixture("fixture_arm64"),
                                "-o", dir + "/wstacks"});
  REQUIRE_MESSAGE(window_built.status == 0, window_built.err);
  jobs.push_back({"window-stacks", dir + "/wstacks/tracer", e2e::fixture("fixture_arm64"), {"-rounds", "2"}});
  VmRun vm = run_in_vm(dir, jobs);
  check_all(vm);
  {
    INFO("job stripped");
    check_stripped(vm.jobs["stripped"]);
  }
  {
    INFO("job stripped-stacks");
    check_stacks(vm.jobs["stripped-stacks"]);
  }
  {
    INFO("job window-stacks");
    check_stacks(vm.jobs["window-stacks"]);
  }
}

TEST_CASE("arm64 in qemu (Go 1.19 PIE): probes by file offset, type descriptors and stacks less the load bias") {
  require_vm();
  if (!fs::exists(kArm64Loader))
    skip(std::string(kArm64Loader) + " is missing (it comes with g++-aarch64-linux-gnu): a PIE cannot start");
  std::string dir = e2e::temp_dir("arm64-pie");
  std::string fixture = dir + "/fixture_arm64_pie";
  auto built = e2e::run({"env", "-C", e2e::source("tests/e2e/fixture"), "GOARCH=arm64", "GOOS=linux", "CGO_ENABLED=0",
                         "GOTOOLCHAIN=local", "GOPROXY=off", "GOCACHE=" WEAVE_GOCACHE, "GOFLAGS=", WEAVE_GO, "build", "-trimpath",
                         "-buildvcs=false", "-buildmode=pie", "-o", fixture, "."},
                        300000);
  REQUIRE_MESSAGE(built.status == 0, built.err);
  VmRun vm = run_in_vm(dir, jobs_for(dir, fixture));
  check_all(vm);
}

TEST_CASE("arm64: a float argument is refused naming its register as Go does, F0 (X0 is an integer register)") {
  std::string dir = e2e::temp_dir("arm64-float");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Floats\n    capture: [f, n]\n";
  auto r = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("fixture_arm64"), "-o", dir + "/out"});
  CHECK(r.status != 0);
  CHECK(r.err.find("float-in-register") != std::string::npos);
  CHECK(r.err.find("floating-point register F0") != std::string::npos);
  CHECK(r.err.find("X0") == std::string::npos);
  auto funcs = e2e::run({e2e::weave(), "funcs", e2e::fixture("fixture_arm64"), "main.Floats"});
  INFO(funcs.out << funcs.err);
  CHECK(funcs.out.find("F0") != std::string::npos);
  CHECK(funcs.out.find("X0") == std::string::npos);
}

TEST_CASE("weave build picks the runtime by the binary's architecture, and says how to get a missing one") {
  std::string dir = e2e::temp_dir("arm64-runtime-pick");
  // A weave alone in a directory has no runtime next to it.
  fs::copy_file(e2e::weave(), dir + "/weave");
  auto missing = e2e::run({dir + "/weave", "build", e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture_arm64"),
                           "-o", dir + "/out"});
  CHECK(missing.status != 0);
  CHECK(missing.err.find("runtime-missing") != std::string::npos);
  CHECK(missing.err.find(dir + "/weave-tracer-arm64") != std::string::npos);
  CHECK(missing.err.find("scripts/arm64-deps.sh") != std::string::npos);
  CHECK(!fs::exists(dir + "/out"));
  // An amd64 runtime named for an arm64 binary would never run where the binary runs: refused.
  auto wrong = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture_arm64"),
                         "-o", dir + "/out", "--runtime", std::string(WEAVE_BINARY_DIR) + "/weave-tracer"});
  CHECK(wrong.status != 0);
  CHECK(wrong.err.find("runtime-arch") != std::string::npos);
  CHECK(wrong.err.find("built for amd64") != std::string::npos);
  CHECK(!fs::exists(dir + "/out"));
  if (fs::exists(tracer_runtime())) {
    // And the other way round: the arm64 runtime for an amd64 binary.
    auto reverse = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"),
                             "-o", dir + "/out", "--runtime", tracer_runtime()});
    CHECK(reverse.status != 0);
    CHECK(reverse.err.find("built for arm64") != std::string::npos);
  }
}


namespace {

// llvm-addr2line's frames for a return address in `binary` (arm64 too), innermost first: function,
// file and line from its DWARF, by an implementation other than the tracer's (libdw).
std::vector<json> addr2line_arm64(const std::string &binary, uint64_t return_address, const std::string &module) {
  static std::map<uint64_t, std::vector<json>> seen;
  if (auto it = seen.find(return_address); it != seen.end())
    return it->second;
  char pc[32];
  std::snprintf(pc, sizeof pc, "%#llx", static_cast<unsigned long long>(return_address - 1));
  auto r = e2e::run({"llvm-addr2line", "-f", "-i", "-e", binary, pc});
  REQUIRE(r.status == 0);
  std::vector<json> frames;
  std::istringstream lines(r.out);
  std::string function, where;
  while (std::getline(lines, function) && std::getline(lines, where)) {
    size_t colon = where.rfind(':');
    REQUIRE(colon != std::string::npos);
    frames.push_back({{"function", function}, {"file", where.substr(0, colon)},
                      {"line", std::stoi(where.substr(colon + 1))}, {"module", module}});
  }
  REQUIRE(!frames.empty());
  seen[return_address] = frames;
  return frames;
}


// The average BPF run time --stats printed ("1 BPF program for 1 probe: 16 runs, 2412 ns/run").
long ns_per_run(const std::string &err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex(R"(: (\d+) runs, (\d+) ns/run)")))
    return -1;
  return std::stol(m[2].str());
}

} // namespace

TEST_CASE("arm64 in qemu (cgo): a callback from C, stack_mode: window: Go, C and Go frames as the program sees them") {
  // tests/e2e/cgo cross-built with cgo for arm64 (Go -> C c1 -> c2 -> c3, -O2 -fomit-frame-pointer,
  // -> a callback into main.Probed, `stack: 32`), run in the VM with the cross toolchain's libc and
  // libgcc_s (backtrace() loads it). From runtime.cgocallback the walk reads the thread's stack
  // where cgocallback left it (m.g0.sched.sp): crosscall2 (LR in its own save area, not at SP), the
  // export wrapper goCallback, c3, c2, c1 and the cgo wrapper by their CFI (.eh_frame, x30 the
  // return address column), runtime.asmcgocall; then the goroutine's frames from the cgo call.
  // Compared frame for frame, whole, with the program's two views: runtime.Callers in the callback
  // and c3's own backtrace() (glibc through libgcc's CFI unwinder), named by llvm-addr2line here.
  require_vm();
  const std::string libdir = "/usr/aarch64-linux-gnu/lib";
  for (const std::string file : {"libc.so.6", "libgcc_s.so.1"})
    if (!fs::exists(libdir + "/" + file) || !fs::exists(kArm64Loader))
      skip(libdir + "/" + file + " or the loader is missing (they come with g++-aarch64-linux-gnu): the cgo "
           "fixture cannot start");
  std::string dir = e2e::temp_dir("arm64-cgo");
  std::string fixture = dir + "/cgo_arm64";
  // The pinned Go, or in a matrix row that row's toolchain (its fixture directory links its go).
  const std::string go = e2e::matrix_version().empty() ? WEAVE_GO : e2e::fixture("go");
  MESSAGE("cgo fixture built with " << go);
  // And stripped (-s -w): no DWARF, so m.g0.sched.sp's offsets come from the runtime.g layout
  // table and the C frames are named from .dynsym.
  std::string stripped = dir + "/cgo_arm64_stripped";
  for (const auto &[out, flags] : {std::pair<std::string, std::string>{fixture, "-ldflags="},
                                   std::pair<std::string, std::string>{stripped, "-ldflags=-s -w"}}) {
    auto built = e2e::run({"env", "-C", e2e::source("tests/e2e/cgo"), "GOARCH=arm64", "GOOS=linux", "CGO_ENABLED=1",
                           "CC=aarch64-linux-gnu-gcc", "GOTOOLCHAIN=local", "GOPROXY=off", "GOCACHE=" WEAVE_GOCACHE,
                           "GOFLAGS=-mod=mod", go, "build", "-trimpath", "-buildvcs=false", flags, "-o", out, "."},
                          300000);
    REQUIRE_MESSAGE(built.status == 0, built.err);
  }
  auto spec = [&](const std::string &name, const std::string &stack, const std::string &binary = "") {
    std::ofstream(dir + "/" + name + ".yaml")
        << "probes:\n  - function: main.Probed\n"
        << (binary.empty() ? "" : "    params: [{name: x, type: int64}]\n") << "    args: all\n" << stack;
    return build_tracer(dir + "/" + name, dir + "/" + name + ".yaml", binary.empty() ? fixture : binary);
  };
  constexpr size_t calls = 16;
  std::vector<std::string> args = {"-callbacks", std::to_string(calls)};
  std::vector<Job> jobs = {{"cgo-window", spec("window", "    stack: 32\n    stack_mode: window\n"), fixture, args,
                            {"--stats"}},
                           {"cgo-fp", spec("fp", "    stack: 32\n    stack_mode: fp\n"), fixture, args, {"--stats"}},
                           {"cgo-none", spec("none", ""), fixture, args, {"--stats"}},
                           {"cgo-stripped", spec("stripped", "    stack: 32\n    stack_mode: window\n", stripped),
                            stripped, args}};
  VmRun vm = run_in_vm(dir, jobs,
                       {{"lib/libc.so.6", libdir + "/libc.so.6"}, {"lib/libgcc_s.so.1", libdir + "/libgcc_s.so.1"}});
  auto probed = [&](const JobResult &r, std::vector<json> &truth, std::vector<json> &events) {
    for (auto &t : e2e::json_lines(r.truth))
      if (t["function"] == "main.Probed")
        truth.push_back(t);
    for (auto &e : e2e::json_lines(r.out))
      if (e["function"] == "main.Probed")
        events.push_back(e);
    REQUIRE(truth.size() == calls);
    REQUIRE(events.size() == calls);
    for (size_t i = 0; i < truth.size(); ++i)
      CHECK(events[i]["args"]["x"] == truth[i]["args"]["x"]);
  };
  {
    INFO("job cgo-window");
    const JobResult &r = vm.jobs["cgo-window"];
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::vector<json> truth, events;
    probed(r, truth, events);
    size_t frames = 0;
    for (size_t i = 0; i < truth.size(); ++i) {
      CAPTURE(i);
      const json &callers = truth[i]["stack"];
      const json &c_stack = truth[i]["c_stack"];
      const json &got = events[i]["stack"];
      INFO(got.dump());
      INFO(c_stack.dump());
      REQUIRE(got.is_array());
      REQUIRE(!got.empty());
      // The tracer names the module by the path the VM ran it from.
      const std::string module = got[0].value("module", "");
      CHECK(module.find("fixture-cgo-window") != std::string::npos);
      e2e::check_cgo_callback_stack(got, callers, c_stack, module, [&](uint64_t pc) {
        return addr2line_arm64(fixture, pc, module);
      });
      CHECK(!events[i].contains("stack_end"));
      frames += got.size();
    }
    MESSAGE(frames << " frames equal to runtime.Callers + backtrace() in " << truth.size() << " events");
  }
  {
    // The frame-pointer walk, for its cost beside the window's: the callback's Go frames, the
    // program's own up to runtime.cgocallback, then crosscall2, whose R29 is C's (an ordinary
    // register at -O2): the chain ends there, says so, and nothing is invented past it.
    INFO("job cgo-fp");
    const JobResult &r = vm.jobs["cgo-fp"];
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::vector<json> truth, events;
    probed(r, truth, events);
    for (size_t i = 0; i < truth.size(); ++i) {
      CAPTURE(i);
      const json &callers = truth[i]["stack"];
      const json &got = events[i]["stack"];
      INFO(got.dump());
      REQUIRE(got.is_array());
      size_t cb = 0;
      while (cb < callers.size() && callers[cb]["function"] != "runtime.cgocallback")
        ++cb;
      REQUIRE(cb + 1 < callers.size());
      REQUIRE(got.size() == cb + 2);
      for (size_t f = 0; f <= cb; ++f) {
        CAPTURE(f);
        CHECK(got[f]["function"] == callers[f]["function"]);
        CHECK(got[f]["file"] == callers[f]["file"]);
        CHECK(got[f]["line"] == callers[f]["line"]);
      }
      CHECK(got[cb + 1]["function"] == "crosscall2");
      REQUIRE(events[i].contains("stack_end"));
      CHECK(events[i]["stack_end"]["reason"] == "stack switch");
      CHECK(events[i]["stack_end"]["function"] == "crosscall2");
    }
  }
  {
    // Stripped: the same walk; every frame named as the program names it, C frames as
    // backtrace_symbols does from .dynsym (Go 1.21 on exports no C functions there: a bare PC in
    // both views), and c2 on at backtrace()'s very return addresses.
    INFO("job cgo-stripped");
    const JobResult &r = vm.jobs["cgo-stripped"];
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::vector<json> truth, events;
    probed(r, truth, events);
    for (size_t i = 0; i < truth.size(); ++i) {
      CAPTURE(i);
      const json &callers = truth[i]["stack"];
      const json &c_stack = truth[i]["c_stack"];
      const json &got = events[i]["stack"];
      INFO(got.dump());
      INFO(c_stack.dump());
      REQUIRE(got.is_array());
      REQUIRE(!got.empty());
      e2e::check_stripped_cgo_callback_stack(got, callers, c_stack, got[0].value("module", ""));
      CHECK(!events[i].contains("stack_end"));
    }
  }
  {
    INFO("job cgo-none");
    const JobResult &r = vm.jobs["cgo-none"];
    INFO(r.err);
    REQUIRE(r.status == 0);
    std::vector<json> truth, events;
    probed(r, truth, events);
  }
  long window = ns_per_run(vm.jobs["cgo-window"].err), fp = ns_per_run(vm.jobs["cgo-fp"].err),
       none = ns_per_run(vm.jobs["cgo-none"].err);
  MESSAGE("BPF ns/run in the VM (TCG), " << calls << " callbacks: args only " << none << ", stack: 32 fp " << fp
                                         << ", window (8 KiB of each stack) " << window);
  CHECK(window > 0);
}

namespace {

// Goroutine ancestry on arm64 (tests/e2e/spawn, as test_calls.cpp traces it on amd64 and 386): the
// program records each goroutine it starts (its id from runtime.Stack's header, the goroutine that
// ran the go statement, known by construction, and the statement's line) and the calls on it;
// spawn_expect.h's checks compare the traces with that record.

// Where weave put its probe on goroutine creation (probes.json): on arm64, Go 1.19 and 1.20, at
// runtime.newproc.func1's BL of newproc1 and its BL of runqput, which the kernel simulates (no
// single-step), found here independently in the Go toolchain's own disassembly of the binary.
void check_spawn_points(const std::string &out_dir, const std::string &binary, const std::string &go) {
  json probes = json::parse(e2e::read_file(out_dir + "/probes.json"));
  std::string v = e2e::matrix_version();
  if (!v.empty() && std::stoi(v.substr(v.find('.') + 1)) >= 21) { // g.parentGoid: no probe of weave's own
    CHECK_FALSE(probes["ancestry"].contains("spawn"));
    return;
  }
  const json &spawn = probes["ancestry"]["spawn"];
  INFO(spawn.dump());
  CHECK(spawn["signature"].get<std::string>().find("; at runtime.newproc.func1's calls of it and of runtime.runqput") !=
        std::string::npos);
  auto dis = e2e::run({go, "tool", "objdump", "-s", "^runtime.newproc.func1$", binary});
  INFO(dis.out << dis.err);
  REQUIRE(dis.status == 0);
  // "  proc.go:4098	0x4d974		94000013	CALL runtime.newproc1(SB)": Go's name for BL is CALL.
  std::regex call(R"(\s(0x[0-9a-f]+)\s+[0-9a-f]{8}\s+CALL (runtime\.newproc1|runtime\.runqput)\(SB\))");
  std::map<std::string, std::vector<std::string>> calls;
  std::istringstream in(dis.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, call))
      calls[m[2]].push_back(m[1]);
  }
  REQUIRE(calls["runtime.newproc1"].size() == 1);
  REQUIRE(calls["runtime.runqput"].size() == 1);
  REQUIRE(spawn["attach"]["entry"].size() == 1);
  REQUIRE(spawn["attach"]["return"].size() == 1);
  CHECK(spawn["attach"]["entry"][0]["vaddr"] == calls["runtime.newproc1"][0]);
  CHECK(spawn["attach"]["return"][0]["vaddr"] == calls["runtime.runqput"][0]);
}

// A job's run of the spawn fixture: the tracer's exit, and the program's own record.
spawn_expect::SpawnTruth spawn_job_truth(const JobResult &r) {
  INFO(r.err);
  REQUIRE(r.status == 0);
  return spawn_expect::spawn_truth(e2e::json_lines(r.truth));
}

} // namespace

// Before Go 1.21 (no g.parentGoid) the parent comes from weave's own probe on goroutine creation;
// on arm64 it sits on runtime.newproc.func1's two BLs. The pinned Go 1.19 build, or the version
// matrix's go1.20.14 row's; and stripped. One boot.
TEST_CASE("arm64 in qemu (spawn): every event's created_by is the goroutine the program saw make it, one made "
          "before the tracer attached says so, and --graph nests it") {
  require_vm();
  std::string version = e2e::matrix_version().empty() ? "1.19" : e2e::matrix_version();
  std::string dir = e2e::temp_dir("arm64-spawn-go" + version);
  const std::string go = e2e::matrix_version().empty() ? WEAVE_GO : e2e::fixture("go");
  std::string fixture = e2e::fixture("spawn_arm64"), stripped = e2e::fixture("spawn_arm64_stripped");
  MESSAGE("Go " << version << ": " << fixture << ", " << stripped);
  std::ofstream(dir + "/spawn.yaml") << spawn_expect::kSpec;
  std::ofstream(dir + "/spawn-stripped.yaml") << spawn_expect::kSpecStripped;
  std::string tracer = build_tracer(dir + "/spawn", dir + "/spawn.yaml", fixture);
  std::string tracer_stripped = build_tracer(dir + "/spawn-stripped", dir + "/spawn-stripped.yaml", stripped);
  {
    INFO("the creation probe's points, with DWARF");
    check_spawn_points(dir + "/spawn", fixture, go);
  }
  {
    // Go's objdump needs the symbols; -s -w drops them and DWARF but moves no code.
    INFO("the creation probe's points, stripped");
    check_spawn_points(dir + "/spawn-stripped", fixture, go);
  }
  constexpr size_t kRequests = 5, kSpawn = 3, kEarly = 3, kEarlyRequests = 2, kEarlySpawn = 2;
  std::vector<std::string> args = {"-requests", std::to_string(kRequests), "-spawn", std::to_string(kSpawn)};
  // The early job: the fixture starts its early goroutines and says "ready", the tracer attaches
  // by --pid and says "weave: tracing", and SIGUSR1 lets the fixture go on. (The shell opens
  // /dev/null for a job it starts in the background; the initramfs has no /dev of its own.)
  std::string early =
      "[ -e /dev/null ] || { mkdir -p /dev; mount -t devtmpfs devtmpfs /dev || mknod -m 666 /dev/null c 1 3; }\n"
      "./fixture-early -truth /out/early.truth -early " + std::to_string(kEarly) + " -requests " +
      std::to_string(kEarlyRequests) + " -spawn " + std::to_string(kEarlySpawn) +
      " 2> /out/early.fixture-err &\n"
      "f=$!\n"
      "n=0; while ! grep -qs ready /out/early.fixture-err && [ $n -lt 120 ]; do sleep 1; n=$((n+1)); done\n"
      "timeout -s KILL 60 ./tracer-early -v --format json --no-summary --pid $f > /out/early.out 2> /out/early.err &\n"
      "t=$!\n"
      "n=0; while ! grep -qs 'weave: tracing' /out/early.err && [ $n -lt 120 ]; do sleep 1; n=$((n+1)); done\n"
      "kill -USR1 $f\n"
      "wait $f; echo $? > /out/early.frc\n"
      "wait $t; echo $? > /out/early.rc\n";
  std::vector<Job> jobs = {
      {"spawn", tracer, fixture, args, {"--no-summary"}},
      {"spawn-stripped", tracer_stripped, stripped, args, {"--no-summary"}},
      {"early", tracer, fixture, {}, {}, true, early},
      {"graph", tracer, fixture, {"-requests", "3", "-spawn", "2"}, {"--graph", "--no-summary"}, false}};
  VmRun vm = run_in_vm(dir, jobs);
  {
    INFO("job spawn");
    const JobResult &r = vm.jobs["spawn"];
    spawn_expect::check_created_by(e2e::json_lines(r.out), spawn_job_truth(r), kRequests, kSpawn);
  }
  {
    INFO("job spawn-stripped");
    const JobResult &r = vm.jobs["spawn-stripped"];
    spawn_expect::check_created_by(e2e::json_lines(r.out), spawn_job_truth(r), kRequests, kSpawn);
  }
  {
    INFO("job early");
    const JobResult &r = vm.jobs["early"];
    CHECK(r.fixture_rc == "0\n");
    spawn_expect::check_early(e2e::json_lines(r.out), spawn_job_truth(r), kEarly, kEarlyRequests, kEarlySpawn);
  }
  {
    INFO("job graph");
    const JobResult &r = vm.jobs["graph"];
    INFO(r.out);
    spawn_expect::check_graph(r.out, spawn_job_truth(r), 3, 2);
  }
}

// when_return on arm64 (tests/e2e/failing, as test_when_return.cpp traces it on amd64 and 386): the
// entry held in BPF until the return decides, the error's type word compared with nil from R1,
// results from registers; exactly the failing calls come out, each with its entry values, none of
// the nil guard's nil calls, && and || decided past faults, and --stats counting the rest.
TEST_CASE("arm64 in qemu (failing): when_return emits exactly the failing calls with their entry values, nil "
          "guards, && and || decide past faults") {
  require_vm();
  std::string dir = e2e::temp_dir("arm64-when-return");
  std::string fixture = e2e::fixture("failing_arm64");
  std::ofstream(dir + "/spec.yaml") << when_return_expect::kSpec;
  std::string tracer = build_tracer(dir + "/out", dir + "/spec.yaml", fixture);
  // The fixture prints its own record of every call on stdout; the events go to a file.
  Job job{"failing", tracer, fixture};
  job.script = "timeout -s KILL 60 ./tracer-failing -v --stats --format json -o /out/failing.events -- "
               "./fixture-failing -rounds 3 > /out/failing.truth 2> /out/failing.err\n"
               "echo $? > /out/failing.rc\n";
  VmRun vm = run_in_vm(dir, {job});
  const JobResult &r = vm.jobs["failing"];
  INFO(r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.files.count("events"));
  when_return_expect::check(r.truth, r.files.at("events"), r.err);
}
