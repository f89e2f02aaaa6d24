// End to end, for real: a program whose package init is made of inlined constructor calls
// (tests/e2e/initinline: the pattern of go.opentelemetry.io/otel/semconv, so of Caddy and etcd),
// built with Go 1.21+. The compiler writes those copies' inline records with parent PC 0, inside the
// records themselves. weave must list every function, probe an exactly named constructor with
// default settings, and count every call the program made, at the init's copies and at main's.
#include "harness.h"

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

using nlohmann::json;

namespace {

constexpr const char *kConstructor = "initinline/kv.Key.Int";
constexpr const char *kInit = "initinline/sem.init";

// Go 1.26 (WEAVE_GO_NEWER) builds the fixture unless the version matrix names a toolchain (1.21+): the
// pinned Go 1.19 does not inline package initializers this way.
std::string binary() { return e2e::fixture("initinline"); }

} // namespace

TEST_CASE("weave funcs lists every function of a binary whose init holds inlined constructors") {
  auto names = e2e::run({e2e::weave(), "funcs", "--names", binary()});
  INFO(names.err);
  REQUIRE(names.status == 0);
  auto listed = e2e::run({e2e::weave(), "funcs", binary(), "*"});
  INFO(listed.err);
  REQUIRE(listed.status == 0);
  CHECK(listed.err.find("bad-pclntab") == std::string::npos);
  CHECK(listed.err.find("truncated or modified") == std::string::npos);
  // Every function .gopclntab names that DWARF describes is listed (DWARF leaves out a few
  // assembly helpers the linker adds), and the init among them.
  std::set<std::string> shown;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != ' ')
      shown.insert(line.substr(0, line.find("  ")));
  std::istringstream all(names.out);
  size_t total = 0, missing = 0;
  for (std::string name; std::getline(all, name);) {
    ++total;
    if (!shown.count(name) && name.rfind("main.", 0) != 0 && name.rfind("initinline/", 0) != 0)
      continue; // runtime assembly without DWARF
    CAPTURE(name);
    CHECK(shown.count(name) == 1);
    missing += !shown.count(name);
  }
  CHECK(shown.count(kInit) == 1);
  // The constructor's copies, those in the init among them.
  CHECK(listed.out.find(std::string(kConstructor) + "  inlined copies:") != std::string::npos);
  CHECK(listed.out.find(std::string("(in ") + kInit + ")") != std::string::npos);
  // Go 1.21 to 1.26 write the records this test is about (checked: 1.21.13, 1.26.8).
  CHECK(listed.out.find("(call site not recorded)") != std::string::npos);
  MESSAGE(fmt::format("{} functions in .gopclntab, {} missing from the listing", total, missing));
}

TEST_CASE("an exactly named constructor inlined into a package init is traced with default settings") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("initinline");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: " << kConstructor << "\n    args: all\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", binary(), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(built.err.find("bad-pclntab") == std::string::npos);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", binary(), "-truth", dir + "/truth.jsonl",
                          "-rounds", "4"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  std::map<std::string, std::vector<json>> calls; // site -> the argument of each call, in order
  for (const json &c : truth)
    calls[c["site"]].push_back(c["v"]);
  REQUIRE(calls["init"].size() == 3);
  REQUIRE(calls["main"].size() == 4);
  std::map<std::string, std::vector<json>> seen; // the physical function each event's copy is in
  std::istringstream lines(traced.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("{"))
      continue;
    json e = json::parse(line);
    REQUIRE(e["function"] == kConstructor);
    REQUIRE(e["kind"] == "entry");
    std::string caller = e.contains("inlined_into") ? e["inlined_into"]["function"].get<std::string>() : "";
    // main's copy is called from main.main; the init's name the init, whose call sites are not
    // recorded.
    seen[caller == kInit ? "init" : caller == "main.main" ? "main" : "elsewhere: " + caller].push_back(e);
  }
  // Every call exactly once, at the copy in the function the program made it from.
  CHECK(seen.size() == 2);
  size_t compared = 0, unavailable = 0;
  for (const char *site : {"init", "main"}) {
    CAPTURE(site);
    REQUIRE(seen[site].size() == calls[site].size());
    for (size_t i = 0; i < calls[site].size(); ++i) {
      const json &e = seen[site][i];
      std::set<std::string> marked;
      if (e.contains("unavailable"))
        for (const json &name : e["unavailable"])
          marked.insert(name.get<std::string>());
      for (const auto &[name, want] : {std::pair<std::string, json>{"v", calls[site][i]}, {"k", json("rpc.code")}}) {
        CAPTURE(name);
        REQUIRE(e["args"].contains(name));
        if (e["args"][name].is_null()) {
          CHECK(marked.count(name) == 1); // never a silent null
          ++unavailable;
        } else {
          CHECK(e["args"][name] == want);
          ++compared;
        }
      }
    }
  }
  MESSAGE(fmt::format("{} calls (init {}, main {}), {} values compared, {} unavailable", truth.size(),
                      calls["init"].size(), calls["main"].size(), compared, unavailable));
}
