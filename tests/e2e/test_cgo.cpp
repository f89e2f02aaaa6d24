// End to end, for real: a cgo binary (external linking, C thread-locals). Go functions are traced
// with their values; and the TLS slot where ABI0 code finds g, which C thread-locals move, is what
// weave computes from PT_TLS and runtime.tlsg: the same offset the runtime's own ABI0-to-
// ABIInternal wrappers load g from (MOVQ FS:off, R14), read from the disassembly.
#include "harness.h"

#include <doctest/doctest.h>

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
