// End to end, for real: results read at every RET (never with uretprobes), exactly one entry event
// per call while a recursive call grows its goroutine's stack, and `args: all`.
#include "harness.h"

#include <doctest/doctest.h>

#include <map>

using nlohmann::json;

namespace {

struct Run {
  std::vector<json> events;
  std::vector<json> truth;
  std::string manifest;
};

Run trace(const std::string &name, std::vector<std::string> fixture_args,
          const std::string &binary = "fixture") {
  std::string dir = e2e::temp_dir(name + "-" + binary);
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/returns.yaml"), e2e::fixture(binary), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::vector<std::string> argv = {dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary),
                                   "-truth", dir + "/truth.jsonl"};
  argv.insert(argv.end(), fixture_args.begin(), fixture_args.end());
  auto traced = e2e::run(argv, 120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0); // the traced program never crashes
  return {e2e::json_lines(traced.out), e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")),
          e2e::read_file(dir + "/out/probes.json")};
}

std::vector<json> select(const std::vector<json> &events, const std::string &function, const std::string &kind) {
  std::vector<json> out;
  for (const auto &e : events)
    if (e["function"] == function && e["kind"] == kind)
      out.push_back(e);
  return out;
}

} // namespace

void check_divmod(const std::string &binary) {
  Run run = trace("returns", {"-rounds", "3"}, binary);
  auto entries = select(run.events, "main.Divmod", "entry");
  auto returns = select(run.events, "main.Divmod", "return");
  std::vector<json> want_args, want_results;
  for (const auto &t : run.truth) {
    if (t["function"] == "main.Divmod")
      want_args.push_back(t["args"]);
    if (t["function"] == "main.Divmod:return")
      want_results.push_back(t["args"]);
  }
  REQUIRE(want_args.size() == 3);
  REQUIRE(entries.size() == 3);
  REQUIRE(returns.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(entries[i]["args"] == want_args[i]);
    CHECK(returns[i]["results"] == want_results[i]);
    if (binary == "fixture")
      CHECK(returns[i]["goid"] == entries[i]["goid"]);
    CHECK(returns[i]["ts_ns"].get<uint64_t>() >= entries[i]["ts_ns"].get<uint64_t>());
  }
  // The return probes sit on RET instructions found by decoding the function.
  auto manifest = json::parse(run.manifest);
  size_t ret_points = 0;
  for (const auto &p : manifest["probes"])
    if (p["function"] == "main.Divmod" && p["kind"] == "return")
      ret_points = p["attach"].size();
  CHECK(ret_points >= 1);
}

TEST_CASE("results are read at every RET and match what the function returned: amd64 registers") {
  e2e::require_bpf();
  check_divmod("fixture");
}

TEST_CASE("results are read at every RET and match what the function returned: 386 stack") {
  e2e::require_bpf();
  check_divmod("fixture_386");
}

TEST_CASE("args: all captures every parameter, and results come back in registers and on the stack") {
  e2e::require_bpf();
  Run run = trace("args-all", {"-rounds", "2"});
  auto entries = select(run.events, "main.SpillOver", "entry");
  auto returns = select(run.events, "main.SpillOver", "return");
  REQUIRE(entries.size() == 2);
  REQUIRE(returns.size() == 2);
  for (size_t r = 0; r < 2; ++r) {
    const json &args = entries[r]["args"];
    CHECK(args.size() == 10);
    CHECK(args["a"] == 1);
    CHECK(args["g"] == 7);
    CHECK(args["h"] == 8 + static_cast<int>(r));
    CHECK(args["s"] == "spill-" + std::to_string(r));
    CHECK(args["y"] == 100 + static_cast<int>(r));
    int sum = 1 + 2 + 3 + 4 + 5 + 6 + 7 + (8 + static_cast<int>(r)) + 7 + (100 + static_cast<int>(r));
    CHECK(returns[r]["results"]["~r0"] == sum);
  }
}

void check_deep(const std::string &binary) {
  const int depth = 3000; // frames of ~300 bytes: the 8 KiB starting stack grows several times
  Run run = trace("deep", {"-rounds", "1", "-deep", std::to_string(depth)}, binary);
  auto entries = select(run.events, "main.Deep", "entry");
  auto returns = select(run.events, "main.Deep", "return");
  CHECK(entries.size() == depth + 1);
  CHECK(returns.size() == depth + 1);
  // Each n from depth down to 0 is entered exactly once, in order, on one goroutine.
  bool in_order = entries.size() == depth + 1;
  for (size_t i = 0; in_order && i < entries.size(); ++i)
    in_order = entries[i]["args"]["n"] == depth - static_cast<int>(i);
  CHECK(in_order);
  uint64_t goid = entries.empty() ? 0 : entries[0]["goid"].get<uint64_t>();
  if (binary == "fixture")
    CHECK(goid > 1);
  for (const auto &e : entries)
    if (e["goid"] != goid) {
      FAIL("entry on another goroutine: " << e.dump());
      break;
    }
  // Results unwind in reverse: the last return is the outermost call.
  if (!returns.empty())
    CHECK(returns.back()["results"]["~r0"].is_number());
}

TEST_CASE("one entry event per call while recursion grows the goroutine stack: amd64") {
  e2e::require_bpf();
  check_deep("fixture");
}

TEST_CASE("one entry event per call while recursion grows the goroutine stack: 386") {
  e2e::require_bpf();
  check_deep("fixture_386");
}
