// End to end, for real: the tracer's views on the Go fixture with tests/e2e/latency.yaml. --graph
// prints a call tree per goroutine (concurrent sleepers, recursion, calls that panic), and the
// latency summary at exit gives each function's calls, min/p50/p99/max and a histogram.
#include "harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace {

// The tracer for latency.yaml, built once per test case: ctest runs the cases in parallel, each in
// a process and a directory of its own.
std::string tracer(const std::string &name) {
  static std::string path;
  if (path.empty()) {
    std::string dir = e2e::temp_dir("views-" + name);
    auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/latency.yaml"),
                           e2e::fixture("fixture"), "-o", dir + "/out"});
    INFO(built.err);
    REQUIRE(built.status == 0);
    path = dir + "/out/tracer";
  }
  return path;
}

// `truth` receives what the fixture recorded, its own measurements around calls among it.
e2e::Result trace(const std::string &name, std::vector<std::string> options,
                  std::vector<std::string> fixture_args, const std::string &truth = "/dev/null") {
  std::vector<std::string> argv = {tracer(name)};
  argv.insert(argv.end(), options.begin(), options.end());
  for (const std::string &a : {std::string("--"), e2e::fixture("fixture"), std::string("-truth"),
                               truth, std::string("-rounds"), std::string("0")})
    argv.push_back(a);
  argv.insert(argv.end(), fixture_args.begin(), fixture_args.end());
  return e2e::run(argv, 120000);
}

// What the fixture measured around each call of `function` (time.Now before, time.Since after), by
// the value of `key`, shortest first: a traced duration lies inside that window however busy the
// machine. The tree shows durations to 3 significant digits, which may round up past it by 0.5%.
std::map<int, std::vector<uint64_t>> measured(const std::string &truth_path, const std::string &function,
                                              const std::string &key) {
  std::map<int, std::vector<uint64_t>> out;
  for (const auto &t : e2e::json_lines(e2e::read_file(truth_path))) {
    if (t["function"] != function)
      continue;
    const auto &ns = t["args"]["measured_ns"];
    for (const auto &n : ns.is_array() ? ns : nlohmann::json::array({ns}))
      out[t["args"][key].get<int>()].push_back(n.get<uint64_t>());
  }
  for (auto &[k, list] : out)
    std::sort(list.begin(), list.end());
  return out;
}
bool within_shown(uint64_t shown_ns, uint64_t measured_ns) { return shown_ns <= measured_ns + measured_ns / 100; }

// "10.3ms" -> 10300000, as the tracer writes durations (ns, µs, ms, s).
uint64_t parse_duration(const std::string &text) {
  size_t unit = text.find_first_not_of("0123456789.");
  REQUIRE(unit != std::string::npos);
  double value = std::stod(text.substr(0, unit));
  std::string suffix = text.substr(unit);
  double scale = suffix == "ns"   ? 1
                 : suffix == "µs" ? 1e3
                 : suffix == "ms" ? 1e6
                 : suffix == "s"  ? 1e9
                                  : -1;
  REQUIRE_MESSAGE(scale > 0, text);
  return static_cast<uint64_t>(value * scale);
}

// One line of a tree: "<time, 10 wide> <2 spaces per level><call>  #<call id>".
struct TreeLine {
  uint64_t goid = 0; // of the block's header
  size_t block = 0;  // which block (header) it is under
  int depth = 0;
  std::string call;  // without the id
  uint64_t id = 0;   // the call id every line of a call ends with
};

std::vector<TreeLine> parse_graph(const std::string &out) {
  std::vector<TreeLine> lines;
  std::istringstream in(out);
  std::string line;
  uint64_t goid = 0;
  size_t block = 0;
  // "goroutine 18 (pid 1234), created by ...:" (who made it: tests/e2e/test_calls.cpp checks that part)
  std::regex header(R"(^goroutine (\d+) \(pid (\d+)\)(, created by .*)?:$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, header)) {
      goid = std::stoull(m[1]);
      ++block;
      continue;
    }
    INFO(line);
    REQUIRE(block > 0); // every line is under a header
    REQUIRE(line.size() > 11);
    size_t text = line.find_first_not_of(' ', 11);
    REQUIRE(text != std::string::npos);
    std::string call = line.substr(text);
    size_t hash = call.rfind("  #");
    REQUIRE(hash != std::string::npos); // every line of a call says its id
    uint64_t id = std::stoull(call.substr(hash + 3));
    CHECK(id > 0);
    lines.push_back({goid, block, static_cast<int>(text - 11) / 2, call.substr(0, hash), id});
  }
  return lines;
}

} // namespace

TEST_CASE("--graph: two sleeper goroutines, each with its two Sleepy calls and their durations") {
  e2e::require_bpf();
  std::string truth = e2e::temp_dir("views-sleepers-truth") + "/truth.jsonl";
  auto r = trace("sleepers", {"--graph"}, {"-sleepers", "2"}, truth);
  std::map<int, std::vector<uint64_t>> outside = measured(truth, "main.Sleepy", "ms");
  INFO(r.err);
  INFO(r.out);
  REQUIRE(r.status == 0);
  // Each goroutine's trees are printed as they complete; consecutive ones share a header. The two
  // goroutines' calls end close together (the 10 ms sleeper's second and the 20 ms one's first),
  // so their order, and with it whether a goroutine's calls are one block or two, varies by run.
  std::regex leaf(R"(^main\.Sleepy\(ms=(\d+)\) = \(~r0=(\d+)\)  (\S+)$)");
  std::map<uint64_t, std::vector<std::pair<int, uint64_t>>> calls; // goid -> (ms, duration)
  std::map<uint64_t, std::set<size_t>> blocks;
  for (const TreeLine &l : parse_graph(r.out)) {
    if (l.call.find("Sleepy") == std::string::npos)
      continue;
    std::smatch m;
    INFO(l.call);
    REQUIRE(std::regex_match(l.call, m, leaf));
    CHECK(l.depth == 0);
    CHECK(m[1] == m[2]);
    calls[l.goid].push_back({std::stoi(m[1]), parse_duration(m[3])});
    blocks[l.goid].insert(l.block);
  }
  REQUIRE(calls.size() == 2);
  std::set<int> sleeps;
  for (auto &[goid, list] : calls) {
    CHECK(goid > 1);
    REQUIRE(list.size() == 2);
    CHECK(list[0].first == list[1].first);
    sleeps.insert(list[0].first);
    // Each call within what the program measured around one of its two: sorted, the k-th shortest
    // shown fits the k-th shortest measured exactly when some pairing fits.
    std::vector<uint64_t> shown;
    for (auto [ms, ns] : list) {
      CHECK(ns >= uint64_t(ms) * 1000000);
      shown.push_back(ns);
    }
    std::sort(shown.begin(), shown.end());
    const std::vector<uint64_t> &around = outside[list[0].first];
    REQUIRE(around.size() == 2);
    for (size_t k = 0; k < 2; ++k) {
      CAPTURE(shown[k]);
      CAPTURE(around[k]);
      CHECK(within_shown(shown[k], around[k]));
    }
    CHECK(blocks[goid].size() <= 2);
  }
  CHECK(sleeps == std::set<int>{10, 20});
}

TEST_CASE("--graph: recursion shows a level per call, durations growing outward") {
  e2e::require_bpf();
  auto r = trace("deep", {"--graph", "--no-summary"}, {"-deep", "5"});
  INFO(r.err);
  INFO(r.out);
  REQUIRE(r.status == 0);
  std::vector<TreeLine> deep;
  for (const TreeLine &l : parse_graph(r.out))
    if (l.call.find("main.Deep") != std::string::npos)
      deep.push_back(l);
  // Deep(5) { Deep(4) { ... Deep(0) = (~r0=0)  d ... } main.Deep = (~r0=15)  d
  REQUIRE(deep.size() == 11);
  for (int n = 5; n >= 1; --n) {
    const TreeLine &open = deep[size_t(5 - n)];
    CHECK(open.call == "main.Deep(n=" + std::to_string(n) + ") {");
    CHECK(open.depth == 5 - n);
  }
  CHECK(deep[5].depth == 5);
  CHECK(deep[5].call.rfind("main.Deep(n=0) = (~r0=0)  ", 0) == 0);
  std::regex close(R"(^\} main\.Deep = \(~r0=(\d+)\)  (\S+)$)");
  uint64_t inner = 0;
  int max_depth = 0;
  for (size_t i = 5; i < deep.size(); ++i) {
    max_depth = std::max(max_depth, deep[i].depth);
    CHECK(deep[i].goid == deep[0].goid);
    CHECK(deep[i].block == deep[0].block); // one tree
    std::string duration = deep[i].call.substr(deep[i].call.rfind(' ') + 1);
    uint64_t ns = parse_duration(duration);
    CHECK(ns >= inner);
    inner = ns;
    if (i == 5)
      continue;
    std::smatch m;
    INFO(deep[i].call);
    REQUIRE(std::regex_match(deep[i].call, m, close));
    int n = int(i) - 5; // the call that returns: Deep(n) returns n(n+1)/2
    CHECK(deep[i].depth == 5 - n);
    CHECK(std::stoi(m[1]) == n * (n + 1) / 2);
    CHECK(deep[i].id == deep[10 - i].id); // a call's closing line has its opening line's id
  }
  std::set<uint64_t> ids;
  for (size_t i = 0; i <= 5; ++i)
    ids.insert(deep[i].id);
  CHECK(ids.size() == 6); // six calls, six ids
  CHECK(max_depth == 5);                                          // 6 levels: 0..5
  CHECK(r.err.find("latency of the calls") == std::string::npos); // --no-summary
}

TEST_CASE("--graph: calls that panic never return and say so, the others keep their durations") {
  e2e::require_bpf();
  std::string truth = e2e::temp_dir("views-panic-truth") + "/truth.jsonl";
  auto r = trace("panic", {"--graph", "--no-summary"}, {"-sleepers", "1"}, truth);
  std::map<int, std::vector<uint64_t>> outside = measured(truth, "main.MayPanic", "n");
  INFO(r.out);
  REQUIRE(r.status == 0);
  std::regex even(R"(^main\.MayPanic\(n=(\d+)\) = \(~r0=(\d+)\)  (\S+)$)");
  std::regex odd(
      R"(^main\.MayPanic\(n=(\d+)\)( \{|  \((no return: unwound|still open at exit)\))$)");
  int evens = 0, odds = 0;
  for (const TreeLine &l : parse_graph(r.out)) {
    if (l.call.find("MayPanic(") == std::string::npos)
      continue;
    INFO(l.call);
    CHECK(l.goid == 1);
    std::smatch m;
    if (std::regex_match(l.call, m, even)) {
      ++evens;
      int n = std::stoi(m[1]);
      CHECK(n % 2 == 0);
      // Not inflated by the panicked call's entry before it: within what the program measured.
      REQUIRE(outside[n].size() == 1);
      CHECK(within_shown(parse_duration(m[3]), outside[n][0]));
    } else {
      REQUIRE(std::regex_match(l.call, m, odd));
      ++odds;
      CHECK(std::stoi(m[1]) % 2 == 1);
    }
  }
  CHECK(evens == 3);
  CHECK(odds == 3);
}

TEST_CASE("latency summary at exit: calls, min/p50/p99/max and a histogram per function") {
  e2e::require_bpf();
  auto r = trace("summary", {"--format", "json"}, {"-sleepers", "2"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("weave: latency of the calls that returned, at exit:\n") != std::string::npos);
  std::smatch m;
  std::regex row(R"(weave:   main\.Sleepy +(\d+) +(\S+) +(\S+) +(\S+) +(\S+)\n)");
  REQUIRE(std::regex_search(r.err, m, row));
  CHECK(std::stoi(m[1]) == 4);
  uint64_t min = parse_duration(m[2]), p50 = parse_duration(m[3]), p99 = parse_duration(m[4]),
           max = parse_duration(m[5]);
  CHECK(min >= 10000000);
  CHECK(max >= 20000000);
  CHECK(min <= p50);
  CHECK(p50 <= p99);
  CHECK(p99 == max); // 4 calls: the 99th percentile is the largest
  // main.Sleepy's histogram: its buckets hold the 4 calls.
  size_t at = r.err.find("weave:   main.Sleepy:\n");
  REQUIRE(at != std::string::npos);
  std::istringstream in(r.err.substr(at));
  std::string line;
  std::getline(in, line);
  std::regex bucket(R"(^weave:     \[(\S+), (\S+)\) +(\d+) \|(@*) *\|$)");
  uint64_t total = 0;
  while (std::getline(in, line) && std::regex_match(line, m, bucket)) {
    total += std::stoull(m[3]);
    CHECK(parse_duration(m[1]) < parse_duration(m[2]));
  }
  CHECK(total == 4);
  // MayPanic returned 3 times (the 3 odd calls panicked), Deep was not called.
  CHECK(std::regex_search(r.err, std::regex(R"(weave:   main\.MayPanic +3 )")));
  CHECK(r.err.find("weave:   main.Deep ") == std::string::npos);

  auto off = trace("summary", {"--no-summary"}, {"-sleepers", "1"});
  CHECK(off.status == 0);
  CHECK(off.err.find("latency of the calls") == std::string::npos);
}

TEST_CASE("--graph with --format json is a usage error") {
  auto r =
      e2e::run({tracer("usage"), "--graph", "--format", "json", "--", e2e::fixture("fixture")});
  CHECK(r.status == 2);
  CHECK(r.err.find("--graph") != std::string::npos);
  CHECK(r.err.find("--format json") != std::string::npos);
}
