// End to end, for real: a cgo binary (external linking, C thread-locals). Go functions are traced
// with their values; and the TLS slot where ABI0 code finds g, which C thread-locals move, is what
// weave computes from PT_TLS and runtime.tlsg: the same offset the runtime's own ABI0-to-
// ABIInternal wrappers load g from (MOVQ FS:off, R14), read from the disassembly.
#include "harness.h"
#include "same_stack.h"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>

using nlohmann::json;

TEST_CASE("cgo binary: values traced, and g's TLS offset matches the runtime's own code") {
  std::string dir = e2e::temp_dir("cgo");
  auto plan = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/cgo.yaml"), e2e::fixture("cgo"), "--dump", "plan"});
  INFO(plan.err);
  REQUIRE(plan.status == 0);
  std::smatch m;
  REQUIRE(std::regex_search(plan.out, m, std::regex(R"(g in ABI0 code at FS-(0x[0-9a-f]+))")));
  long weave_offset = -std::stol(m[1].str(), nullptr, 16);
  // The runtime's ABI0 wrappers reload g into R14 from TLS: that displacement is ground truth.
  std::vector<std::string> argv = e2e::objdump();
  argv.insert(argv.end(), {"-s", "^runtime.goexit1.abi0$", e2e::fixture("cgo")});
  auto objdump = e2e::run(argv);
  REQUIRE(objdump.status == 0);
  std::smatch d;
  REQUIRE(std::regex_search(objdump.out, d, std::regex(R"(MOVQ FS:(0x[0-9a-f]+), R14)")));
  long runtime_offset = static_cast<long>(static_cast<int32_t>(std::stoul(d[1].str(), nullptr, 16)));
  MESSAGE("g at FS" << weave_offset << " (weave) vs FS" << runtime_offset << " (runtime.goexit1.abi0)");
  CHECK(weave_offset == runtime_offset);
  CHECK(weave_offset != -8); // the C thread-locals did move it

  e2e::require_bpf();
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/cgo.yaml"), e2e::fixture("cgo"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("cgo"), "-truth",
                          dir + "/truth.jsonl"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth, entries, returns;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    truth.push_back(t["args"]);
  for (auto &e : e2e::json_lines(traced.out))
    (e["kind"] == "entry" ? entries : returns).push_back(e);
  REQUIRE(truth.size() == 3);
  REQUIRE(entries.size() == 3);
  REQUIRE(returns.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(entries[i]["args"] == truth[i]);
    CHECK(entries[i]["goid"] == 1);
    CHECK(returns[i].contains("duration_ns"));
  }
}

namespace {

struct Callbacks {
  std::vector<json> truth, events;
};

// The fixture calls C twice (c1 -> c2 -> c3, built -O2 -fomit-frame-pointer), which calls back into
// main.Probed; traced with `stack: 32` in the given stack_mode.
Callbacks trace_callbacks(const std::string &mode) {
  std::string dir = e2e::temp_dir("cgo-callback-" + mode);
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Probed\n    args: all\n    stack: 32\n"
                                    << "    stack_mode: " << mode << "\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("cgo"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("cgo"), "-truth",
                          dir + "/truth.jsonl", "-callbacks", "2"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  Callbacks c;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == "main.Probed")
      c.truth.push_back(t);
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.Probed")
      c.events.push_back(e);
  REQUIRE(c.truth.size() == 2);
  REQUIRE(c.events.size() == 2);
  return c;
}

} // namespace

TEST_CASE("a callback from C, stack_mode: window: the whole stack as runtime.Callers sees it") {
  // From runtime.cgocallback the walk goes on where the goroutine called into C (cgocall,
  // _Cfunc_c1, callC, main...), as the runtime's own unwinder does; the ABI wrapper it leaves out
  // is left out too. Every frame, down to runtime.goexit, equals the program's own list.
  e2e::require_bpf();
  Callbacks c = trace_callbacks("window");
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(c.events[i]["args"]["x"] == c.truth[i]["args"]["x"]);
    const json &want = c.truth[i]["stack"];
    const json &got = c.events[i]["stack"];
    REQUIRE(want.size() >= 8);
    e2e::check_same_stack(got, want, e2e::fixture("cgo"));
    CHECK(!c.events[i].contains("stack_end"));
    bool below_c = false;
    for (const auto &f : got)
      below_c = below_c || f["function"] == "main.callC";
    CHECK(below_c);
  }
}

TEST_CASE("a callback from C, stack_mode: fp: the walk ends at the first C frame and says so") {
  // The frame-pointer walk follows the thread's own stack into C, where %rbp is any register: the
  // Go frames up to it are right, the one return address into C is real, and nothing after it is
  // shown, nor invented.
  e2e::require_bpf();
  Callbacks c = trace_callbacks("fp");
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    const json &want = c.truth[i]["stack"];
    const json &got = c.events[i]["stack"];
    REQUIRE(got.is_array());
    REQUIRE(got.size() >= 2);
    // The Go frames on the callback's side are the program's own, up to runtime.cgocallback.
    size_t go = 0;
    while (go < got.size() && go < want.size() && got[go].contains("function") &&
           got[go]["function"] == want[go]["function"] && want[go]["function"] != "runtime.systemstack_switch")
      ++go;
    CHECK(want[go - 1]["function"] == "runtime.cgocallback");
    // Then crosscall2 (the assembly C calls Go through, which runtime.Callers does not list) and
    // the return address into C: the last frame, a bare PC.
    REQUIRE(go + 2 == got.size());
    CHECK(got[go]["function"] == "crosscall2");
    CHECK(!got[go + 1].contains("function"));
    REQUIRE(c.events[i].contains("stack_end"));
    CHECK(c.events[i]["stack_end"]["reason"] == "no .gopclntab entry");
    CHECK(c.events[i]["stack_end"]["function"] == got[go + 1]["pc"]);
  }
}
