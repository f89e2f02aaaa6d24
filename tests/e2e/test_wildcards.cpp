// End to end, for real: a wildcard over a package becomes one probe per function, each call gives
// an entry and a return event, and the limits and exclusions say what they did.
#include "harness.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <set>

using nlohmann::json;

TEST_CASE("main.* probes every function of the package, entries and returns paired") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("wildcard");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/wildcard.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  std::set<std::string> probed;
  for (const auto &p : manifest["probes"])
    probed.insert(p["function"]);
  // Exactly the functions the fixture defines, less the excluded ones and main.addr, which the
  // compiler inlined everywhere (no body, nothing to probe).
  std::set<std::string> expected = {"main.Ints",       "main.SpillOver",   "main.Strings",    "main.Pointers",
                                    "main.ByValue",    "main.Nested",      "main.(*Server).Handle",
                                    "main.Server.Describe", "main.Floats", "main.Lookup",     "main.Divmod",
                                    "main.Deep",       "main.Collections", "main.Callback",   "main.Check",
                                    "main.Sleepy",     "main.MayPanic",    "main.Leaf",       "main.CallChain",
                                    "main.str"};
  CHECK(probed == expected);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture("fixture"), "-truth",
                          dir + "/truth.jsonl", "-rounds", "2", "-deep", "20", "-sleepers", "1"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::map<std::string, int> entries, returns;
  for (const auto &e : e2e::json_lines(traced.out))
    (e["kind"] == "entry" ? entries : returns)[e["function"]]++;
  for (const auto &f : expected) {
    CAPTURE(f);
    CHECK(entries[f] > 0);
    if (f != "main.MayPanic") // its odd calls panic and never return
      CHECK(entries[f] == returns[f]);
  }
  CHECK(entries["main.MayPanic"] == 6);
  CHECK(returns["main.MayPanic"] == 3);
  CHECK(entries["main.Ints"] == 2);
  CHECK(entries["main.Deep"] == 21);
}

TEST_CASE("wildcards: no match, too many matches, and runtime functions only when named") {
  std::string dir = e2e::temp_dir("wildcard-errors");
  auto run_spec = [&](const std::string &text) {
    std::ofstream(dir + "/spec.yaml") << text;
    return e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  };
  auto none = run_spec("probes:\n  - function: 'main.Nothing*'\n");
  CHECK(none.status == 1);
  CHECK(none.err.find("error[no-match]") != std::string::npos);
  auto many = run_spec("probes:\n  - function: 'main.*'\noptions: {max_functions: 3}\n");
  CHECK(many.status == 1);
  CHECK(many.err.find("error[too-many-functions]") != std::string::npos);
  CHECK(many.err.find("the limit is 3") != std::string::npos);
  // *.Describe matches main.Server.Describe but not the runtime's own functions.
  auto runtime = run_spec("probes:\n  - function: '*mallocgc'\n");
  CHECK(runtime.status == 1);
  CHECK(runtime.err.find("error[no-match]") != std::string::npos);
  auto named = run_spec("probes:\n  - function: 'runtime.mallocgc*'\n");
  INFO(named.err);
  CHECK(named.status == 0);
}

TEST_CASE("'*' matches Go functions only: the runtime's package-less assembly helpers only when named") {
  std::string dir = e2e::temp_dir("wildcard-star");
  auto run_spec = [&](const std::string &name, const std::string &text) {
    std::ofstream(dir + "/" + name + ".yaml") << text;
    return e2e::run({e2e::weave(), "build", dir + "/" + name + ".yaml", e2e::fixture("fixture"), "-o",
                     dir + "/" + name});
  };
  auto star = run_spec("star", "probes:\n  - function: '*'\n");
  INFO(star.err);
  REQUIRE(star.status == 0);
  std::set<std::string> probed;
  json manifest = json::parse(e2e::read_file(dir + "/star/probes.json"));
  for (const auto &p : manifest["probes"])
    probed.insert(p["function"]);
  CHECK(probed.count("main.Ints") == 1);
  for (const std::string &name : probed) {
    CAPTURE(name);
    CHECK(name.find('.') != std::string::npos);
  }
  // Probes that capture nothing read no parameter, so no signature can be wrong for them.
  CHECK(star.err.find("signature-mismatch") == std::string::npos);
  CHECK(star.err.find("warning") == std::string::npos);
  // Named, a helper is probed; a pattern that starts with its name opts in to them.
  auto exact = run_spec("exact", "probes:\n  - function: aeshashbody\n");
  INFO(exact.err);
  CHECK(exact.status == 0);
  auto helpers = run_spec("helpers", "probes:\n  - function: 'memeq*'\n");
  INFO(helpers.err);
  CHECK(helpers.status == 0);
}

TEST_CASE("an exact generic shape name is that function, though its brackets look like a glob") {
  std::string dir = e2e::temp_dir("wildcard-generic-exact");
  auto funcs = e2e::run({e2e::weave(), "funcs", e2e::fixture("generics"), "main.Sum*"});
  REQUIRE(funcs.status == 0);
  std::string shape = funcs.out.substr(0, funcs.out.find_first_of(" \n"));
  REQUIRE(shape.find("main.Sum[go.shape.") == 0);
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: '" << shape << "'\n    capture: [scale]\n";
  auto built = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("generics"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  REQUIRE(manifest["probes"].size() == 1);
  CHECK(manifest["probes"][0]["function"] == shape);
}

TEST_CASE("wildcards leave out compiler-generated wrappers, which go tool objdump files under <autogenerated>") {
  std::string dir = e2e::temp_dir("wildcard-generated");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: 'cmd/internal/objabi.*'\n    return: true\n";
  auto built = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("compile_amd64"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::set<std::string> probed;
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  for (const auto &p : manifest["probes"])
    probed.insert(p["function"]);
  // Go's own listing says which functions the compiler wrote ("TEXT name(SB) <autogenerated>").
  auto objdump = e2e::run({WEAVE_GO, "tool", "objdump", "-s", "^cmd/internal/objabi\\.", e2e::fixture("compile_amd64")});
  REQUIRE(objdump.status == 0);
  size_t generated = 0, written = 0;
  std::istringstream lines(objdump.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("TEXT ", 0) != 0)
      continue;
    std::string name = line.substr(5, line.find("(SB)") - 5);
    CAPTURE(name);
    if (line.find("<autogenerated>") != std::string::npos) {
      ++generated;
      CHECK(probed.count(name) == 0);
    } else if (probed.count(name)) {
      ++written;
    }
  }
  CHECK(generated >= 5);
  CHECK(written >= 20);
  // Nothing was left out with a warning: the wrappers are not matched at all.
  CHECK(built.err.find("left out") == std::string::npos);
}

TEST_CASE("more events than the tracer can count: a clear error at build time, nothing written") {
  std::string dir = e2e::temp_dir("wildcard-events");
  // Five patterns over the ~7,900 functions of cmd/*, entry and return: ~79,000 events.
  std::ofstream spec(dir + "/spec.yaml");
  spec << "probes:\n";
  for (int i = 0; i < 5; ++i)
    spec << "  - {function: 'cmd/*', return: true, name: copy" << i << "}\n";
  spec << "options: {max_functions: 20000}\n";
  spec.close();
  auto r = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("compile_amd64"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("error[too-many-events]") != std::string::npos);
  CHECK(r.err.find("weave supports at most 65536") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
}
