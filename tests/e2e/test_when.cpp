// End to end, for real: a probe's `when:` condition is compiled into its entry program, so only
// the calls where it holds reach the tracer, with their returns; the fixture records every call's
// values, and the events must be exactly the calls whose recorded values satisfy the condition.
#include "harness.h"
#include "when_expect.h"

#include <doctest/doctest.h>

#include <fstream>

namespace {

e2e::Result build(const std::string &dir, const std::string &spec, const std::string &binary = "fixture") {
  std::ofstream(dir + "/spec.yaml") << spec;
  return e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(binary), "-o", dir + "/out"});
}

} // namespace

TEST_CASE("when: only the calls whose values satisfy the condition are traced, with their returns") {
  e2e::require_bpf();
  // amd64 (registers) and 386 (ABI0: values on the stack, g in TLS for the pairing).
  for (const char *binary : {"fixture", "fixture_386"}) {
  CAPTURE(binary);
  std::string dir = e2e::temp_dir(std::string("when-") + binary);
  auto built = build(dir, e2e::read_file(e2e::source("tests/e2e/when.yaml")), binary);
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--stats", "--format", "json", "--", e2e::fixture(binary),
                          "-truth", dir + "/truth.jsonl", "-rounds", "8"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  when_expect::check(e2e::read_file(dir + "/truth.jsonl"), traced.out, traced.err);
  }
}

TEST_CASE("when: what BPF cannot evaluate exactly is refused where the condition says it") {
  std::string dir = e2e::temp_dir("when-errors");
  struct Case {
    std::string when, column, message;
  };
  // Columns are of the quoted text's characters on line 3 (the quote is at column 11).
  for (const Case &c : std::vector<Case>{
           {"h.Port == 70000", ":3:22:", "70000 is out of the range of uint16"},
           {"h.Port == -1", ":3:22:", "negative number"},
           {"h.Host == 3", ":3:22:", "not an integer"},
           {"h.Host < \"b\"", ":3:12:", "only == and != compare it"},
           {"h.Port == 1 && (h.Flags", ":3:35:", "expected ')'"},
           {"startsWith(h.Host, \"ab)", ":3:31:", "unterminated string literal"},
           {"h.Nope == 1", ":3:14:", "has no field Nope"},
           {"h == 1", ":3:12:", "not one value"},
           {"1 == 2", ":3:12:", "two literals"},
       }) {
    CAPTURE(c.when);
    std::string text = c.when;
    std::string escaped;
    for (char ch : text)
      escaped += ch == '\'' ? std::string("''") : std::string(1, ch);
    auto r = build(dir, "probes:\n  - function: main.ByValue\n    when: '" + escaped + "'\n");
    CHECK(r.status != 0);
    CHECK(r.err.find("error[") != std::string::npos);
    CHECK(r.err.find(c.column) != std::string::npos);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.err.find("internal error") == std::string::npos);
  }
}
