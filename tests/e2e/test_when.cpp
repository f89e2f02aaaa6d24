// End to end, for real: a probe's `when:` condition is compiled into its entry program, so only
// the calls where it holds reach the tracer, with their returns; the fixture records every call's
// values, and the events must be exactly the calls whose recorded values satisfy the condition.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <sstream>

using nlohmann::json;

namespace {

const char *kSpec = R"(probes:
  - function: main.(*Server).Handle
    when: 'req.Header.Port >= 8081 && startsWith(req.Path, "/api/v") && !(s.Hits == 3) && deadline < -16'
    capture: [s.Name]
    return: true
  - function: main.Nested
    when: r.Path == "/api/v1" || r.Header.Port == 8083 || r.Hdr.ID < -400
)";

// The same conditions, evaluated here on what the program recorded it passed.
bool handle_passes(const json &a) {
  std::string path = a["req.Path"];
  return a["req.Header.Port"].get<int>() >= 8081 && path.rfind("/api/v", 0) == 0 && a["s.Hits"] != 3 &&
         a["deadline"].get<int64_t>() < -16;
}
bool nested_passes(const json &a) {
  return a["r.Path"] == "/api/v1" || a["r.Header.Port"] == 8083 || a["r.Hdr.ID"].get<int>() < -400;
}

// The --stats table at exit, by "probe kind" and column name.
std::map<std::string, std::map<std::string, long long>> stats_rows(const std::string &err) {
  std::map<std::string, std::map<std::string, long long>> rows;
  size_t at = err.find("weave: stats at exit");
  if (at == std::string::npos)
    return rows;
  std::istringstream lines(err.substr(at));
  std::string line;
  std::getline(lines, line); // the title
  std::vector<std::string> header;
  while (std::getline(lines, line)) {
    std::istringstream words(line.substr(std::min(line.size(), line.find(':') + 1)));
    std::vector<std::string> cells;
    for (std::string w; words >> w;)
      cells.push_back(w);
    if (header.empty()) {
      header = cells;
      continue;
    }
    if (cells.size() != header.size() || cells[0] == "total")
      break;
    for (size_t i = 3; i < cells.size(); ++i)
      rows[cells[0] + " " + cells[1]][header[i]] = cells[i] == "-" ? -1 : std::stoll(cells[i]);
  }
  return rows;
}

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
  auto built = build(dir, kSpec, binary);
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--stats", "--format", "json", "--", e2e::fixture(binary),
                          "-truth", dir + "/truth.jsonl", "-rounds", "8"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::map<std::string, std::vector<json>> want, got;
  std::map<std::string, int> calls, returns;
  const std::map<std::string, std::function<bool(const json &)>> passes = {{"main.(*Server).Handle", handle_passes},
                                                                           {"main.Nested", nested_passes}};
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    auto p = passes.find(t["function"]);
    if (p == passes.end())
      continue;
    ++calls[p->first];
    if (p->second(t["args"]))
      want[p->first].push_back(t["args"]);
  }
  for (auto &e : e2e::json_lines(traced.out)) {
    if (e["kind"] == "return") {
      ++returns[e["function"]];
      CHECK(e["duration_ns"].get<uint64_t>() > 0); // every return shown has its entry
      continue;
    }
    json args;
    for (auto &[key, value] : e["args"].items())
      args[key] = value;
    got[e["function"]].push_back(args);
  }
  CHECK(calls["main.(*Server).Handle"] == 8);
  CHECK(calls["main.Nested"] == 8);
  for (const auto &[function, expected] : want) {
    CAPTURE(function);
    REQUIRE(got[function].size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      for (auto &[key, value] : got[function][i].items()) {
        CAPTURE(key);
        CHECK(value == expected[i][key]); // every value the condition read is shown, and true
      }
  }
  CHECK(want["main.(*Server).Handle"].size() == 5); // rounds 2, 4, 5, 6, 7
  CHECK(want["main.Nested"].size() == 5);           // rounds 1, 3, 5, 6, 7
  CHECK(returns["main.(*Server).Handle"] == 5);      // the returns of the calls shown, no others
  CHECK(returns.count("main.Nested") == 0);
  // --stats accounts for every run: hits == events + lost + filtered, per probe.
  std::map<std::string, std::map<std::string, long long>> stats = stats_rows(traced.err);
  auto &handle = stats["main.(*Server).Handle entry"];
  CHECK(handle["hits"] == 8);
  CHECK(handle["events"] == 5);
  CHECK(handle["filtered"] == 3);
  auto &handle_ret = stats["main.(*Server).Handle return"];
  CHECK(handle_ret["events"] == 5);
  CHECK(handle_ret["filtered"] == handle_ret["hits"] - 5); // returns of the calls it dropped
  auto &nested = stats["main.Nested entry"];
  CHECK(nested["hits"] == 8);
  CHECK(nested["filtered"] == 3);
  for (auto &[row, cells] : stats) {
    CAPTURE(row);
    CHECK(cells["hits"] == cells["events"] + cells["lost"] + cells["filtered"]);
  }
  CHECK(traced.err.find("!=") == std::string::npos); // no probe's numbers fail to add up
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
