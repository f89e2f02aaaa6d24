// End to end, for real: where an interface keeps a value, in its data word itself or behind it, is
// what the value's type descriptor says (KindDirectIface in the kind byte up to Go 1.25, the tflag's
// TFlagDirectIface since 1.26), not a rule over the layout. The fixture (tests/e2e/direct) passes a
// Getter holding a Ref {_ [0]func(); P *Box}: Go 1.26 keeps such a value (Size == PtrBytes ==
// PtrSize) in the data word, Go 1.19 a copy behind it. contents: true and g.(main.Ref).P.N must
// show the program's own pointer and the number behind it, with DWARF and stripped, for both.
#include "harness.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>

using nlohmann::json;

namespace {

const char *kSpec = "probes:\n"
                    "  - function: main.Use\n"
                    "    capture: [k, g, 'g.(main.Ref).P.N']\n"
                    "    contents: true\n";

// Stripped: the signature declared, main.Getter and main.Ref laid out from their descriptors.
const char *kStrippedSpec = "probes:\n"
                            "  - function: main.Use\n"
                            "    params: [{name: g, type: main.Getter}, {name: k, type: int}]\n"
                            "    results: [{name: ~r0, type: int}]\n"
                            "    capture: [k, g, 'g.(main.Ref).P.N']\n"
                            "    contents: true\n";

void check(const std::string &fixture, const char *spec) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir(fixture + "-direct");
  std::ofstream(dir + "/spec.yaml") << spec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "-o", dir + "/events.jsonl", "--",
                          e2e::fixture(fixture), "-rounds", "8"},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::map<int, json> truth;
  for (const json &t : e2e::json_lines(traced.out))
    truth[t["k"].get<int>()] = t;
  REQUIRE(truth.size() == 8);
  size_t calls = 0;
  for (const json &e : e2e::json_lines(e2e::read_file(dir + "/events.jsonl"))) {
    INFO(e.dump());
    CHECK(!e.contains("faults"));
    const json &a = e["args"];
    const json &t = truth.at(a["k"].get<int>());
    ++calls;
    CHECK(a["g"]["type"] == "main.Ref");
    CHECK(a["g"]["value"]["P"] == t["p"]);
    CHECK(a["g.(main.Ref).P.N"] == t["n"]);
  }
  CHECK(calls == 8);
}

} // namespace

TEST_CASE("a Ref in an interface where the toolchain keeps it (behind the data word before Go 1.26): contents and x.(T), with DWARF and stripped") {
  check("direct", kSpec);
  check("direct_stripped", kStrippedSpec);
}

TEST_CASE("a one-pointer struct with a zero-size field is the data word itself (Go 1.26's TFlagDirectIface)") {
  if (!std::filesystem::exists(e2e::fixture("direct_newer"))) {
    MESSAGE("skipped: no Go 1.26 fixture (WEAVE_GO_NEWER is not installed)");
    return;
  }
  check("direct_newer", kSpec);
  check("direct_newer_stripped", kStrippedSpec);
}
