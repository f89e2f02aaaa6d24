// End to end, for real: slices, arrays, maps, channels, floats and complex numbers, on the register
// ABI (amd64) and the stack ABI (386), compared with what the fixture passed.
#include "harness.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

using nlohmann::json;

namespace {

// Traces `spec` on `binary` and returns (events of `function`, truth lines of `function`).
std::pair<std::vector<json>, std::vector<json>> trace(const std::string &name, const std::string &spec,
                                                      const std::string &binary, const std::string &function) {
  std::string dir = e2e::temp_dir(name);
  auto built = e2e::run({e2e::weave(), e2e::source(spec), e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> events, truth;
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == function)
      events.push_back(e);
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["function"] == function)
      truth.push_back(t);
  return {events, truth};
}

void check_collections(const std::string &binary) {
  auto [events, truth] = trace("types-" + binary, "tests/e2e/types.yaml", binary, "main.Collections");
  REQUIRE(truth.size() == 3);
  REQUIRE(events.size() == 3);
  for (size_t i = 0; i < 3; ++i)
    for (auto &[expr, expected] : truth[i]["args"].items()) {
      CAPTURE(i);
      CAPTURE(expr);
      CHECK(e2e::map_pairs_sorted(events[i]["args"][expr]) == e2e::map_pairs_sorted(expected)); // m: a set
    }
}

} // namespace

TEST_CASE("slices, arrays, maps, channels, floats and complex numbers: amd64") {
  e2e::require_bpf();
  check_collections("fixture");
}

TEST_CASE("slices, arrays, maps, channels, floats and complex numbers: 386") {
  e2e::require_bpf();
  check_collections("fixture_386");
}

TEST_CASE("floats passed on the stack (386 ABI0) are read exactly") {
  e2e::require_bpf();
  auto [events, truth] = trace("floats-386", "tests/e2e/floats386.yaml", "fixture_386", "main.Floats");
  REQUIRE(truth.size() == 1);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["args"] == truth[0]["args"]);
}

// Interfaces and errors: the dynamic type by name, the message or value behind it.
static void check_interfaces(const std::string &binary) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("interfaces-" + binary);
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/interfaces.yaml"), e2e::fixture(binary), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> want_args, want_results, entries, returns;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    if (t["function"] == "main.Check")
      want_args.push_back(t["args"]);
    if (t["function"] == "main.Check:return")
      want_results.push_back(t["args"]);
  }
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.Check")
      (e["kind"] == "entry" ? entries : returns).push_back(e);
  REQUIRE(want_args.size() == 3);
  REQUIRE(entries.size() == 3);
  REQUIRE(returns.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(entries[i]["args"] == want_args[i]);
    CHECK(returns[i]["results"] == want_results[i]);
  }
}

TEST_CASE("interfaces and errors: the dynamic type by name, the message or value behind it") {
  check_interfaces("fixture");
}

TEST_CASE("interfaces in a PIE: type descriptors are found at their load address less the bias") {
  check_interfaces("fixture_pie");
}

// Every dynamic type the tracer names is the one the program's reflect spells with package paths
// in full, and, with each path shortened to its package's name, what the program printed with %T.
// The manifest carries only where the descriptors are: no type table.
static void check_dynamic_types(const std::string &binary) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("dyntypes-" + binary);
  bool stripped = binary.find("stripped") != std::string::npos; // no DWARF: a typed spec
  auto built = e2e::run({e2e::weave(), e2e::source(stripped ? "tests/e2e/dyntypes_stripped.yaml" : "tests/e2e/dyntypes.yaml"),
                         e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  CHECK_FALSE(manifest.contains("types"));
  REQUIRE(manifest.contains("type_descriptors"));
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth, entries, returns;
  json packages;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    if (t.contains("packages"))
      packages = t["packages"];
    else
      truth.push_back(t);
  }
  REQUIRE(packages.is_object());
  for (auto &e : e2e::json_lines(traced.out))
    if (e["function"] == "main.Show")
      (e["kind"] == "entry" ? entries : returns).push_back(e);
  REQUIRE(truth.size() >= 20);
  REQUIRE(entries.size() == truth.size());
  REQUIRE(returns.size() == truth.size());
  // "*io/fs.PathError" as %T prints it: each package path replaced by its package's name.
  auto as_printed = [&](std::string name) {
    for (auto &[path, pkg] : packages.items())
      for (size_t at = name.find(path + "."); at != std::string::npos; at = name.find(path + ".", at + 1)) {
        bool starts = at == 0 || std::string("*[]]) ,<-").find(name[at - 1]) != std::string::npos;
        if (starts)
          name.replace(at, path.size(), pkg.get<std::string>());
      }
    return name;
  };
  size_t named = 0;
  auto compare = [&](const json &got, const json &want) {
    if (want.is_null()) {
      CHECK(got.is_null());
      return;
    }
    REQUIRE(got.is_object());
    REQUIRE(got["type"].is_string());
    CHECK(got["type"] == want["type"]);
    CHECK(as_printed(got["type"]) == want["T"]);
    ++named;
  };
  for (size_t i = 0; i < truth.size(); ++i) {
    CAPTURE(i);
    CAPTURE(truth[i]);
    compare(entries[i]["args"]["v"], truth[i]["args"]["v"]);
    compare(entries[i]["args"]["err"], truth[i]["args"]["err"]);
    compare(returns[i]["results"]["~r0"], truth[i]["result"]);
  }
  MESSAGE(binary << ": " << named << " dynamic types named as the program names them");
}

TEST_CASE("dynamic types named from the binary's own descriptors, as the program prints them (%T)") {
  check_dynamic_types("dyntypes");
}

TEST_CASE("dynamic types in a stripped binary") { check_dynamic_types("dyntypes_stripped"); }

TEST_CASE("dynamic types in a PIE: descriptors at their load address less the bias") {
  check_dynamic_types("dyntypes_pie");
}

TEST_CASE("dynamic types by the newer Go (swiss-table maps)") {
  if (!std::ifstream(e2e::fixture("dyntypes_newer"))) {
    MESSAGE("skipped: no newer Go configured (WEAVE_GO_NEWER), so no dyntypes_newer fixture");
    std::exit(77);
  }
  check_dynamic_types("dyntypes_newer");
}

TEST_CASE("index and len()/cap() expressions; an index past a slice's length is a fault") {
  e2e::require_bpf();
  auto [events, truth] = trace("expressions", "tests/e2e/expressions.yaml", "fixture", "main.Collections");
  REQUIRE(truth.size() == 3);
  REQUIRE(events.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const json &want = truth[i]["args"];
    const json &got = events[i]["args"];
    int len = want["xs"]["len"];
    CHECK(got["xs[1]"] == want["xs"]["items"][1]);
    if (len > 7) {
      CHECK(got["xs[7]"] == want["xs"]["items"][7]);
    } else {
      CHECK(got["xs[7]"].is_null()); // past the length: a fault, never a stale element
      REQUIRE(events[i].contains("faults"));
      CHECK(events[i]["faults"][0] == "xs[7]");
    }
    CHECK(got["len(xs)"] == len);
    CHECK(got["cap(xs)"] == want["xs"]["cap"]);
    CHECK(got["names[1]"] == want["names"]["items"][1]);
    CHECK(got["arr[2]"] == want["arr"][2]);
    CHECK(got["pts[1].Y"] == want["pts"]["items"][1]["Y"]);
    CHECK(got["len(m)"] == want["m"]["len"]);
    CHECK(got["len(ch)"] == want["ch"]["len"]);
    CHECK(got["cap(ch)"] == want["ch"]["cap"]);
    CHECK(got["len(names[0])"] == want["names"]["items"][0].get<std::string>().size());
  }
}

TEST_CASE("func values print as the function they call") {
  e2e::require_bpf();
  auto [events, truth] = trace("funcs", "tests/e2e/funcs.yaml", "fixture", "main.Callback");
  REQUIRE(events.size() == 1);
  // The fixture passes a closure literal written in main: the compiler names it main.main.funcN.
  std::string fn = events[0]["args"]["fn"];
  CHECK(fn.rfind("main.main.func", 0) == 0);
  CHECK(events[0]["args"]["v"] == json({{"type", "string"}, {"value", "v"}}));
}
