// End to end, for real: weave builds a tracer for the Go fixture, the tracer starts the fixture and
// attaches uprobes, and every captured value is compared with what the fixture says it passed.
#include "harness.h"

#include <doctest/doctest.h>

#include <csignal>
#include <map>
#include <set>

using nlohmann::json;

namespace {

struct Traced {
  std::vector<json> events;
  std::vector<json> truth;
  e2e::Result tracer;
};

std::string build_tracer(const std::string &dir, const std::string &binary,
                         const std::string &spec = "tests/e2e/fixture.yaml") {
  auto built = e2e::run({e2e::weave(), "build", e2e::source(spec), e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  return dir + "/out/tracer";
}

Traced trace_fixture(const std::string &name, const std::string &binary, const std::string &format = "json") {
  std::string dir = e2e::temp_dir(name);
  std::string tracer = build_tracer(dir, binary);
  Traced t;
  t.tracer = e2e::run({tracer, "--format", format, "--", e2e::fixture(binary), "-truth",
                       dir + "/truth.jsonl", "-rounds", "3"});
  INFO(t.tracer.err);
  REQUIRE(t.tracer.status == 0);
  if (format == "json")
    t.events = e2e::json_lines(t.tracer.out);
  // Only the calls tests/e2e/fixture.yaml probes: the fixture also makes calls for other tests.
  static const std::set<std::string> probed = {
      "main.Ints",   "main.SpillOver", "main.Strings",          "main.Pointers",
      "main.ByValue", "main.Nested",   "main.(*Server).Handle", "main.Server.Describe"};
  for (auto &line : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (probed.count(line["function"]))
      t.truth.push_back(line);
  REQUIRE(t.truth.size() == 3 * 9); // nine calls a round
  return t;
}

// The tracer's rendering (after e2e::json_lines) of the fixture's invalid string, given as hex. That
// string holds only ASCII and bytes that cannot start or continue UTF-8 here, so every byte >= 0x80
// is one escape.
std::string expected_bytes(const std::string &hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    int byte = std::stoi(hex.substr(i, 2), nullptr, 16);
    out += byte < 0x80 ? std::string(1, static_cast<char>(byte)) : "<0x" + hex.substr(i, 2) + ">";
  }
  return out;
}

} // namespace

// amd64 passes arguments in registers (ABIInternal); the same program built for 386 passes them all
// on the stack (ABI0) with 4-byte pointers and ints. Both run here, and both must match exactly.
void check_values(const std::string &binary) {
  Traced t = trace_fixture("values-" + binary, binary);
  std::map<std::string, std::vector<json>> by_function;
  for (const auto &e : t.events) {
    CHECK(e["kind"] == "entry");
    CHECK(e["probe"] == e["function"]);
    CHECK(e["pid"].get<int>() > 0);
    CHECK(e["tid"].get<int>() > 0);
    CHECK(e["goid"].get<uint64_t>() == 1); // main goroutine: g from R14, FS or (386) GS
    CHECK(e["ts_ns"].get<uint64_t>() > 0);
    by_function[e["function"]].push_back(e);
  }
  std::map<std::string, size_t> seen;
  size_t compared = 0;
  for (const auto &truth : t.truth) {
    std::string function = truth["function"];
    CAPTURE(function);
    auto &events = by_function[function];
    size_t index = seen[function]++;
    REQUIRE(index < events.size());
    const json &event = events[index];
    for (auto &[expr, expected] : truth["args"].items()) {
      CAPTURE(expr);
      REQUIRE(event["args"].contains(expr));
      const json &actual = event["args"][expr];
      if (expected.is_null()) {
        // A nil pointer followed: the read faults, and the tracer must say so.
        CHECK(actual.is_null());
        REQUIRE(event.contains("faults"));
        CHECK(std::find(event["faults"].begin(), event["faults"].end(), expr) != event["faults"].end());
      } else if (expected.is_object() && expected.contains("hex")) {
        CHECK(actual.get<std::string>() == expected_bytes(expected["hex"]));
      } else if (expected.is_string() && expected.get<std::string>().size() > 64) {
        // string_max is 64: a longer string arrives cut, and is listed as truncated.
        CHECK(actual.get<std::string>() == expected.get<std::string>().substr(0, 64));
        REQUIRE(event.contains("truncated"));
        CHECK(std::find(event["truncated"].begin(), event["truncated"].end(), expr) !=
              event["truncated"].end());
        // Its full length beside it: the program's own len() (the truth holds the whole string).
        REQUIRE(event.contains("lengths"));
        CHECK(event["lengths"][expr] == expected.get<std::string>().size());
      } else {
        CHECK(actual == expected);
      }
      ++compared;
    }
  }
  for (auto &[function, events] : by_function)
    CHECK_MESSAGE(events.size() == seen[function], function);
  CHECK(t.events.size() == t.truth.size());
  MESSAGE("compared " << compared << " values in " << t.events.size() << " events");
  CHECK(compared == 3 * (12 + 4 + 3 + 3 + 5 + 6 + 5 + 7 + 3));
}

TEST_CASE("every captured value matches what the fixture passed: amd64, register ABI") {
  e2e::require_bpf();
  check_values("fixture");
}

TEST_CASE("every captured value matches what the fixture passed: amd64 PIE") {
  e2e::require_bpf();
  check_values("fixture_pie"); // position-independent: probes go by file offset, not address
}

TEST_CASE("every captured value matches what the fixture passed: 386, stack ABI0") {
  e2e::require_bpf();
  check_values("fixture_386");
}

TEST_CASE("text output: one line per event, name=value pairs, strings quoted and escaped") {
  e2e::require_bpf();
  Traced t = trace_fixture("text", "fixture", "text");
  const std::string &out = t.tracer.out;
  CHECK(out.find("main.Ints(a=-128, b=32767, c=-2147483648, d=9223372036854775807, e=255, f=0, "
                 "g=4294967295, h=18446744073709551615, i=-42, j=7, k=3735879680, ok=true)") !=
        std::string::npos);
  CHECK(out.find("main.Strings(s=\"h\xc3\xa9llo \\\"w\xc3\xb6rld\\\"\\t0\\n\", empty=\"\", long=\"") !=
        std::string::npos);
  CHECK(out.find("s=\"bad\\xff\\xfe0\"") != std::string::npos);
  // A string cut at string_max (64) keeps its full length: round 0's `long` is 100 bytes.
  std::string first64;
  for (int i = 0; i < 64; ++i)
    first64 += static_cast<char>('0' + i % 10);
  CHECK(out.find("long=\"" + first64 + "\"...(100 bytes))") != std::string::npos);
  CHECK(out.find("missing.Port=<fault>") != std::string::npos);
  CHECK(out.find("main.(*Server).Handle(s.Name=\"srv-0\", s.Hits=0, req.Path=\"/api/v0\", "
                 "req.Header.Port=8080, req.Header.Host=\"example.org\", req.Hdr.ID=0, deadline=-8)") !=
        std::string::npos);
  size_t lines = std::count(out.begin(), out.end(), '\n');
  CHECK(lines == 27);
}
