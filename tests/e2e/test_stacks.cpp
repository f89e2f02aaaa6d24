// End to end, for real: the stack captured at a probe, symbolized by the tracer, lists the same
// frames (inlined ones included, with their files and lines) that the traced program itself gets
// from runtime.Callers + runtime.CallersFrames at that call; on the stripped build too.
#include "harness.h"
#include "same_stack.h"

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <unistd.h>

using nlohmann::json;

namespace {

// `mode`: the probe's stack_mode ("" for the architecture's default: fp on amd64, window on 386).
void check_stacks(const std::string &binary, const std::string &mode = "") {
  std::string dir = e2e::temp_dir("stacks-" + binary + (mode.empty() ? "" : "-" + mode));
  // The stripped builds have no DWARF: Leaf's parameter is declared.
  std::string spec = e2e::source("tests/e2e/stacks.yaml");
  bool stripped = binary.find("stripped") != std::string::npos;
  if (stripped || !mode.empty()) {
    spec = dir + "/spec.yaml";
    std::ofstream(spec) << "probes:\n  - function: main.Leaf\n"
                        << (stripped ? "    params: [{name: n, type: int}]\n"
                                       "    results: [{name: r, type: int}]\n"
                                     : "")
                        << "    capture: [n]\n    stack: 10\n"
                        << (mode.empty() ? "" : "    stack_mode: " + mode + "\n");
  }
  auto built = e2e::run({e2e::weave(), spec, e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "2"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth, events;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == "main.Leaf")
      truth.push_back(t["args"]);
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.Leaf")
      events.push_back(e);
  REQUIRE(truth.size() == 2);
  REQUIRE(events.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(events[i]["args"]["n"] == truth[i]["n"]);
    const json &want = truth[i]["stack"];
    const json &got = events[i]["stack"];
    REQUIRE(got.is_array());
    REQUIRE(got.size() >= 4);
    // inlineMe2 and inlineMe1 are inlined into CallChain, which main.main calls.
    CHECK(got[0]["function"] == "main.inlineMe2");
    CHECK(got[0]["inlined"] == true);
    CHECK(got[1]["function"] == "main.inlineMe1");
    CHECK(got[1]["inlined"] == true);
    CHECK(got[2]["function"] == "main.CallChain");
    CHECK(got[2]["inlined"] == false);
    // The whole stack, down to runtime.goexit: a walk that stops early or invents a frame fails.
    e2e::check_same_stack(got, want, e2e::fixture(binary));
    size_t n = std::min(got.size(), want.size());
    for (size_t f = 0; f < n; ++f) {
      CAPTURE(f);
      // The return address: an inlined frame shares its caller's.
      REQUIRE(got[f]["pc"].is_string());
      if (got[f]["inlined"] == true && f + 1 < got.size())
        CHECK(got[f]["pc"] == got[f + 1]["pc"]);
    }
    // A complete stack says nothing of where it ended.
    CHECK(!events[i].contains("stack_end"));
    MESSAGE(binary << " " << mode << ": " << n << " frames equal to runtime.CallersFrames, " << want.size() << " there");
  }
}

} // namespace

TEST_CASE("symbolized stacks match runtime.CallersFrames, inlined frames included") {
  e2e::require_bpf();
  check_stacks("fixture");
}

TEST_CASE("symbolized stacks on the stripped build (no symbols, no DWARF)") {
  e2e::require_bpf();
  check_stacks("fixture_stripped");
}

TEST_CASE("symbolized stacks in a PIE: the load bias comes with every event") {
  e2e::require_bpf();
  check_stacks("fixture_pie");
}

// stack_mode: window: the tracer unwinds a copy of the stack with .gopclntab's SP-delta tables.
TEST_CASE("window stacks on amd64 match runtime.CallersFrames") {
  e2e::require_bpf();
  check_stacks("fixture", "window");
}

TEST_CASE("window stacks in a PIE: the unwinder takes the load bias") {
  e2e::require_bpf();
  check_stacks("fixture_pie", "window");
}

// 386 keeps no frame pointers: the window is its default, and the only way.
TEST_CASE("stacks on 386 match runtime.CallersFrames (window, the default there)") {
  e2e::require_bpf();
  check_stacks("fixture_386");
}

TEST_CASE("stacks on the stripped 386 build") {
  e2e::require_bpf();
  check_stacks("fixture_386_stripped");
}

TEST_CASE("stack_mode: fp on 386 is refused, with the way that works") {
  std::string dir = e2e::temp_dir("stacks-386-fp");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Leaf\n    stack: 10\n    stack_mode: fp\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture_386"), "-o", dir + "/out"});
  CHECK(built.status != 0);
  CHECK(built.err.find("[unsupported-stack]") != std::string::npos);
  CHECK(built.err.find("stack_mode: window") != std::string::npos);
}

// A window smaller than the stack: the frames it holds, each equal to the program's own, then a
// note of where it stopped; never a frame made up from the bytes past the copy.
TEST_CASE("a window shorter than the stack says it is truncated, and invents nothing") {
  e2e::require_bpf();
  for (std::string binary : {"fixture", "fixture_386"}) {
    CAPTURE(binary);
    std::string dir = e2e::temp_dir("stacks-small-" + binary);
    std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Leaf\n    capture: [n]\n    stack: 10\n"
                                         "    stack_bytes: 256\n";
    auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(binary), "-o", dir + "/out"});
    INFO(built.err);
    REQUIRE(built.status == 0);
    auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                            dir + "/truth.jsonl", "-rounds", "1"});
    INFO(traced.err);
    REQUIRE(traced.status == 0);
    json want, got;
    for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
      if (t["function"] == "main.Leaf")
        want = t["args"]["stack"];
    for (auto &e : e2e::json_lines(traced.out))
      if (e["function"] == "main.Leaf")
        got = e;
    REQUIRE(want.is_array());
    REQUIRE(got.is_object());
    // Leaf's own frame and its callers' take more than 256 bytes on either architecture.
    REQUIRE(got.contains("stack_end"));
    CHECK(got["stack_end"]["reason"] == "truncated");
    CHECK(got["stack_end"]["window_bytes"] == 256);
    const json &frames = got["stack"];
    CHECK(frames.size() < want.size());
    for (size_t f = 0; f < frames.size() && f < want.size(); ++f) {
      CAPTURE(f);
      CHECK(frames[f]["function"] == want[f]["function"]);
      CHECK(frames[f]["line"] == want[f]["line"]);
    }
    MESSAGE(binary << ": " << frames.size() << " of " << want.size() << " frames in 256 bytes");
  }
}

// runtime.newproc1 runs on g0, reached through runtime.systemstack, which switches stacks: the
// first window holds g0's stack, and a second one the goroutine's, copied from where systemstack
// left it (m.curg.sched). So the walk crosses the switch as the runtime's own traceback does, at
// runtime.systemstack_switch, and goes on through runtime.newproc to the function with the go
// statement, whose return address is the very callerpc the runtime passes newproc1 (captured as
// an argument: the runtime's own record of the call), and down to the goroutine's first frame.
// While the runtime starts, newproc1 runs on g0 already (systemstack calls it in place) and the
// stack is whole, down to runtime.rt0_go.
TEST_CASE("a window walk on g0 crosses systemstack to the goroutine's frames") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("stacks-g0");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: runtime.newproc1\n    capture: [callerpc]\n"
                                    << "    stack: 16\n    stack_mode: window\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("fixture"), "-truth",
                          "/dev/null", "-rounds", "1"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  size_t crossed = 0, whole = 0;
  for (auto &e : e2e::json_lines(traced.out)) {
    if (e["function"] != "runtime.newproc1")
      continue;
    const json &frames = e["stack"];
    REQUIRE(frames.size() >= 2);
    CAPTURE(e.dump());
    CHECK(frames[0]["function"] == "runtime.newproc.func1");
    CHECK(!e.contains("stack_end"));
    size_t at = 0;
    while (at < frames.size() && frames[at]["function"] != "runtime.systemstack")
      ++at;
    if (at == frames.size()) {
      CHECK(frames.back()["function"] == "runtime.rt0_go");
      ++whole;
      continue;
    }
    REQUIRE(at + 3 < frames.size());
    CHECK(frames[at + 1]["function"] == "runtime.systemstack_switch");
    CHECK(frames[at + 2]["function"] == "runtime.newproc");
    // The go statement's caller: the runtime's callerpc, exactly.
    uint64_t callerpc = e["args"]["callerpc"].get<uint64_t>();
    CHECK(std::stoull(frames[at + 3]["pc"].get<std::string>(), nullptr, 16) == callerpc);
    CHECK(frames.back()["function"] == "runtime.goexit");
    ++crossed;
  }
  CHECK(crossed > 0);
  MESSAGE(crossed << " stacks cross the switch, " << whole << " whole on g0");
}

TEST_CASE("a process whose binary was deleted after it started: arguments and whole stacks named") {
  // A redeploy removes the file a running service was started from; `--pid` must still read the
  // program the process runs (/proc/PID/exe), not whatever is, or is not, at the path now.
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("stacks-deleted");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/stacks.yaml"), e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::string copy = dir + "/fixture";
  REQUIRE(e2e::run({"cp", e2e::fixture("fixture"), copy}).status == 0);
  auto target = e2e::spawn({copy, "-wait-signal", "-rounds", "2", "-truth", dir + "/truth.jsonl"}, dir);
  REQUIRE(target.wait_for_err("ready"));
  REQUIRE(unlink(copy.c_str()) == 0);
  REQUIRE(e2e::read_file("/proc/" + std::to_string(target.pid) + "/cmdline").rfind(copy, 0) == 0);
  auto trace = e2e::spawn({dir + "/out/tracer", "--format", "json", "--pid", std::to_string(target.pid)}, dir);
  REQUIRE_MESSAGE(trace.wait_for_err("weave: tracing"), trace.read_err());
  kill(target.pid, SIGUSR1);
  CHECK(target.wait() == 0);
  REQUIRE(trace.wait() == 0);
  std::vector<json> truth, events;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == "main.Leaf")
      truth.push_back(t);
  for (auto &e : e2e::json_lines(trace.read_out()))
    if (e["function"] == "main.Leaf")
      events.push_back(e);
  REQUIRE(truth.size() == 2);
  REQUIRE(events.size() == truth.size());
  for (size_t i = 0; i < events.size(); ++i) {
    CAPTURE(i);
    CHECK(events[i]["args"]["n"] == truth[i]["args"]["n"]);
    const json &want = truth[i]["args"]["stack"];
    const json &got = events[i]["stack"];
    REQUIRE(want.size() >= 4); // main.Leaf's callers down to runtime.goexit
    e2e::check_same_stack(got, want, copy + " (deleted)");
    CHECK(!events[i].contains("stack_end"));
  }
}

TEST_CASE("text output lists one frame per line, inlined ones marked") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("stacks-text");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/stacks.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--", e2e::fixture("fixture"), "-truth", "/dev/null", "-rounds", "1"});
  REQUIRE(traced.status == 0);
  CHECK(traced.out.find("    main.inlineMe2 (weave.test/fixture/main.go:") != std::string::npos);
  CHECK(traced.out.find(") [inlined]\n    main.inlineMe1 (") != std::string::npos);
  CHECK(traced.out.find("    main.CallChain (weave.test/fixture/main.go:") != std::string::npos);
}
