// End to end, for real: a function that never returns (a goroutine body looping forever, so its
// code has no RET) probed with return: true. Its entries and their values are traced; its results
// are said to be unknowable, with a warning, not an error.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>

using nlohmann::json;

namespace {

// The hits column of main.spin's entry row in the --stats table on stderr
// ("weave:   main.spin  entry  POINTS  HITS  EVENTS  LOST  NS/RUN"); -1 when there is none.
int64_t spin_hits(const std::string &err) {
  int64_t hits = -1;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string prefix, function, kind;
    int64_t points = 0, n = 0;
    if (words >> prefix >> function >> kind >> points >> n && prefix == "weave:" && function == "main.spin" &&
        kind == "entry")
      hits = n;
  }
  return hits;
}

} // namespace

TEST_CASE("a function that never returns keeps its entries, its results marked unknowable") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("noreturn");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - {function: main.spin, args: all, return: true}\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("forever"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(built.err.find("[no-return]") != std::string::npos);
  CHECK(built.err.find("not knowable") != std::string::npos);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  REQUIRE(manifest["probes"].size() == 1); // the entry alone: no return event to wait for

  // Several goroutines, each entering spin once, on threads other than the main one (the program
  // keeps main on the main thread). The program writes a goroutine's line only once that goroutine
  // has reported from inside spin, with the goroutine id it read itself: each line is one call.
  // Both ways of attaching: the default (a uprobe_multi link where the kernel has it) and perf-event
  // links.
  for (const char *attach : {"auto", "perf"}) {
    CAPTURE(attach);
    std::string truth_path = dir + "/truth-" + attach + ".jsonl";
    auto traced = e2e::run({dir + "/out/tracer", "--attach", attach, "--stats", "--format", "json", "--",
                            e2e::fixture("forever"), "-truth", truth_path, "-workers", "3"});
    INFO(traced.err);
    REQUIRE(traced.status == 0);
    std::vector<json> truth = e2e::json_lines(e2e::read_file(truth_path));
    REQUIRE(truth.size() == 3);
    // Goroutines start in any order: compare by id, each exactly once.
    std::map<int64_t, json> want, seen;
    for (const json &t : truth)
      want[t.at("id").get<int64_t>()] = t;
    // The program's own line ("received ...") shares stdout with the events.
    std::string events;
    std::istringstream lines(traced.out);
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("{"))
        events += line + "\n";
    for (const json &e : e2e::json_lines(events)) {
      // at(): a missing field fails the test with its name (operator[] on a const object would not).
      CHECK(e.at("function") == "main.spin");
      REQUIRE(e.at("kind") == "entry");
      CHECK(e.at("tid") != e.at("pid")); // a worker, never the main thread
      int64_t id = e.at("args").at("id").get<int64_t>();
      CHECK(seen.count(id) == 0);
      seen[id] = e;
    }
    REQUIRE(seen.size() == want.size());
    for (const auto &[id, t] : want) {
      CAPTURE(id);
      REQUIRE(seen.count(id) == 1);
      CHECK(seen[id].at("args").at("name") == t.at("name"));
      CHECK(seen[id].at("goid") == t.at("goid"));
      CHECK(seen[id].at("args").contains("out"));
    }
    // Every call counted once by the BPF side too: hits == events, one per goroutine.
    CHECK(spin_hits(traced.err) == static_cast<int64_t>(want.size()));
  }
}
