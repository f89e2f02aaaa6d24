// End to end, for real: --folded writes the entries' stacks in the folded format flame graph tools
// read. Each line must be a stack the traced program itself saw (runtime.Callers and
// runtime.CallersFrames at the call, recorded by the fixture), outermost frame first, the probed
// function last, inlined frames marked "_[i]"; weighted by the number of calls, or by the
// nanoseconds the paired returns report.
#include "harness.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using nlohmann::json;

namespace {

std::map<std::string, uint64_t> read_folded(const std::string &path) {
  std::map<std::string, uint64_t> lines;
  std::istringstream in(e2e::read_file(path));
  for (std::string line; std::getline(in, line);) {
    size_t space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    CHECK(line.find(' ') == space); // frames have no spaces: one field, then the weight
    lines[line.substr(0, space)] += std::stoull(line.substr(space + 1));
  }
  return lines;
}

} // namespace

TEST_CASE("--folded: the program's own stacks, outermost first, weighted by calls and by time") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("folded");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Leaf\n    capture: [n]\n    stack: 10\n"
                                       "    return: true\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  for (const char *weight : {"calls", "time"}) {
    CAPTURE(weight);
    std::string folded = dir + "/" + weight + ".folded";
    auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--folded", folded, "--folded-weight", weight,
                            "--", e2e::fixture("fixture"), "-truth", dir + "/truth.jsonl", "-rounds", "3"});
    INFO(traced.err);
    REQUIRE(traced.status == 0);
    // The stacks the program recorded, cut to the 10 frames the probe captures.
    std::map<std::string, uint64_t> want_calls;
    for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
      if (t["function"] != "main.Leaf")
        continue;
      const json &stack = t["args"]["stack"];
      std::string path;
      for (size_t i = std::min<size_t>(stack.size(), 10); i-- > 0;)
        path += stack[i]["function"].get<std::string>() + ";";
      ++want_calls[path + "main.Leaf"];
    }
    REQUIRE(want_calls.size() >= 1);
    uint64_t durations = 0;
    for (auto &e : e2e::json_lines(traced.out))
      if (e["function"] == "main.Leaf" && e["kind"] == "return")
        durations += e["duration_ns"].get<uint64_t>();
    std::map<std::string, uint64_t> got_marked = read_folded(folded), got;
    size_t inlined = 0;
    for (auto &[path, w] : got_marked) {
      std::string plain = path;
      for (size_t at; (at = plain.find("_[i]")) != std::string::npos;) {
        plain.erase(at, 4);
        ++inlined;
      }
      got[plain] += w;
    }
    CHECK(inlined >= 2); // inlineMe2 and inlineMe1, inlined into CallChain
    REQUIRE(got.size() == want_calls.size());
    uint64_t total = 0;
    for (auto &[path, calls] : want_calls) {
      CAPTURE(path);
      REQUIRE(got.count(path) == 1);
      if (std::string(weight) == "calls")
        CHECK(got[path] == calls);
      total += got[path];
    }
    if (std::string(weight) == "time")
      CHECK(total == durations); // every paired return's nanoseconds, on the stack of its entry
    else
      CHECK(total == 3);
  }
}

TEST_CASE("--folded: an unwritable file stops the tracer before the program runs, as --perfetto does") {
  // It was found only at exit: the program ran traced to its end and its own exit status was lost.
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("folded-error");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/stacks.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--folded", dir + "/no/such/dir/x.folded", "--",
                          e2e::fixture("fixture"), "-truth", dir + "/truth.jsonl", "-rounds", "1"});
  INFO(traced.err);
  CHECK(traced.status == 2); // a setup error: nothing traced
  CHECK(traced.err.find("--folded: cannot write " + dir + "/no/such/dir/x.folded") != std::string::npos);
  CHECK(traced.out.find("main.Leaf") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/truth.jsonl")); // the program never started
}
