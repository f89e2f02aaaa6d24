// End to end, for real: a stripped binary (no symbols, no DWARF) is traced with parameters the spec
// declares; functions come from .gopclntab, whose recorded argument sizes check the declarations.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>

using nlohmann::json;

namespace {

e2e::Result build(const std::string &dir, const std::string &spec_text, const std::string &binary) {
  std::ofstream(dir + "/spec.yaml") << spec_text;
  return e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(binary), "-o", dir + "/out"});
}

std::string spillover_params(const std::string &s_type) {
  std::string text = "    params:\n";
  for (const char *name : {"a", "b", "c", "d", "e", "f", "g", "h"})
    text += std::string("      - {name: ") + name + ", type: int}\n";
  text += "      - {name: s, type: " + s_type + "}\n      - {name: y, type: int}\n";
  return text;
}

} // namespace

TEST_CASE("a stripped binary is traced with declared parameters, values matched") {
  e2e::require_bpf();
  // amd64 (ABIInternal, registers) and 386 (ABI0, the stack, 4-byte int): the same declarations.
  for (const char *binary : {"fixture_stripped", "fixture_386_stripped"}) {
  CAPTURE(binary);
  std::string dir = e2e::temp_dir(std::string("stripped-") + binary);
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/stripped.yaml"), e2e::fixture(binary),
                         "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary),
                          "-truth", dir + "/truth.jsonl", "-rounds", "2"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> spill_truth, nested_truth, spill, spill_ret, nested;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    if (t["function"] == "main.SpillOver")
      spill_truth.push_back(t["args"]);
    if (t["function"] == "main.Nested")
      nested_truth.push_back(t["args"]);
  }
  for (auto &e : e2e::json_lines(traced.out)) {
    if (e["function"] == "main.SpillOver")
      (e["kind"] == "entry" ? spill : spill_ret).push_back(e);
    if (e["function"] == "main.Nested")
      nested.push_back(e["args"]);
  }
  REQUIRE(spill.size() == 2);
  REQUIRE(spill_ret.size() == 2);
  REQUIRE(nested.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(spill[i]["args"] == spill_truth[i]);
    CHECK(spill[i]["goid"] == 1); // the goid offset comes from the version table here
    CHECK(spill_ret[i]["results"]["sum"] == 1 + 2 + 3 + 4 + 5 + 6 + 7 + (8 + static_cast<int>(i)) + 7 +
                                                (100 + static_cast<int>(i)));
    CHECK(nested[i]["r.Path"] == nested_truth[i]["r.Path"]);
    CHECK(nested[i]["r.Header.Port"] == nested_truth[i]["r.Header.Port"]);
    CHECK(nested[i]["r.Hdr.Host"] == nested_truth[i]["r.Hdr.Host"]);
  }
  }
}

TEST_CASE("declarations that do not add up to the compiler's argument size are refused") {
  std::string dir = e2e::temp_dir("stripped-mismatch");
  auto r = build(dir,
                 "probes:\n  - function: main.SpillOver\n" + spillover_params("int") +
                     "    results: [{name: sum, type: int}]\n    capture: [y]\n",
                 "fixture_stripped");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[signature-mismatch]") != std::string::npos);
  CHECK(r.err.find("take 80 bytes of argument space, but the compiler recorded 88") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
}

TEST_CASE("without DWARF and without declared params, captures are refused with a hint") {
  std::string dir = e2e::temp_dir("stripped-noparams");
  auto r = build(dir, "probes:\n  - function: main.SpillOver\n    capture: [y]\n", "fixture_stripped");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[no-dwarf-params]") != std::string::npos);
  CHECK(r.err.find("params: [") != std::string::npos);
}

TEST_CASE("declared params must agree with DWARF when the binary has it") {
  std::string dir = e2e::temp_dir("declared-vs-dwarf");
  auto ok = build(dir, "probes:\n  - function: main.SpillOver\n" + spillover_params("string") + "    capture: [s]\n",
                  "fixture");
  INFO(ok.err);
  CHECK(ok.status == 0);
  std::string dir2 = e2e::temp_dir("declared-vs-dwarf-bad");
  auto bad = build(dir2, "probes:\n  - function: main.SpillOver\n" + spillover_params("int64") + "    capture: [y]\n",
                   "fixture");
  CHECK(bad.status == 1);
  CHECK(bad.err.find("error[params-mismatch]") != std::string::npos);
  // One line, saying which parameter differs and how.
  CHECK(bad.err.find("param 9 's': declared int64 (8 bytes), binary has string (16 bytes)") != std::string::npos);
}

TEST_CASE("weave funcs lists a stripped binary's functions from .gopclntab") {
  auto r = e2e::run({e2e::weave(), "funcs", e2e::fixture("fixture_stripped"), "main.SpillOver"});
  CHECK(r.status == 0);
  CHECK(r.out.find("main.SpillOver") != std::string::npos);
  CHECK(r.out.find("ABIInternal  args=88") != std::string::npos);
}

TEST_CASE("params declared without results must add up on their own: an extra or a missing one is refused") {
  // SpillOver's result is in RAX, so its parameters alone fill the 88 bytes .gopclntab records.
  std::string ok_dir = e2e::temp_dir("stripped-params-only");
  auto ok = build(ok_dir, "probes:\n  - function: main.SpillOver\n" + spillover_params("string") + "    capture: [y]\n",
                  "fixture_stripped");
  INFO(ok.err);
  CHECK(ok.status == 0);
  std::string extra_dir = e2e::temp_dir("stripped-params-extra");
  auto extra = build(extra_dir,
                     "probes:\n  - function: main.SpillOver\n" + spillover_params("string") +
                         "      - {name: extra, type: string}\n    capture: [extra]\n",
                     "fixture_stripped");
  CHECK(extra.status == 1);
  CHECK(extra.err.find("error[signature-mismatch]") != std::string::npos);
  CHECK(extra.err.find("take 104 bytes of argument space, but the compiler recorded 88") != std::string::npos);
  CHECK(extra.err.find("declare results: [...] too") != std::string::npos);
  std::string none_dir = e2e::temp_dir("stripped-params-none");
  auto none = build(none_dir, "probes:\n  - function: main.SpillOver\n    params: []\n    capture: [y]\n",
                    "fixture_stripped");
  CHECK(none.status == 1);
  CHECK(none.err.find("error[signature-mismatch]") != std::string::npos);
  // args: all over an empty declaration reads nothing rather than guessing: the values are left out.
  std::string all_dir = e2e::temp_dir("stripped-params-none-all");
  auto all = build(all_dir, "probes:\n  - function: main.SpillOver\n    params: []\n    args: all\n",
                   "fixture_stripped");
  INFO(all.err);
  CHECK(all.status == 0);
  CHECK(all.err.find("take 0 bytes of argument space, but the compiler recorded 88") != std::string::npos);
  auto manifest = json::parse(e2e::read_file(all_dir + "/out/probes.json"));
  CHECK(manifest["probes"][0]["captures"].empty());
}

TEST_CASE("durations need no signature: return: true on a stripped binary times every call") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("stripped-durations");
  auto built = build(dir, "probes:\n  - function: main.SpillOver\n    return: true\n  - function: 'main.Str*'\n    return: true\n",
                     "fixture_stripped");
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(built.err.find("return events carry the call's duration only") != std::string::npos);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("fixture_stripped"), "-truth",
                          dir + "/truth.jsonl", "-rounds", "2"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  int entries = 0, returns = 0;
  for (auto &e : e2e::json_lines(traced.out)) {
    if (e["function"] != "main.SpillOver")
      continue;
    if (e["kind"] == "entry") {
      ++entries;
      continue;
    }
    ++returns;
    CHECK(e["duration_ns"].get<uint64_t>() > 0);
    CHECK(e["results"].empty());
  }
  CHECK(entries == 2);
  CHECK(returns == 2);
}

TEST_CASE("array lengths no Go value can have are refused where the spec says them, not wrapped around") {
  std::string dir = e2e::temp_dir("stripped-huge-array");
  // 2^61 eight-byte elements wrap a 64-bit size to 0: the next parameter would move into the array's registers.
  auto mapping = build(dir,
                       "probes:\n  - function: main.SpillOver\n    params:\n"
                       "      - {name: a, type: {array: int64, len: 2305843009213693952}}\n"
                       "      - {name: b, type: int}\n    capture: [b]\n",
                       "fixture_stripped");
  CHECK(mapping.status == 1);
  CHECK(mapping.err.find("error[type-too-large]") != std::string::npos);
  CHECK(mapping.err.find("spec.yaml:4:") != std::string::npos);
  std::string dir2 = e2e::temp_dir("stripped-huge-array-expr");
  auto expr = build(dir2,
                    "probes:\n  - function: main.SpillOver\n    params:\n"
                    "      - {name: a, type: \"[99999999999999999999999]int\"}\n    capture: [a]\n",
                    "fixture_stripped");
  CHECK(expr.status == 1);
  CHECK(expr.err.find("error[type-too-large]") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir2 + "/out"));
}

TEST_CASE("interfaces and errors in stripped binaries are named from the runtime's type descriptors") {
  // main.Check(err error, v any) error, declared: the dynamic types come from the binary's own
  // moduledata.types (no DWARF, no symbols), and must be what the program says it passed, value for
  // value, in a stripped executable and in a stripped PIE (descriptors at their load address).
  e2e::require_bpf();
  for (const char *binary : {"fixture_stripped", "fixture_pie_stripped", "fixture_386_stripped"}) {
    CAPTURE(binary);
    std::string dir = e2e::temp_dir(std::string("stripped-iface-") + binary);
    auto built = build(dir,
                       "probes:\n"
                       "  - function: main.Check\n"
                       "    params: [{name: err, type: error}, {name: v, type: any}]\n"
                       "    results: [{name: res, type: error}]\n"
                       "    capture: [err, v]\n"
                       "    return: true\n",
                       binary);
    INFO(built.err);
    REQUIRE(built.status == 0);
    auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                            dir + "/truth.jsonl", "-rounds", "6"});
    INFO(traced.err);
    REQUIRE(traced.status == 0);
    std::vector<json> want_args, want_results, args, results;
    for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
      if (t["function"] == "main.Check")
        want_args.push_back(t["args"]);
      if (t["function"] == "main.Check:return")
        want_results.push_back(json{{"res", t["args"]["~r0"]}});
    }
    for (auto &e : e2e::json_lines(traced.out)) {
      if (e["function"] != "main.Check")
        continue;
      (e["kind"] == "entry" ? args : results).push_back(e["kind"] == "entry" ? e["args"] : e["results"]);
    }
    REQUIRE(want_args.size() == 6);
    REQUIRE(args.size() == want_args.size());
    REQUIRE(results.size() == want_results.size());
    size_t named = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      CHECK(args[i] == want_args[i]);
      CHECK(results[i] == want_results[i]);
      for (const json *v : {&args[i]["err"], &args[i]["v"], &results[i]["res"]})
        named += v->is_object() && (*v)["type"].is_string();
    }
    CHECK(named == 14); // per 3 rounds: 2 errors, 3 values, 2 results; nil otherwise
  }
}
