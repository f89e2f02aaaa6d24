// End to end, for real: zero-size parameters and results (struct{}, [0]T, structs holding them)
// among ordinary ones, on the register ABI and on the stack. Every value the program passed and
// returned, as it wrote them down, must be what the tracer printed.
#include "harness.h"

#include <doctest/doctest.h>

using nlohmann::json;

namespace {

void trace_zerosize(const std::string &fixture) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("zerosize-" + fixture);
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/zerosize.yaml"), e2e::fixture(fixture), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(built.err.find("warning") == std::string::npos); // nothing left out
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(fixture), "-truth",
                          dir + "/truth.jsonl"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  std::vector<json> events = e2e::json_lines(traced.out);
  REQUIRE(truth.size() == 20); // 2 rounds x 5 functions x entry and return
  REQUIRE(events.size() == truth.size());
  for (size_t i = 0; i < truth.size(); ++i) {
    CAPTURE(i);
    CHECK(events[i]["function"] == truth[i]["function"]);
    CHECK(events[i]["kind"] == truth[i]["kind"]);
    CHECK(events[i][truth[i]["kind"] == "entry" ? "args" : "results"] == truth[i]["values"]);
    CHECK_FALSE(events[i].contains("faults"));
    CHECK_FALSE(events[i].contains("entry_seen")); // every return found its entry
    // Where the program printed a value with %v, the tracer's value reads the same ("[]" for a
    // named [0]int8, not "{}").
    if (truth[i].contains("printed"))
      for (const auto &[name, printed] : truth[i]["printed"].items()) {
        CAPTURE(name);
        CHECK(events[i]["args"][name].dump() == printed.get<std::string>());
      }
  }
}

} // namespace

TEST_CASE("zero-size parameters and results are shown as {} and [], and their neighbours read right: amd64") {
  trace_zerosize("zerosize");
}

TEST_CASE("zero-size parameters and results are shown as {} and [], and their neighbours read right: 386") {
  trace_zerosize("zerosize_386");
}
