// End to end, for real: maps shown by their pairs, on the bucket layout (Go <= 1.23, pinned 1.19)
// and on swiss tables (Go 1.24+, the matrix rows), amd64 and 386. The fixture writes down every pair
// of every map it passes; the tracer shows the first slice_max of them in the order they lie in
// memory, so the comparison is as sets: each pair shown is one the program had, with its value,
// shown once, and as many as the map has up to slice_max. Stripped (-ldflags=-s -w), the same walk
// runs on a header synthesized from the runtime type descriptors: its trace is checked the same way,
// and its walk must be the DWARF build's, offset for offset.
#include "harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

using nlohmann::json;

namespace {

void write_file(const std::string &path, const std::string &text) { std::ofstream(path) << text; }

constexpr size_t kSliceMax = 15; // tests/e2e/maps.yaml

struct MapsTrace {
  std::vector<json> events; // main.Maps's, in call order
  std::vector<std::string> walks; // the generated walks' calls, offsets and sizes (probes.bpf.c)
};

// The weave_map_hmap(...) and weave_map_swiss(...) calls of generated C, each as one line.
std::vector<std::string> walk_calls(const std::string &c) {
  std::vector<std::string> calls;
  for (size_t at = c.find("weave_map_"); at != std::string::npos; at = c.find("weave_map_", at + 1)) {
    if (c.compare(at, 15, "weave_map_hmap(") != 0 && c.compare(at, 16, "weave_map_swiss(") != 0)
      continue;
    std::string call;
    for (size_t i = at; i < c.size() && c[i] != ';'; ++i)
      if (c[i] != '\n' && c[i] != '\t')
        call += c[i];
    calls.push_back(call);
  }
  return calls;
}

MapsTrace trace_maps(const std::string &fixture, const std::string &spec = "tests/e2e/maps.yaml") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("maps-" + fixture);
  auto built = e2e::run({e2e::weave(), e2e::source(spec), e2e::fixture(fixture), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(fixture), "-truth",
                          dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  std::vector<json> events;
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.Maps")
      events.push_back(e);
  truth.pop_back(); // main.Refused's line (the next test's)
  REQUIRE(truth.size() == 3);
  REQUIRE(events.size() == truth.size());
  size_t compared = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    CAPTURE(i);
    CHECK_FALSE(events[i].contains("faults"));
    // The map caught growing is only a test of the bucket layout when it was growing.
    if (truth[i]["layout"] == "hmap")
      CHECK(truth[i]["growing"] == true);
    for (auto &[expr, want] : truth[i]["args"].items()) {
      CAPTURE(expr);
      const json &got = events[i]["args"][expr];
      INFO(got.dump());
      REQUIRE(got.is_object());
      CHECK(got["len"] == want["len"]);
      std::map<std::string, json> pairs; // key (as JSON text) -> value
      for (const json &p : want["pairs"])
        pairs[p[0].dump()] = p[1];
      REQUIRE(got["items"].is_array());
      size_t expected = std::min<size_t>(want["len"].get<size_t>(), kSliceMax);
      CHECK(got["items"].size() == expected);
      std::set<std::string> seen;
      for (const json &item : got["items"]) {
        std::string key = item["key"].dump();
        CAPTURE(key);
        CHECK(seen.insert(key).second); // each pair once
        auto it = pairs.find(key);
        REQUIRE(it != pairs.end()); // a pair the map has
        CHECK(item["value"] == it->second);
        ++compared;
      }
    }
  }
  MESSAGE(fixture << ": " << compared << " pairs compared");
  CHECK(compared > 0);
  return {events, walk_calls(e2e::read_file(dir + "/out/probes.bpf.c"))};
}

// A stripped build against the DWARF build of the same source and toolchain: each checked against
// its own run's record by trace_maps, the walks generated alike (every offset and size the same),
// and every map small enough to be shown whole (its len at most slice_max) shown with the same pairs.
void stripped_as_dwarf(const std::string &stripped_fixture, const std::string &dwarf_fixture) {
  if (!std::filesystem::exists(e2e::fixture(stripped_fixture))) {
    MESSAGE("skipped: no " << stripped_fixture);
    return;
  }
  MapsTrace stripped = trace_maps(stripped_fixture, "tests/e2e/maps_stripped.yaml");
  MapsTrace dwarf = trace_maps(dwarf_fixture);
  REQUIRE(dwarf.walks.size() == 5);
  CHECK(stripped.walks == dwarf.walks);
  REQUIRE(stripped.events.size() == dwarf.events.size());
  size_t whole = 0;
  for (size_t i = 0; i < stripped.events.size(); ++i)
    for (auto &[expr, got] : stripped.events[i]["args"].items()) {
      CAPTURE(expr);
      const json &want = dwarf.events[i]["args"][expr];
      CHECK(got["len"] == want["len"]);
      if (got["len"].get<size_t>() > kSliceMax)
        continue; // which 15 pairs lie first depends on each run's hash seed
      auto sorted = [](json items) {
        std::vector<std::string> out;
        for (const json &item : items)
          out.push_back(item.dump());
        std::sort(out.begin(), out.end());
        return out;
      };
      CHECK(sorted(got["items"]) == sorted(want["items"]));
      ++whole;
    }
  MESSAGE(stripped_fixture << ": " << stripped.walks.size() << " walks as DWARF's, " << whole
                           << " maps with the same pairs");
  CHECK(whole >= 6);
}

} // namespace

TEST_CASE("maps are shown by their pairs, each one the program had: amd64") { trace_maps("maps"); }

TEST_CASE("maps are shown by their pairs, each one the program had: 386") { trace_maps("maps_386"); }

TEST_CASE("stripped, maps are shown by their pairs from the type descriptors, as with DWARF: amd64") {
  stripped_as_dwarf("maps_stripped", "maps");
}

TEST_CASE("stripped, maps are shown by their pairs from the type descriptors, as with DWARF: 386") {
  stripped_as_dwarf("maps_386_stripped", "maps_386");
}

TEST_CASE("a map of values weave does not copy is refused by name, and inside a struct shows its len") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("maps-refused");
  write_file(dir + "/named.yaml", "probes:\n  - function: main.Refused\n    capture: [m]\n");
  auto refused = e2e::run({e2e::weave(), dir + "/named.yaml", e2e::fixture("maps"), "-o", dir + "/named"});
  CHECK(refused.status == 1);
  CHECK(refused.err.find("error[unsupported-map]") != std::string::npos);
  CHECK(refused.err.find("its value type []int is not a scalar, string, pointer or a struct of those") !=
        std::string::npos);
  CHECK(refused.err.find("len(m)") != std::string::npos); // the way out
  INFO(refused.err);
  write_file(dir + "/held.yaml", "probes:\n  - function: main.Refused\n    capture: [len(m), h]\n");
  auto built = e2e::run({e2e::weave(), dir + "/held.yaml", e2e::fixture("maps"), "-o", dir + "/held"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/held/tracer", "--format", "json", "--", e2e::fixture("maps"), "-truth",
                          dir + "/truth.jsonl", "-rounds", "0"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  auto truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  auto events = e2e::json_lines(traced.out);
  REQUIRE(truth.size() == 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["args"]["len(m)"] == truth[0]["len"]);
  CHECK(events[0]["args"]["h"] == json{{"N", 7}, {"M", {{"len", truth[0]["len"]}}}});
}

TEST_CASE("args: all keeps the len of a map whose pairs it cannot copy, with a warning") {
  std::string dir = e2e::temp_dir("maps-all");
  write_file(dir + "/all.yaml", "probes:\n  - function: main.Refused\n    args: all\n");
  auto built = e2e::run({e2e::weave(), dir + "/all.yaml", e2e::fixture("maps"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(built.err.find("m: its len alone, not its pairs (map[string][]int): its value type []int") !=
        std::string::npos);
  auto manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  REQUIRE(manifest["probes"][0]["captures"].size() == 2); // m and h, both there
  CHECK(manifest["probes"][0]["captures"][0]["expr"] == "m");
  CHECK(manifest["probes"][0]["captures"][0]["fields"].size() == 1); // its len
}

TEST_CASE("a map another goroutine is writing is marked, never shown half updated") {
  e2e::require_bpf();
  for (const char *fixture : {"maps", "maps_386"}) {
    CAPTURE(fixture);
    std::string dir = e2e::temp_dir(std::string("maps-written-") + fixture);
    write_file(dir + "/written.yaml", "probes:\n  - function: main.Written\n    capture: [m, len(m)]\n");
    auto built = e2e::run({e2e::weave(), dir + "/written.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
    INFO(built.err);
    REQUIRE(built.status == 0);
    auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(fixture), "-truth",
                            dir + "/truth.jsonl", "-rounds", "0"});
    INFO(traced.err);
    REQUIRE(traced.status == 0);
    auto events = e2e::json_lines(traced.out);
    REQUIRE(events.size() == 1);
    INFO(events[0].dump());
    REQUIRE(events[0].contains("faults"));
    CHECK(events[0]["faults"] == json::array({"m"}));
    CHECK(events[0]["args"]["m"].is_null());
    CHECK(events[0]["args"]["len(m)"] == 1); // the length is still read
  }
}
