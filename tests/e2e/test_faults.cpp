// End to end, for real: a fault marks exactly the captures it affects, never more, never fewer.
// The values a program loads from one base are read with one bpf_probe_read_user over their span
// (generator/codegen: plan_regions); tests/e2e/pagefault places a struct so that the span runs past
// the end of a readable page while some of its fields do not, directly and through a pointer, and
// records which fields it wrote. Each readable field must show the program's value, each other one
// a fault of its own capture.
#include "harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

using nlohmann::json;

namespace {

// Each event against the program's record of that call: every readable value equal, and exactly
// the captures it says are unreadable marked as faults (and shown as null). Returns the values
// compared and the faults expected.
std::pair<size_t, size_t> compare_with_truth(const std::vector<json> &events, const std::vector<json> &truth) {
  size_t values = 0, faults = 0;
  for (size_t i = 0; i < truth.size() && i < events.size(); ++i) {
    CAPTURE(i);
    const json &t = truth[i], &e = events[i];
    INFO(e.dump());
    for (const auto &[expr, value] : t["values"].items()) {
      CAPTURE(expr);
      CHECK(e["args"][expr] == value);
      ++values;
    }
    std::vector<std::string> want = t["faults"], got;
    if (e.contains("faults"))
      got = e["faults"].get<std::vector<std::string>>();
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    CHECK(got == want);
    for (const std::string &expr : want)
      CHECK(e["args"][expr].is_null());
    faults += want.size();
  }
  return {values, faults};
}

} // namespace

TEST_CASE("a region that runs into an unreadable page faults only the captures whose values are there") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("faults-region");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Inspect\n"
                                       "    capture: [r.A, r.Name, r.B, r.Tail, r.C, o.ID, o.In.A, o.In.Name, "
                                       "o.In.B, o.In.Tail, o.In.C]\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("pagefault"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  // The generated program does read r's fields as one region (else this test would prove nothing).
  std::string source = e2e::read_file(dir + "/out/probes.bpf.c");
  CHECK(source.find("/* region 0: 7 values from r: *main.Rec") != std::string::npos);
  CHECK(source.find("bpf_probe_read_user(buf, 56,") != std::string::npos);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("pagefault"), "-truth",
                          dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> events = e2e::json_lines(traced.out);
  std::vector<json> truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  REQUIRE(truth.size() == 24);
  REQUIRE(events.size() == truth.size());
  auto [values, faults] = compare_with_truth(events, truth);
  // 3 rounds of 8 placements: 11 values each, of which 2 x (0+0+0+1+2+3+4+4) = 28 per round fault.
  CHECK(faults == 3 * 28);
  CHECK(values == 3 * (8 * 11 - 28));
}

TEST_CASE("strings read in one span fault only the captures whose bytes are unreadable") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("faults-strings");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Request\n"
                                       "    capture: [l.Method, l.URI, l.Proto, l.Path]\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("pagefault"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  // The four strings' bytes are read as one span when it fits (else this test would prove nothing).
  std::string source = e2e::read_file(dir + "/out/probes.bpf.c");
  CHECK(source.find("bpf_probe_read_user(e->strings, n, (const void *)lo)") != std::string::npos);
  CHECK(source.find("weave_join(&lo, &hi, e->c3_at, e->c3_len, 64, 256) << 3;") != std::string::npos);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("pagefault"), "-lines",
                          "-truth", dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> events = e2e::json_lines(traced.out);
  std::vector<json> truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  // Per round: together; running past the page's end (the span faults); one unreadable; one far
  // away (a span wider than the area); one empty.
  REQUIRE(truth.size() == 3 * 5);
  REQUIRE(events.size() == truth.size());
  auto [values, faults] = compare_with_truth(events, truth);
  CHECK(faults == 3 * 2);
  CHECK(values == 3 * (5 * 4 - 2));
}
