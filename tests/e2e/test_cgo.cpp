// End to end, for real: a cgo binary (external linking, C thread-locals). Go functions are traced
// with their values; and the TLS slot where ABI0 code finds g, which C thread-locals move, is what
// weave computes from PT_TLS and runtime.tlsg: the same offset the runtime's own ABI0-to-
// ABIInternal wrappers load g from (MOVQ FS:off, R14), read from the disassembly.
#include "harness.h"
#include "same_stack.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <unistd.h>
#include <filesystem>
#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>

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
Callbacks trace_callbacks(const std::string &mode, bool via_libc = false, const std::string &fixture = "cgo") {
  std::string dir = e2e::temp_dir("cgo-callback-" + mode + (via_libc ? "-libc" : "") + "-" + fixture);
  // A stripped binary's parameters are declared, as weave asks.
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Probed\n"
                                    << (fixture.find("stripped") == std::string::npos ? "    args: all\n"
                                                         : "    params: [{name: x, type: int64}]\n    args: all\n")
                                    << "    stack: 32\n"
                                    << "    stack_mode: " << mode << "\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(fixture), "-truth",
                          dir + "/truth.jsonl", "-callbacks", "2", via_libc ? "-via-libc" : "-via-libc=false"});
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

// LLVM's addr2line's frames for a return address in the fixture, innermost first: function, file
// and line from its DWARF, by an implementation other than the tracer's (libdw). (Not binutils'
// 2.40: it names the wrong file for cgo's wrappers, whose DWARF 5 line table switches files by
// #line; gdb agrees with LLVM and libdw there.) llvm comes with clang (scripts/install-deps.sh).
std::vector<json> addr2line(uint64_t return_address, const std::string &binary = "cgo") {
  char pc[32];
  std::snprintf(pc, sizeof pc, "%#llx", static_cast<unsigned long long>(return_address - 1));
  auto r = e2e::run({"llvm-addr2line", "-f", "-i", "-e", e2e::fixture(binary), pc});
  REQUIRE(r.status == 0);
  std::vector<json> frames;
  std::istringstream lines(r.out);
  std::string function, where;
  while (std::getline(lines, function) && std::getline(lines, where)) {
    size_t colon = where.rfind(':');
    REQUIRE(colon != std::string::npos);
    frames.push_back({{"function", function}, {"file", where.substr(0, colon)},
                      {"line", std::stoi(where.substr(colon + 1))}, {"module", e2e::fixture(binary)}});
  }
  REQUIRE(!frames.empty());
  return frames;
}


// The window's stack of the callback in fixture `name` (the cgo fixture, or its 386 build).
void check_window_callback(const std::string &name) {
  // From runtime.cgocallback the walk reads the thread's stack where cgocallback left it: crosscall2
  // and the C export wrapper goCallback, then c3, c2, c1, the cgo wrapper _cgo_..._Cfunc_c1 and
  // runtime.asmcgocall, by the C code's CFI (.eh_frame); then where the goroutine called into C
  // (cgocall, _Cfunc_c1, callC, main...), as the runtime's own unwinder does. So the stack is the
  // program's two views together: runtime.Callers in the callback up to cgocallback, c3's own
  // backtrace() (glibc, through the same CFI) for the C frames, and runtime.Callers again from the
  // cgo call down to runtime.goexit. Frame for frame, and c2 on with the very return addresses
  // backtrace() saw (c3's differs by the one call to record_c_stack on the same line).
  e2e::require_bpf();
  Callbacks c = trace_callbacks("window", false, name);
  const std::string module = e2e::fixture(name);
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(c.events[i]["args"]["x"] == c.truth[i]["args"]["x"]);
    e2e::check_cgo_callback_stack(c.events[i]["stack"], c.truth[i]["stack"], c.truth[i]["c_stack"], module,
                                  [&](uint64_t pc) { return addr2line(pc, name); });
    CHECK(!c.events[i].contains("stack_end"));
  }
}

TEST_CASE("a callback from C, stack_mode: window: Go, C and Go frames, as the program sees them") {
  check_window_callback("cgo");
}

// The 386 build of the cgo fixture (gcc -m32) where it can be built, traced by the same 64-bit
// tracer: BPF finds g through GS and copies both windows with 386's offsets; the tracer unwinds the
// C frames with libdw's i386 rules (esp 4, ebp 5, return address 8) from the binary's .eh_frame,
// and libc's from the 32-bit libc's.
bool have_cgo_386() {
  if (std::filesystem::exists(e2e::fixture("cgo_386")))
    return true;
  MESSAGE("skipped: no cgo_386 fixture (gcc -m32 needs Debian's gcc-multilib: scripts/install-deps.sh --tests)");
  return false;
}

TEST_CASE("386: a callback from C, stack_mode: window: Go, C and Go frames, as the program sees them") {
  if (have_cgo_386())
    check_window_callback("cgo_386");
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

void check_libc_callback(const std::string &name) {
  // qsort (libc.so) calls the fixture's comparator, which calls back into Go. The walk crosses to
  // the thread's stack, unwinds the comparator by the binary's CFI, then qsort's frames by libc's
  // own .eh_frame, found through the process's /proc/PID/maps (so the process is kept alive until
  // its events are out: -hold-exit), and on through c_sort to the goroutine's frames. Checked
  // against the comparator's own backtrace() (glibc, through the same CFI): the same return
  // addresses, libc's frames from libc's file, named where backtrace_symbols names them.
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("cgo-callback-libc-" + name);
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Probed\n    args: all\n    stack: 32\n"
                                    << "    stack_mode: window\n";
  const std::string module = e2e::fixture(name);
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", module, "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto trace = e2e::spawn({dir + "/out/tracer", "--format", "json", "--", module, "-truth", dir + "/truth.jsonl",
                           "-callbacks", "2", "-via-libc", "-hold-exit"},
                          dir);
  REQUIRE_MESSAGE(trace.wait_for_err("callbacks done"), trace.read_err());
  std::smatch pid;
  std::string err = trace.read_err();
  REQUIRE(std::regex_search(err, pid, std::regex(R"(callbacks done (\d+))")));
  // Both events printed (the tracer reads the ring as they come), then the program may exit.
  for (int i = 0; i < 1200; ++i) {
    size_t n = 0;
    for (auto &e : e2e::json_lines(trace.read_out()))
      n += e["function"] == "main.Probed";
    if (n == 2)
      break;
    usleep(100 * 1000);
  }
  kill(std::stoi(pid[1].str()), SIGUSR1);
  REQUIRE(trace.wait() == 0);
  std::vector<json> truth, events;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == "main.Probed")
      truth.push_back(t);
  for (auto &e : e2e::json_lines(trace.read_out()))
    if (e["function"] == "main.Probed")
      events.push_back(e);
  REQUIRE(truth.size() == 2);
  REQUIRE(events.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    const json &callers = truth[i]["stack"];
    const json &c_stack = truth[i]["c_stack"];
    const json &got = events[i]["stack"];
    REQUIRE(got.is_array());
    size_t cb = 0;
    while (cb < callers.size() && callers[cb]["function"] != "runtime.cgocallback")
      ++cb;
    REQUIRE(cb < callers.size());
    REQUIRE(c_stack.size() >= 4);
    // Go frames up to cgocallback, crosscall2, the export wrapper, then c_stack's frames, then the
    // goroutine's: the same length, and each frame what the views say.
    REQUIRE(got.size() == cb + 3 + c_stack.size() + (callers.size() - cb - 1));
    for (size_t f = 0; f <= cb; ++f) {
      CAPTURE(f);
      CHECK(got[f]["function"] == callers[f]["function"]);
      CHECK(got[f]["line"] == callers[f]["line"]);
    }
    CHECK(got[cb + 1]["function"] == "crosscall2");
    CHECK(got[cb + 2]["function"] == "goCallback");
    for (size_t f = 0; f < c_stack.size(); ++f) {
      CAPTURE(f);
      const json &want = c_stack[f];
      const json &frame = got[cb + 3 + f];
      CAPTURE(frame.dump());
      CAPTURE(want.dump());
      if (f > 0) // the comparator's return address differs by the one call to record_c_stack
        CHECK(e2e::stack_pc(frame["pc"]) == e2e::stack_pc(want["pc"]));
      std::string symbol = want["symbol"]; // "/lib/x86_64-linux-gnu/libc.so.6(qsort_r+0xb6) [0x...]"
      size_t open = symbol.find('('), plus = symbol.find('+', open);
      REQUIRE(open != std::string::npos);
      std::string file = symbol.substr(0, open);
      bool in_libc = file.find("libc.so") != std::string::npos;
      if (want.contains("go"))
        CHECK(frame["function"] == want["go"]["function"]);
      else if (plus != std::string::npos && plus > open + 1)
        CHECK(frame["function"] == symbol.substr(open + 1, plus - open - 1));
      else if (in_libc)
        CHECK(!frame.contains("function")); // a libc function with no exported name: none here either
      else
        CHECK(frame["function"] == addr2line(e2e::stack_pc(want["pc"]), name).back()["function"]);
      REQUIRE(frame.contains("module"));
      CHECK(std::filesystem::canonical(frame["module"].get<std::string>()) ==
            std::filesystem::canonical(in_libc ? file : module));
    }
    for (size_t f = cb + 1; f < callers.size(); ++f) {
      CAPTURE(f);
      const json &frame = got[cb + 2 + c_stack.size() + f - cb];
      CHECK(frame["function"] == callers[f]["function"]);
      CHECK(frame["line"] == callers[f]["line"]);
    }
    CHECK(!events[i].contains("stack_end"));
  }
}

TEST_CASE("a callback from C through libc, stack_mode: window: libc's frames by its CFI, as glibc saw them") {
  check_libc_callback("cgo");
}

TEST_CASE("386: a callback from C through libc, stack_mode: window: the 32-bit libc's frames by its CFI") {
  if (have_cgo_386())
    check_libc_callback("cgo_386");
}

void check_stripped_callback(const std::string &name) {
  // -ldflags=-s -w drops DWARF and .symtab, not .eh_frame (C's unwinder needs it) nor .dynsym. The
  // walk is the same; the C frames are named from .dynsym, as backtrace_symbols names them in the
  // program, with no file or line (Go 1.21 on exports no C functions there: bare PCs in both
  // views); m.g0.sched.sp's offsets come from the runtime.g layout table.
  e2e::require_bpf();
  Callbacks c = trace_callbacks("window", false, name);
  const std::string module = e2e::fixture(name);
  for (size_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    e2e::check_stripped_cgo_callback_stack(c.events[i]["stack"], c.truth[i]["stack"], c.truth[i]["c_stack"], module);
    CHECK(!c.events[i].contains("stack_end"));
  }
}

TEST_CASE("a callback from C in a stripped binary: C frames by .eh_frame, named by .dynsym as glibc names them") {
  check_stripped_callback("cgo_stripped");
}

TEST_CASE("386: a callback from C in a stripped binary: C frames by .eh_frame, named by .dynsym") {
  if (have_cgo_386())
    check_stripped_callback("cgo_386_stripped");
}
