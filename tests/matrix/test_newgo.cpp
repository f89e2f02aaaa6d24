// The version matrix's newgo fixture (tests/matrix/newgo), traced for real with each toolchain from
// Go 1.21 on: generic methods, min/max/clear inlined, map lengths on both map layouts, results at
// every RET, stacks with inlined frames (PGO-inlined ones in the PGO build), and from Go 1.23 the
// range-over-func body and its iterator closure. Every value is compared with what the program
// says it passed. Only runs in the matrix (WEAVE_MATRIX_FIXTURES): the pinned Go 1.19 cannot build
// this fixture.
#include "harness.h"

#include <doctest/doctest.h>

#include <iostream>
#include <fstream>
#include <map>
#include <sstream>

using nlohmann::json;

namespace {

bool is_386(const std::string &binary) { return binary.find("_386") != std::string::npos; }

bool has_iterators() { // range-over-func: Go 1.23+
  std::string v = e2e::matrix_version();
  return !v.empty() && std::stoi(v.substr(v.find('.') + 1)) >= 23;
}

struct Run {
  std::map<std::string, std::vector<json>> truth;  // "F" entries, "F:return" results
  std::map<std::string, std::vector<json>> events; // the same keys
};

Run trace(const std::string &name, const std::string &spec, const std::string &binary) {
  if (e2e::matrix_version().empty()) {
    std::cout << "SKIPPED: the newgo fixture is built by the version matrix only (tests/matrix)" << std::endl;
    std::exit(77);
  }
  e2e::require_bpf();
  std::string dir = e2e::temp_dir(name + "-" + binary + "-go" + e2e::matrix_version());
  std::string spec_path = e2e::source(spec);
  if (is_386(binary)) {
    // 386 keeps no frame pointers, so no stacks (weave refuses stack: there); and a range-over-func
    // body's bool result has no DWARF, which on the stack ABI weave must refuse (see below).
    spec_path = dir + "/spec.yaml";
    std::istringstream in(e2e::read_file(e2e::source(spec)));
    std::ofstream out(spec_path);
    std::string line;
    bool skipping = false;
    while (std::getline(in, line)) {
      if (line.rfind("  - function: ", 0) == 0)
        skipping = line.find("-range1") != std::string::npos;
      if (!skipping && line.find("stack:") == std::string::npos)
        out << line << "\n";
    }
  }
  auto built = e2e::run({e2e::weave(), spec_path, e2e::fixture(binary), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl", "-rounds", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  Run run;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    run.truth[t["function"]].push_back(t["args"]);
  for (auto &e : e2e::json_lines(traced.out)) {
    CHECK(e["goid"] == 1); // everything runs on the main goroutine
    std::string key = e["function"].get<std::string>() + (e["kind"] == "return" ? ":return" : "");
    run.events[key].push_back(e);
  }
  return run;
}

// Frame by frame against runtime.CallersFrames: function, file and line; returns the frames compared.
size_t check_stack(const json &got, const json &want) {
  REQUIRE(got.is_array());
  REQUIRE(got.size() >= 3);
  CHECK(got.size() == want.size()); // the whole stack, down to runtime.goexit
  size_t n = std::min(got.size(), want.size());
  for (size_t f = 0; f < n; ++f) {
    CAPTURE(f);
    CHECK(got[f]["function"] == want[f]["function"]);
    CHECK(got[f]["file"] == want[f]["file"]);
    CHECK(got[f]["line"] == want[f]["line"]);
  }
  return n;
}

// Every truth line of the probed functions against its event, in order; returns values compared.
size_t check_all(Run &run, const std::vector<std::string> &functions, bool binary_is_386) {
  size_t compared = 0;
  for (const std::string &key : functions) {
    CAPTURE(key);
    bool is_return = key.size() > 7 && key.compare(key.size() - 7, 7, ":return") == 0;
    auto &want = run.truth[key];
    auto &got = run.events[key];
    REQUIRE(!want.empty());
    if (got.empty() && binary_is_386 && key.find("-range1") != std::string::npos)
      continue; // not probed on 386: see trace()
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      const json &values = got[i][is_return ? "results" : "args"];
      for (auto &[expr, expected] : want[i].items()) {
        CAPTURE(expr);
        if (expr == "stack") {
          if (binary_is_386)
            continue;
          compared += check_stack(got[i]["stack"], expected);
          continue;
        }
        REQUIRE(values.contains(expr));
        CHECK(values[expr] == expected);
        ++compared;
      }
      if (is_return)
        CHECK(got[i].contains("duration_ns"));
    }
  }
  return compared;
}

void check_newgo(const std::string &binary) {
  Run run = trace("newgo", "tests/matrix/newgo.yaml", binary);
  size_t compared = check_all(run, {"main.(*Stack[go.shape.int]).Push", "main.(*Stack[go.shape.string]).Push",
                                    "main.Stack[go.shape.int].Peek", "main.Clamp", "main.Clamp:return",
                                    "main.Span", "main.Span:return", "main.Sizes", "main.Hot", "main.Leaf"},
                              is_386(binary));
  MESSAGE(binary << " go" << e2e::matrix_version() << ": " << compared << " values and frames compared");
  // Push: 1+2+3 int pushes and 3 string pushes of 2 values; Peek, Clamp 3+1, Span 5+3, Sizes 3,
  // Hot 1, Leaf n: 3 rounds each; Leaf's stacks (Leaf, warm, Hot, main.main, runtime.main, goexit).
  CHECK(compared >= 6 * 2 + 3 * 2 + 3 * (2 + 4 + 8 + 3 + 1 + 1) + (is_386(binary) ? 0 : 3 * 5));
  if (is_386(binary))
    return;
  // warm is too big for the inliner without a profile; with one, the compiler may inline it into
  // Hot (it did with every toolchain here but 1.25.14, whose profile's samples did not make the
  // edge hot enough). Whether it did is read from Hot's code: a CALL main.warm, or none.
  std::vector<std::string> argv = e2e::objdump();
  argv.insert(argv.end(), {"-s", "^main.Hot$", e2e::fixture(binary)});
  auto code = e2e::run(argv);
  REQUIRE(code.status == 0);
  bool inlined = code.out.find("CALL main.warm(SB)") == std::string::npos;
  if (binary == "newgo")
    CHECK_FALSE(inlined);
  MESSAGE(binary << " go" << e2e::matrix_version() << ": main.warm " << std::string(inlined ? "inlined" : "called"));
  for (const json &e : run.events["main.Leaf"]) {
    REQUIRE(e["stack"].size() >= 1);
    CHECK(e["stack"][0]["function"] == "main.warm");
    CHECK(e["stack"][0]["inlined"] == inlined);
  }
}

} // namespace

TEST_CASE("generic methods, min/max/clear, maps on both layouts, stacks: amd64") { check_newgo("newgo"); }

TEST_CASE("generic methods, min/max/clear, maps on both layouts, stacks: 386") { check_newgo("newgo_386"); }

TEST_CASE("a PGO build: values, and the stack through the call PGO inlined") { check_newgo("newgo_pgo"); }

TEST_CASE("range-over-func: the loop body as yield function, the iterator closure, stacks through both") {
  // tests/matrix/matrix.cmake leaves this case out before Go 1.23, whose newgo has no iter.go.
  REQUIRE_MESSAGE(has_iterators(), "go" << e2e::matrix_version() << " has no range-over-func (Go 1.23+)");
  for (std::string binary : {"newgo", "newgo_386"}) {
    CAPTURE(binary);
    Run run = trace("iter", "tests/matrix/newgo_iter.yaml", binary);
    size_t compared =
        check_all(run, {"main.Walk", "main.Pairs.func1", "main.Walk-range1", "main.Visit"}, is_386(binary));
    MESSAGE(binary << " go" << e2e::matrix_version() << ": " << compared << " values and frames compared");
    // Walk 3, Pairs.func1 1, Walk-range1 2 per body call (3+4+3), Visit 2 + frames per visit (2+3+2).
    CHECK(compared >= (is_386(binary) ? 3 * 3 + 3 + 7 * 2 : 3 * 3 + 3 + 2 * 10 + 7 * (2 + 5)));
    if (is_386(binary)) {
      // The body's bool result has no DWARF: its parameters alone do not fill the argument area the
      // compiler recorded, and weave refuses rather than read the stack at guessed offsets.
      std::string dir = e2e::temp_dir("iter-range1-386-go" + e2e::matrix_version());
      auto refused = e2e::run({e2e::weave(), e2e::source("tests/matrix/newgo_iter.yaml"), e2e::fixture(binary),
                               "-o", dir + "/out"});
      CHECK(refused.status == 1);
      CHECK(refused.err.find("error[signature-mismatch]: main.Walk-range1") != std::string::npos);
      continue;
    }
    for (const json &e : run.events["main.Visit"]) {
      CHECK(e["stack"][0]["function"] == "main.Walk-range1");
      CHECK(e["stack"][1]["function"] == "main.Pairs.func1");
    }
  }
}
