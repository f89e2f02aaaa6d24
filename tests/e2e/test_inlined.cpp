// End to end, for real: probes on functions the compiler inlined (tests/e2e/inline). Each call the
// program makes is written to its truth file; the tracer must see every one exactly once, at the
// out-of-line body or at an inlined copy named after its caller, with each argument it shows equal
// to what the program passed, and the ones DWARF does not locate marked unavailable.
#include "harness.h"

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <map>
#include <set>

using nlohmann::json;

namespace {

const char *kSpec = R"(probes:
  - function: main.add
    args: all
  - function: main.mid
    args: all
  - function: main.label
    args: all
  - function: main.min
    args: all
)";

// The caller an inlined copy is named after, for each call site the program records ("" for the
// out-of-line body, reached through the func value).
std::string site_caller(const std::string &function, const std::string &site) {
  if (site == "indirect")
    return "";
  if (site == "main")
    return "main.main";
  if (function == "main.add" && site == "nested")
    return "main.mid"; // add is inlined into mid, which is inlined into nested
  return "main." + site;
}

struct Traced {
  std::vector<json> truth, events;
  std::map<std::string, size_t> counts; // what the program printed: calls per function
  std::string err;
};

Traced trace(const std::string &dir, const std::string &binary, const std::string &spec, int rounds,
             const std::string &format = "json") {
  std::ofstream(dir + "/spec.yaml") << spec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  Traced t;
  t.err = built.err;
  auto traced = e2e::run({dir + "/out/tracer", "--format", format, "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", std::to_string(rounds)});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  t.truth = e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"));
  // The program's own output shares stdout with the events: "calls main.add 12" is its count.
  std::istringstream lines(traced.out);
  std::string events;
  for (std::string line; std::getline(lines, line);) {
    char function[64];
    size_t n = 0;
    if (std::sscanf(line.c_str(), "calls %63s %zu", function, &n) == 2)
      t.counts[function] = n;
    else if (line.starts_with("{"))
      events += line + "\n";
  }
  if (format == "json") {
    for (json &e : e2e::json_lines(events))
      if (e.contains("function"))
        t.events.push_back(std::move(e));
  } else {
    t.err += traced.out;
  }
  // The truth file and the program's counts agree (a check of the fixture itself).
  std::map<std::string, size_t> recorded;
  for (const json &c : t.truth)
    recorded[c["function"]]++;
  CHECK(recorded == t.counts);
  return t;
}

// The line of tests/e2e/inline/main.go holding `text`.
int source_line(const std::string &text) { return e2e::source_line_holding("tests/e2e/inline/main.go", text); }

// The call each copy stands for, as written in the program.
const std::map<std::pair<std::string, std::string>, std::string> kCallText = {
    {{"main.add", "main.loop1"}, "s += add(i, 1)"},     {{"main.add", "main.loop2"}, "s = add(i*3, s)"},
    {{"main.add", "main.mid"}, "return add(x, 7) * 2"}, {{"main.mid", "main.nested"}, "s ^= mid(i + 10)"},
    {{"main.label", "main.labels"}, "s += label(w, i)"}, {{"main.min", "main.main"}, "min(*rounds, len(words))"},
};

std::string caller_of(const json &event) {
  return event.contains("inlined_into") ? event["inlined_into"]["function"].get<std::string>() : "";
}

} // namespace

TEST_CASE("inlined calls are counted once each, with the arguments DWARF locates") {
  e2e::require_bpf();
  // The executable, and a PIE (loaded elsewhere than its link addresses).
  for (const char *binary : {"inlined", "inlined_pie"}) {
  CAPTURE(binary);
  std::string dir = e2e::temp_dir(std::string("inlined-") + binary);
  Traced t = trace(dir, binary, kSpec, 3);
  INFO(t.err);
  // The program's calls, per (function, caller), in call order; the tracer's the same way.
  std::map<std::pair<std::string, std::string>, std::vector<json>> calls, seen;
  std::map<std::string, size_t> per_function;
  for (const json &c : t.truth) {
    calls[{c["function"], site_caller(c["function"], c["site"])}].push_back(c["args"]);
    per_function[c["function"]]++;
  }
  for (const json &e : t.events) {
    REQUIRE(e["kind"] == "entry"); // no return: true, and copies never emit one
    seen[{e["function"], caller_of(e)}].push_back(e);
  }
  REQUIRE(per_function["main.add"] == 4 * 3);
  REQUIRE(t.counts["main.add"] == 4 * 3);
  REQUIRE(per_function["main.mid"] == 3);
  REQUIRE(per_function["main.label"] == 3);
  REQUIRE(per_function["main.min"] == 1);
  size_t compared = 0, unavailable = 0;
  for (const auto &[key, args] : calls) {
    CAPTURE(key.first);
    CAPTURE(key.second);
    const std::vector<json> &events = seen[key];
    REQUIRE(events.size() == args.size()); // every call exactly once
    for (size_t i = 0; i < args.size(); ++i) {
      const json &e = events[i];
      if (!key.second.empty()) {
        CHECK(e["inlined_into"]["file"].get<std::string>().ends_with("inline/main.go"));
        REQUIRE(kCallText.count(key) == 1);
        CHECK(e["inlined_into"]["line"].get<int>() == source_line(kCallText.at(key)));
      }
      std::set<std::string> marked;
      if (e.contains("unavailable"))
        for (const json &name : e["unavailable"])
          marked.insert(name.get<std::string>());
      for (const auto &[name, value] : args[i].items()) {
        CAPTURE(name);
        REQUIRE(e["args"].contains(name));
        if (e["args"][name].is_null()) {
          CHECK(marked.count(name) == 1); // never a silent null
          CHECK_FALSE(key.second.empty()); // the out-of-line body always has its arguments
          ++unavailable;
        } else {
          CHECK(e["args"][name] == value);
          ++compared;
        }
      }
    }
  }
  // Nothing else was seen: no call counted twice at another place.
  size_t total = 0;
  for (const auto &[key, events] : seen) {
    CAPTURE(key.first);
    CAPTURE(key.second);
    CHECK(calls.count(key) == 1);
    total += events.size();
  }
  CHECK(total == t.truth.size());
  MESSAGE(fmt::format("{}: {} calls, {} argument values compared, {} marked unavailable", binary, total,
                      compared, unavailable));
  CHECK(compared > 0);
  }
}

TEST_CASE("an inlined copy is named after its caller and call site in text") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("inlined-text");
  Traced t = trace(dir, "inlined", "probes:\n  - function: main.label\n    args: all\n  - function: main.add\n    return: true\n", 2,
                   "text");
  INFO(t.err);
  CHECK(t.err.find("main.label [inlined into main.labels at main.go:") != std::string::npos);
  CHECK(t.err.find("main.add [inlined into main.mid at main.go:") != std::string::npos);
  // return: true holds for the out-of-line body; the copies say why they have no returns.
  CHECK(t.err.find("have no RET of their own") != std::string::npos);
  CHECK(t.err.find("\u2190 main.add(") != std::string::npos);
}

TEST_CASE("inlined: false leaves the copies out, and says so") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("inlined-false");
  Traced t = trace(dir, "inlined", "probes:\n  - function: main.add\n    inlined: false\n", 2);
  INFO(t.err);
  CHECK(t.err.find("main.add is also inlined into") != std::string::npos);
  size_t indirect = 0;
  for (const json &c : t.truth)
    indirect += c["site"] == "indirect";
  CHECK(t.events.size() == indirect);
  for (const json &e : t.events)
    CHECK_FALSE(e.contains("inlined_into"));
}

TEST_CASE("a wildcard includes inlined copies only when asked") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("inlined-wildcard");
  Traced t = trace(dir, "inlined", "probes:\n  - function: 'main.l*l'\n    inlined: true\n", 2);
  INFO(t.err);
  size_t labels = 0;
  for (const json &c : t.truth)
    labels += c["function"] == "main.label";
  size_t seen = 0;
  for (const json &e : t.events)
    seen += e["function"] == "main.label" && caller_of(e) == "main.labels";
  CHECK(seen == labels);
}

TEST_CASE("a stripped binary counts inlined calls, without values") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("inlined-stripped");
  Traced t = trace(dir, "inlined_stripped",
                   "probes:\n  - function: main.add\n  - function: main.mid\n  - function: main.label\n"
                   "  - function: main.min\n",
                   3);
  INFO(t.err);
  std::map<std::string, size_t> seen;
  for (const json &e : t.events) {
    seen[e["function"]]++;
    CHECK(e["args"].empty());
  }
  CHECK(seen == t.counts);
  MESSAGE(fmt::format("stripped: main.add {} calls, main.mid {}, main.label {}: all counted", t.counts["main.add"],
                      t.counts["main.mid"], t.counts["main.label"]));
}

TEST_CASE("when: is decided at a copy where its values are located, else the copy is left out") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("inlined-when");
  // main.loop1 keeps the spec buildable where every copy of label is left out.
  Traced t = trace(dir, "inlined",
                   "probes:\n  - function: main.label\n    args: all\n    when: 'n > 0'\n  - function: main.loop1\n", 4);
  INFO(t.err);
  std::erase_if(t.events, [](const json &e) { return e["function"] != "main.label"; });
  std::vector<json> expected;
  for (const json &c : t.truth)
    if (c["function"] == "main.label" && c["args"]["n"].get<int>() > 0)
      expected.push_back(c["args"]);
  if (t.err.find("when: reads a value DWARF does not locate there") != std::string::npos) {
    CHECK(t.events.empty()); // this toolchain's DWARF has no n at the copy (Go 1.21+)
    return;
  }
  REQUIRE(t.events.size() == expected.size());
  REQUIRE(expected.size() == 3);
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(t.events[i]["args"]["n"] == expected[i]["n"]);
    CHECK(t.events[i]["args"]["s"] == expected[i]["s"]);
  }
}

TEST_CASE("more inlined copies than options.max_functions: refused, with what to do") {
  std::string dir = e2e::temp_dir("inlined-limit");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.add\noptions:\n  max_functions: 2\n";
  auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("inlined"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("error[too-many-copies]: main.add is inlined at 3 call sites") != std::string::npos);
  CHECK(r.err.find("inlined: false") != std::string::npos);
}

TEST_CASE("on 386 inlined calls are counted, their values marked unavailable") {
  // Values at copies are read on amd64 only (the CFA rule was checked there); elsewhere a copy is
  // counted and says why its values are missing, never guessed.
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("inlined-386");
  Traced t = trace(dir, "inlined_386", kSpec, 2);
  INFO(t.err);
  std::map<std::string, size_t> seen;
  for (const json &e : t.events) {
    seen[e["function"]]++;
    if (!e.contains("inlined_into"))
      continue;
    for (const auto &[name, value] : e["args"].items()) {
      CHECK(value.is_null());
      CHECK(e["unavailable"].dump().find("\"" + name + "\"") != std::string::npos);
    }
  }
  CHECK(seen == t.counts);
}

TEST_CASE("weave funcs lists inlined copies with their call sites and located parameters") {
  auto r = e2e::run({e2e::weave(), "funcs", e2e::fixture("inlined"), "main.label"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  INFO(r.out);
  CHECK(r.out.find("main.label  inlined copies: 1") != std::string::npos);
  CHECK(r.out.find("  inlined into main.labels at ") != std::string::npos);
  CHECK(r.out.find("inlined parameters located by DWARF: ") != std::string::npos);
  auto stripped = e2e::run({e2e::weave(), "funcs", e2e::fixture("inlined_stripped"), "main.add"});
  INFO(stripped.err);
  REQUIRE(stripped.status == 0);
  CHECK(stripped.out.find("inlined into main.mid at ") != std::string::npos);
}
