// End to end, for real: source-line probes (line: FILE:LINE) on tests/e2e/lines, whose functions
// record their own locals on the probed lines. Every value the tracer shows is compared with what
// the program recorded; every value it shows as unavailable must carry a reason in the manifest,
// and is counted by reason.
#include "harness.h"
#include "same_stack.h"

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

using nlohmann::json;

namespace {

// The line of tests/e2e/lines/main.go holding `text`.
int source_line(const std::string &text) { return e2e::source_line_holding("tests/e2e/lines/main.go", text); }

std::string spec_text_with_values();

// Every probe with stack: 10; a stripped binary's without values (nothing locates them there).
std::string spec_text(bool stripped) {
  std::string text = spec_text_with_values();
  if (!stripped)
    return text;
  std::istringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.find("capture:") == std::string::npos && line.find("locals:") == std::string::npos)
      out += line + "\n";
  return out;
}

std::string spec_text_with_values() {
  return fmt::format(R"(probes:
  - name: loop
    line: lines/main.go:{}
    capture: [i, sum, n]
    stack: 10
  - name: structs
    line: lines/main.go:{}
    capture: [p.X, p.Y, p.Name, q, k]
    stack: 10
  - name: build
    line: lines/main.go:{}
    function: main.build
    capture: [s, k]
    stack: 10
  - name: shadow
    line: lines/main.go:{}
    locals: all
    stack: 10
  - name: framed
    line: lines/main.go:{}
    capture: [p.X, p.Y, p.Name, n]
    stack: 10
  - name: twice
    line: lines/main.go:{}
    locals: all
    stack: 10
)",
                     source_line("// probe: loop"), source_line("// probe: structs"),
                     source_line("// probe: build"), source_line("// probe: shadow"),
                     source_line("// probe: framed"), source_line("// probe: twice"));
}

struct Counts {
  size_t compared = 0;
  size_t goroutines = 0; // events whose goroutine and stack were compared
  std::map<std::string, size_t> unavailable; // by reason
};

// A stripped binary (no DWARF): the same probes without values, each event's goroutine and stack
// still compared with the program's own, and the count of events with its count of runs.
Counts trace_and_compare(const std::string &binary, bool stripped = false) {
  std::string dir = e2e::temp_dir("lines-" + binary);
  std::ofstream(dir + "/spec.yaml") << spec_text(stripped);
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  // Said once, however many line probes there are.
  const std::string said = "has no DWARF: line probes map lines to PCs through .gopclntab and read no locals";
  size_t at = built.err.find(said);
  CHECK((at != std::string::npos) == stripped);
  if (at != std::string::npos)
    CHECK(built.err.find(said, at + 1) == std::string::npos);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  // (probe name, pc) -> the manifest's reason for each capture it cannot read there.
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>> reasons;
  std::map<std::string, size_t> pcs_per_probe;
  // (probe name, pc) -> the program's records it must match: a copy of the line inlined into
  // another function is recorded by that caller, as "twice:main.callA".
  std::map<std::pair<std::string, std::string>, std::string> truth_key;
  for (const json &p : manifest["probes"]) {
    if (!p.contains("line"))
      continue;
    REQUIRE(p["kind"] == "entry");
    std::string pc = fmt::format("{:#x}", p["line"]["pc"].get<uint64_t>());
    pcs_per_probe[p["name"]]++;
    auto &r = reasons[{p["name"], pc}];
    truth_key[{p["name"], pc}] = p["line"]["inlined"].get<bool>()
                                     ? p["name"].get<std::string>() + ":" + p["line"]["physical"].get<std::string>()
                                     : p["name"].get<std::string>();
    for (const json &c : p["captures"])
      if (c.contains("unavailable"))
        r[c["expr"]] = c["unavailable"];
  }
  CHECK(pcs_per_probe.size() == 6);
  CHECK(pcs_per_probe["twice"] == 2); // inlined into callA and callB
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "4"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  // Each record of a line's locals, with the goroutine and the callers of its function from the
  // "called" record its call is followed by.
  std::map<std::string, std::vector<json>> truth, where;
  std::map<std::string, size_t> placed;
  for (const json &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    if (t.contains("called")) {
      std::vector<json> &hits = truth[t["called"]];
      for (size_t &i = placed[t["called"]]; i < hits.size(); ++i)
        where[t["called"]].push_back(t);
      continue;
    }
    truth[t["probe"]].push_back(t["locals"]);
  }
  REQUIRE(truth.size() == 7);
  for (const auto &[probe, hits] : truth)
    REQUIRE(where[probe].size() == hits.size());
  std::map<std::pair<std::string, std::string>, std::vector<json>> events;
  std::istringstream lines(traced.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("{"))
      continue;
    json e = json::parse(line);
    REQUIRE(e["kind"] == "line");
    CHECK(e["file"].get<std::string>().ends_with("lines/main.go"));
    events[{e["probe"], e["pc"]}].push_back(e);
  }
  Counts counts;
  // Every PC of a line runs once per pass over it: its events are the program's records, in order.
  for (const auto &[key, reason] : reasons) {
    const auto &[probe, pc] = key;
    CAPTURE(probe);
    CAPTURE(pc);
    const std::vector<json> &seen = events[key];
    const std::vector<json> &want = truth[truth_key[key]];
    const std::vector<json> &ran = where[truth_key[key]];
    CAPTURE(truth_key[key]);
    CHECK(!want.empty());
    REQUIRE(seen.size() == want.size());
    for (size_t i = 0; i < seen.size(); ++i) {
      CAPTURE(i);
      CHECK(seen[i]["line"] == source_line("// probe: " + probe));
      if (probe == "twice")
        CHECK(seen[i]["inlined_into"]["function"] == truth_key[key].substr(6));
      // The goroutine the program says ran the call, and its callers, whole.
      CHECK(seen[i]["goid"] == ran[i]["goid"]);
      e2e::check_same_stack(seen[i]["stack"], ran[i]["stack"], e2e::fixture(binary));
      counts.goroutines++;
      if (stripped) {
        CHECK((!seen[i].contains("locals") || seen[i]["locals"].empty()));
        continue;
      }
      const json &locals = seen[i]["locals"];
      // Every local the program records is shown, and nothing it does not record.
      CHECK(locals.size() == want[i].size());
      for (const auto &[name, value] : want[i].items()) {
        CAPTURE(name);
        REQUIRE(locals.contains(name));
        if (locals[name].is_null()) {
          auto it = reason.find(name);
          REQUIRE(it != reason.end()); // unavailable, never without a reason
          CHECK(!it->second.empty());
          counts.unavailable[it->second]++;
          continue;
        }
        CHECK(locals[name] == value);
        counts.compared++;
      }
    }
  }
  return counts;
}

void report(const std::string &binary, const Counts &c) {
  MESSAGE(binary << ": " << c.compared << " values compared");
  for (const auto &[reason, n] : c.unavailable)
    MESSAGE(binary << ": " << n << " unavailable: " << reason);
}

std::string build_error(const std::string &name, const std::string &spec) {
  std::string dir = e2e::temp_dir("lines-" + name);
  std::ofstream(dir + "/spec.yaml") << spec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("lines"), "-o", dir + "/out"});
  CHECK(built.status != 0);
  return built.err;
}

} // namespace

TEST_CASE("a line probe reads each local where DWARF puts it at the line's PCs, value for value") {
  e2e::require_bpf();
  Counts c = trace_and_compare("lines");
  report("lines", c);
  // The pinned Go builds the same binary everywhere: 62 values located and equal to the program's,
  // 44 unavailable (each with its reason, counted above) over 4 rounds.
  CHECK(c.compared == 62);
  size_t unavailable = 0;
  for (const auto &[reason, n] : c.unavailable)
    unavailable += n;
  CHECK(unavailable == 44);
}

TEST_CASE("a 386 line probe reads each local where DWARF puts it, value for value") {
  e2e::require_bpf();
  // 386 code keeps its values on the stack more than amd64's; registers by the i386 numbering.
  Counts c = trace_and_compare("lines_386");
  report("lines_386", c);
  CHECK(c.compared > 0);
}

TEST_CASE("a stripped binary's line probes map the line through .gopclntab: every run counted, its goroutine and stack") {
  e2e::require_bpf();
  // The same PCs as DWARF's statement starts: one event per run of the line, as the program counts.
  for (const char *binary : {"lines_stripped", "lines_386_stripped"}) {
    CAPTURE(binary);
    Counts c = trace_and_compare(binary, true);
    MESSAGE(std::string(binary) << ": " << c.goroutines << " events, each with the program's goroutine and stack");
    CHECK(c.compared == 0);
    CHECK(c.goroutines > 0);
  }
}

TEST_CASE("a stripped binary's line probe refuses a local by name, and weave funcs --line lists its PCs") {
  std::string dir = e2e::temp_dir("lines-stripped-local");
  int loop = source_line("// probe: loop");
  std::ofstream(dir + "/spec.yaml") << fmt::format("probes:\n  - line: lines/main.go:{}\n    capture: [i]\n", loop);
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("lines_stripped"), "-o", dir + "/out"});
  CHECK(built.status != 0);
  CHECK(built.err.find("[no-dwarf-locals]") != std::string::npos);
  CHECK(built.err.find("spec.yaml:3:") != std::string::npos); // at the capture
  CHECK(built.err.find("capture: i cannot be read") != std::string::npos);
  std::ofstream(dir + "/when.yaml") << fmt::format("probes:\n  - line: lines/main.go:{}\n    when: 'i > 1'\n", loop);
  built = e2e::run({e2e::weave(), dir + "/when.yaml", e2e::fixture("lines_stripped"), "-o", dir + "/out"});
  CHECK(built.status != 0);
  CHECK(built.err.find("[no-dwarf-locals]") != std::string::npos);
  // Both builds list as many PCs for each probed line, in the same functions and copies: one per
  // start of the line (.gopclntab's runs that only continue the line are left out, as DWARF leaves
  // them without is_stmt). A PC itself may differ: a run's first instruction can precede DWARF's
  // statement mark (a NOP before main.build's line).
  auto without_pcs = [](const std::string &text, bool stripped) {
    static const std::regex pc(" pc 0x[0-9a-f]+ ");
    std::string out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
      if (!l.starts_with("  "))
        out += std::regex_replace(l, pc, " pc ? ") + (stripped ? "\n" : " (no DWARF: no locals)\n");
    return out;
  };
  for (const char *line :
       {"// probe: loop", "// probe: structs", "// probe: build", "// probe: shadow", "// probe: framed", "// probe: twice"}) {
    CAPTURE(line);
    std::string where = fmt::format("lines/main.go:{}", source_line(line));
    for (const auto &[with_dwarf, stripped] :
         {std::pair<std::string, std::string>{"lines", "lines_stripped"}, {"lines_386", "lines_386_stripped"}}) {
      auto with = e2e::run({e2e::weave(), "funcs", e2e::fixture(with_dwarf), "--line", where});
      auto without = e2e::run({e2e::weave(), "funcs", e2e::fixture(stripped), "--line", where});
      REQUIRE(with.status == 0);
      REQUIRE(without.status == 0);
      CHECK(without_pcs(without.out, true) == without_pcs(with.out, false));
    }
  }
}

TEST_CASE("line probes refuse an ambiguous file, a variable out of scope, and say which") {
  // fmt/print.go and runtime/print.go both end in print.go.
  std::string err = build_error("ambiguous", "probes:\n  - line: print.go:100\n");
  CHECK(err.find("[ambiguous-line-file]") != std::string::npos);
  CHECK(err.find("fmt/print.go") != std::string::npos);
  CHECK(err.find("runtime/print.go") != std::string::npos);
  // q is declared on the line after the struct's: not in scope there, and named.
  int decl = source_line("p := point{");
  err = build_error("scope", fmt::format("probes:\n  - line: lines/main.go:{}\n    capture: [k, q]\n", decl));
  CHECK(err.find("[not-in-scope]") != std::string::npos);
  CHECK(err.find(fmt::format("q is not in scope at weave.test/lines/main.go:{} (it is declared at line {}, after it)",
                             decl, decl + 1)) != std::string::npos);
  CHECK(err.find("nosuch") == std::string::npos);
  err = build_error("unknown", fmt::format("probes:\n  - line: lines/main.go:{}\n    capture: [nosuch]\n",
                                           source_line("// probe: loop")));
  CHECK(err.find("nosuch is not in scope") != std::string::npos);
  CHECK(err.find("in scope there: ") != std::string::npos);
  // A suffix no file has, and a line with no code.
  err = build_error("nofile", "probes:\n  - line: nosuch.go:3\n");
  CHECK(err.find("[unknown-line-file]") != std::string::npos);
  err = build_error("nocode", "probes:\n  - line: lines/main.go:1\n");
  CHECK(err.find("[no-code-at-line]") != std::string::npos);
}

TEST_CASE("when: on a line probe's locals is decided in BPF, and the text output names the line") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("lines-when");
  std::ofstream(dir + "/spec.yaml") << fmt::format("probes:\n  - line: lines/main.go:{}\n    capture: [s, k]\n"
                                                   "    when: 'k > 7'\n",
                                                   source_line("// probe: build"));
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("lines"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--", e2e::fixture("lines"), "-truth", dir + "/truth.jsonl",
                          "-rounds", "4"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  // The program's own builds with k > 7, in order, as the text output shows them.
  std::string want;
  for (const json &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["probe"] == "build" && t["locals"]["k"].get<int>() > 7)
      want += fmt::format("main.build at main.go:{}(s=\"{}\", k={})\n", source_line("// probe: build"),
                          t["locals"]["s"].get<std::string>(), t["locals"]["k"].get<int>());
  REQUIRE(!want.empty());
  std::string got;
  std::istringstream lines(traced.out);
  for (std::string line; std::getline(lines, line);)
    if (size_t at = line.find("main.build at "); at != std::string::npos)
      got += line.substr(at) + "\n";
  CHECK(got == want);
}

TEST_CASE("weave funcs --line lists the PCs and where each local is, and weave trace FILE:LINE probes the line") {
  e2e::require_bpf();
  auto listed = e2e::run({e2e::weave(), "funcs", e2e::fixture("lines"), "--line",
                          fmt::format("lines/main.go:{}", source_line("// probe: twice"))});
  INFO(listed.err);
  REQUIRE(listed.status == 0);
  CHECK(listed.out.find(" in main.twice (inlined into main.callA)\n  v int: SP+40\n  w int: unavailable: ") !=
        std::string::npos);
  CHECK(listed.out.find(" in main.twice (inlined into main.callB)\n") != std::string::npos);
  listed = e2e::run({e2e::weave(), "funcs", e2e::fixture("lines"), "--line",
                     fmt::format("lines/main.go:{}", source_line("// probe: loop"))});
  CHECK(listed.out.find("  sum int: unavailable: code of line " + std::to_string(source_line("sum += i * 3")) +
                        " runs inside this line's") != std::string::npos);

  std::string dir = e2e::temp_dir("lines-trace");
  auto traced = e2e::run({"env", "XDG_CACHE_HOME=" + dir + "/cache", e2e::weave(), "trace", "--format", "json",
                          e2e::fixture("lines"), fmt::format("lines/main.go:{}", source_line("// probe: framed")),
                          "--", "-truth", dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> want;
  for (const json &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    if (t["probe"] == "framed")
      want.push_back(t["locals"]);
  std::vector<json> seen;
  std::istringstream lines(traced.out);
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("{"))
      seen.push_back(json::parse(line)["locals"]);
  REQUIRE(seen.size() == want.size());
  REQUIRE(seen.size() == 3);
  // Every local (locals: all): the struct whole, the int it computed.
  for (size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i]["p"]["X"] == want[i]["p.X"]);
    CHECK(seen[i]["p"]["Y"] == want[i]["p.Y"]);
    CHECK(seen[i]["p"]["Name"] == want[i]["p.Name"]);
    CHECK(seen[i]["n"] == want[i]["n"]);
  }
}

// Last: without a newer Go it exits with ctest's skip code.
TEST_CASE("line probes on the same program built by a newer Go") {
  e2e::require_bpf();
  if (!std::filesystem::exists(e2e::fixture("lines_newer"))) {
    MESSAGE("skipped: no newer Go than the pinned one to build the fixture with (WEAVE_GO_NEWER)");
    std::exit(77);
  }
  Counts c = trace_and_compare("lines_newer");
  report("lines_newer", c);
  CHECK(c.compared > 0);
}
