// End to end, for real, in a real viewer: the --perfetto timeline and the --folded flame graph of a
// traced run are opened in speedscope (its released web app, from the npm registry) in headless
// Chromium, and what speedscope shows is compared with what the tracer printed and what the
// program recorded: the goroutine tracks it lists, the functions and captured values it names, the
// time and call counts it adds up. test_perfetto and test_folded check the files' format; this
// checks that a consumer people use reads them as meant. Screenshots of both go to
// build/e2e-tmp/viewers.PID/shots.
//
// speedscope is fetched once with `npm pack` into ~/.cache/weave (tests/viewers/fetch-speedscope.sh)
// and driven by tests/viewers/speedscope.mjs over the DevTools protocol. Without npm, the registry,
// Node or Chromium the test is skipped (77) saying which, never passed.
#include "harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

using nlohmann::json;

namespace {

// Pinned: the DOM the driver reads (toolbar, profile selector, Sandwich table) is speedscope's.
const char *const kSpeedscope = "1.25.0";

// Opens each file in speedscope; one driver result per file (see speedscope.mjs), by file name.
// Files after "--no-shots" are not pictured.
std::map<std::string, json> open_in_speedscope(const std::vector<std::string> &files, const std::string &out) {
  auto node = e2e::run({"node", "--version"});
  if (node.status != 0) {
    std::cout << "SKIPPED: Node.js is not installed (Debian package nodejs), needed to drive Chromium" << std::endl;
    std::exit(77);
  }
  auto fetched = e2e::run({e2e::source("tests/viewers/fetch-speedscope.sh"), kSpeedscope}, 120000);
  if (fetched.status == 77) {
    std::cout << fetched.err << "SKIPPED: speedscope@" << kSpeedscope << " could not be fetched" << std::endl;
    std::exit(77);
  }
  INFO(fetched.err);
  REQUIRE(fetched.status == 0);
  std::string app = fetched.out.substr(0, fetched.out.find('\n'));
  std::vector<std::string> argv{"node", e2e::source("tests/viewers/speedscope.mjs"), app, out};
  argv.insert(argv.end(), files.begin(), files.end());
  auto opened = e2e::run(argv, 120000);
  if (opened.status == 77) {
    std::cout << opened.err << "SKIPPED: no headless Chromium" << std::endl;
    std::exit(77);
  }
  INFO(opened.err);
  REQUIRE(opened.status == 0);
  std::map<std::string, json> results;
  for (json &r : e2e::json_lines(opened.out))
    results[r["file"]] = r;
  REQUIRE(results.size() == files.size() - std::count(files.begin(), files.end(), "--no-shots"));
  return results;
}

// speedscope's durations: "812.00ns", "1.50µs", "20.07ms", "1.02s", then " (12%)".
double displayed_ns(const std::string &text) {
  size_t used = 0;
  double v = std::stod(text, &used);
  std::string unit = text.substr(used, text.find(' ') - used);
  if (unit == "ns")
    return v;
  if (unit == "µs")
    return v * 1e3;
  if (unit == "ms")
    return v * 1e6;
  if (unit == "s")
    return v * 1e9;
  throw std::runtime_error("unknown unit in " + text);
}

std::string function_of(const std::string &frame) { return frame.substr(0, frame.find(" {")); }

// What speedscope must show for the timeline, from the tracer's own events (JSON lines): one profile
// per goroutine that had a call return, named as the file's thread_name says, listing exactly the
// functions that goroutine returned from, each function's slices adding up to its durations; as
// many "(no return seen)" slices of a function as it had entries without returns (calls that
// panicked, closed when their traced caller returned); each Handle slice's name carries the values
// the program passed. Returns what differs.
std::vector<std::string> timeline_problems(const json &shown, const std::string &file, const std::vector<json> &events,
                                           const std::vector<json> &truth_handle) {
  std::vector<std::string> problems;
  if (shown["title"] != file + " - speedscope")
    problems.push_back("title is " + shown["title"].dump() + ": not imported");
  if (shown["error"] != "" || !shown["dialogs"].empty() || !shown["warnings"].empty())
    problems.push_back("speedscope said " + shown["error"].dump() + " " + shown["dialogs"].dump() + " " +
                       shown["warnings"].dump());
  std::map<std::string, std::set<std::string>> want; // profile name -> functions
  std::map<std::string, double> want_ns;             // function -> sum of durations
  std::map<std::string, long> want_unreturned, got_unreturned; // function -> entries - returns
  for (const json &e : events) {
    want_unreturned[e["function"]] += e["kind"] == "return" ? -1 : 1;
    if (e["kind"] != "return")
      continue;
    std::string track = "goroutine " + std::to_string(e["goid"].get<uint64_t>());
    want[track + " (pid " + std::to_string(e["pid"].get<uint64_t>()) + ", tid " +
         std::to_string(e["goid"].get<uint64_t>()) + ")"]
        .insert(e["function"].get<std::string>());
    want_ns[e["function"]] += e["duration_ns"].get<double>();
  }
  std::map<std::string, std::set<std::string>> got;
  std::map<std::string, double> got_ns, slack;
  std::vector<std::string> handle_frames;
  for (const json &p : shown["profiles"]) {
    std::set<std::string> &functions = got[p["name"]];
    for (const json &row : p["frames"]) {
      std::string name = row[0], function = function_of(name);
      const std::string unreturned = " (no return seen)";
      if (function.size() > unreturned.size() && function.ends_with(unreturned)) {
        ++got_unreturned[function.substr(0, function.size() - unreturned.size())];
        continue;
      }
      functions.insert(function);
      double ns = displayed_ns(row[1]);
      got_ns[function] += ns;
      slack[function] += ns * 0.005 + 1; // two decimals of its unit
      if (function == "main.(*Server).Handle")
        handle_frames.push_back(name);
    }
  }
  if (got != want)
    problems.push_back("tracks and their functions: speedscope " + json(got).dump() + ", tracer " + json(want).dump());
  for (auto &[function, ns] : want_ns)
    if (std::abs(got_ns[function] - ns) > slack[function])
      problems.push_back(function + ": speedscope adds up " + std::to_string(got_ns[function]) + " ns, the tracer " +
                         std::to_string(ns) + " ns");
  // Functions probed without returns (Leaf) are instants, which speedscope does not show.
  std::erase_if(want_unreturned, [&](const auto &kv) { return kv.second == 0 || !want_ns.count(kv.first); });
  if (got_unreturned != want_unreturned)
    problems.push_back("calls without a return: speedscope " + json(got_unreturned).dump() + ", tracer " +
                       json(want_unreturned).dump());
  for (const json &t : truth_handle) {
    std::string path = "\"req.Path\":" + t["req.Path"].dump(), name = "\"s.Name\":" + t["s.Name"].dump();
    bool found = false;
    for (const std::string &f : handle_frames)
      found = found || (f.find(path) != std::string::npos && f.find(name) != std::string::npos);
    if (!found)
      problems.push_back("no Handle slice shows " + path + " and " + name);
  }
  return problems;
}

// speedscope's plain weights (folded stacks have no unit): toLocaleString, "2,119,905" in en-US.
uint64_t displayed_weight(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  return std::stoull(text);
}

// What speedscope must show for the flame graph: one profile, every frame of the file, each with
// the total speedscope's flame graph gives it (the weights of the stacks it is on), and the totals
// of some functions what the program or the tracer says (calls made, nanoseconds taken).
std::vector<std::string> flame_problems(const json &shown, const std::string &file, const std::string &folded,
                                        const std::map<std::string, uint64_t> &totals) {
  std::vector<std::string> problems;
  if (shown["title"] != file + " - speedscope")
    problems.push_back("title is " + shown["title"].dump() + ": not imported");
  if (shown["error"] != "" || !shown["dialogs"].empty() || !shown["warnings"].empty())
    problems.push_back("speedscope said " + shown["error"].dump() + " " + shown["dialogs"].dump() + " " +
                       shown["warnings"].dump());
  if (shown["profiles"].size() != 1) {
    problems.push_back(std::to_string(shown["profiles"].size()) + " profiles");
    return problems;
  }
  std::map<std::string, uint64_t> want, got;
  std::istringstream in(folded);
  for (std::string line; std::getline(in, line);) {
    size_t space = line.rfind(' ');
    uint64_t weight = std::stoull(line.substr(space + 1));
    std::set<std::string> frames; // a frame counts once per stack, as recursion does in a total
    std::istringstream stack(line.substr(0, space));
    for (std::string frame; std::getline(stack, frame, ';');)
      frames.insert(frame);
    for (const std::string &f : frames)
      want[f] += weight;
  }
  for (const json &row : shown["profiles"][0]["frames"])
    got[row[0]] = displayed_weight(row[1]);
  if (got != want)
    problems.push_back("frames and totals: speedscope " + json(got).dump() + ", file " + json(want).dump());
  for (auto &[function, total] : totals)
    if (got[function] != total)
      problems.push_back(function + ": speedscope's total is " + std::to_string(got[function]) + ", want " +
                         std::to_string(total));
  return problems;
}

void write(const std::string &path, const std::string &text) { std::ofstream(path, std::ios::binary) << text; }

} // namespace

TEST_CASE("speedscope opens --perfetto and --folded: goroutine tracks, functions, values, times, counts") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("viewers");
  // Handle with its captures and results, Deep recursing on a goroutine of its own, Sleepy on three
  // goroutines at once, MayPanic whose odd calls panic (never return: closed as "(no return seen)"
  // when their traced caller, callRecovering, returns), and Leaf's stacks for the flame graph.
  write(dir + "/spec.yaml", "probes:\n"
                            "  - function: main.(*Server).Handle\n"
                            "    capture: [s.Name, req.Path]\n"
                            "    return: true\n"
                            "  - function: main.Deep\n"
                            "    capture: [n]\n"
                            "    stack: 16\n"
                            "    return: true\n"
                            "  - function: main.Sleepy\n"
                            "    capture: [ms]\n"
                            "    stack: 4\n"
                            "    return: true\n"
                            "  - function: main.MayPanic\n"
                            "    capture: [n]\n"
                            "    return: true\n"
                            "  - function: main.callRecovering\n"
                            "    capture: [n]\n"
                            "    return: true\n"
                            "  - function: main.Leaf\n"
                            "    capture: [n]\n"
                            "    stack: 10\n");
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::string timeline = dir + "/trace.json", flame = dir + "/calls.folded";
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--perfetto", timeline, "--folded", flame, "--",
                          e2e::fixture("fixture"), "-truth", dir + "/truth.jsonl", "-rounds", "4", "-deep", "12",
                          "-sleepers", "3"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> events = e2e::json_lines(traced.out), truth_handle;
  uint64_t leaf_calls = 0;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl"))) {
    truth_handle.insert(truth_handle.end(), t["function"] == "main.(*Server).Handle" ? 1 : 0, t["args"]);
    leaf_calls += t["function"] == "main.Leaf";
  }
  REQUIRE(truth_handle.size() == 4);
  REQUIRE(leaf_calls == 4);
  // The flame graph weighted by time: plain numbers in speedscope, nanoseconds.
  std::string timed = dir + "/time.folded";
  auto traced_time = e2e::run({dir + "/out/tracer", "--format", "json", "--folded", timed, "--folded-weight", "time",
                               "--", e2e::fixture("fixture"), "-truth", "/dev/null", "-deep", "12", "-sleepers", "3"});
  INFO(traced_time.err);
  REQUIRE(traced_time.status == 0);
  // Sleepy's frame is as wide as its calls took; Deep's recursion as the outermost call, Deep(12),
  // the longest (not the sum over every level of it).
  std::map<std::string, uint64_t> time_totals{{"main.Deep", 0}, {"main.Sleepy", 0}};
  for (const json &e : e2e::json_lines(traced_time.out)) {
    if (e["kind"] != "return")
      continue;
    uint64_t ns = e["duration_ns"];
    if (e["function"] == "main.Sleepy")
      time_totals["main.Sleepy"] += ns;
    if (e["function"] == "main.Deep")
      time_totals["main.Deep"] = std::max(time_totals["main.Deep"], ns);
  }
  time_totals["runtime.goexit"] = time_totals["main.Sleepy"] + time_totals["main.Deep"];

  // The check must be able to fail: the same files, damaged four ways a viewer would show.
  std::string trace_text = e2e::read_file(timeline), folded_text = e2e::read_file(flame);
  write(dir + "/truncated.json", trace_text.substr(0, trace_text.size() / 2));
  json unnamed = json::parse(trace_text);
  json &list = unnamed["traceEvents"];
  list.erase(std::remove_if(list.begin(), list.end(), [](const json &e) { return e["ph"] == "M"; }), list.end());
  write(dir + "/unnamed.json", unnamed.dump());
  json overlap = json::parse(trace_text); // Deep(0) made to end after the call it is nested in
  for (json &e : overlap["traceEvents"])
    if (e["name"] == "main.Deep" && e["args"]["args"]["n"] == 0)
      e["dur"] = e["dur"].get<double>() + 1000;
  write(dir + "/overlap.json", overlap.dump());
  std::string renamed = folded_text;
  for (size_t at; (at = renamed.find("main.Leaf")) != std::string::npos;)
    renamed.replace(at, 9, "main.Lxaf");
  write(dir + "/renamed.folded", renamed);

  auto shown = open_in_speedscope({timeline, flame, timed, "--no-shots", dir + "/truncated.json", dir + "/unnamed.json",
                                   dir + "/overlap.json", dir + "/renamed.folded"},
                                  dir + "/shots");
  // What speedscope showed, for the log when a check fails.
  INFO(shown["trace.json"].dump().substr(0, 3000));
  INFO(shown["calls.folded"].dump().substr(0, 3000));

  std::string timeline_shown = json(timeline_problems(shown["trace.json"], "trace.json", events, truth_handle)).dump();
  CHECK(timeline_shown == "[]");
  CHECK(shown["trace.json"]["profiles"].size() >= 5); // main, Deep's goroutine, three sleepers
  std::string flame_shown =
      json(flame_problems(shown["calls.folded"], "calls.folded", folded_text, {{"main.Leaf", leaf_calls}})).dump();
  CHECK(flame_shown == "[]");
  std::string time_shown =
      json(flame_problems(shown["time.folded"], "time.folded", e2e::read_file(timed), time_totals)).dump();
  INFO(shown["time.folded"].dump().substr(0, 3000));
  CHECK(time_shown == "[]");
  for (const char *shot : {"trace.json.png", "trace.json.sandwich.png", "calls.folded.png", "calls.folded.sandwich.png",
                           "time.folded.png"})
    CHECK(e2e::read_file(dir + "/shots/" + shot).size() > 10000);

  // speedscope: "Unrecognized format!"
  std::string truncated = json(timeline_problems(shown["truncated.json"], "truncated.json", events, truth_handle)).dump();
  CHECK(truncated != "[]");
  // Imported, but the tracks are "pid P, tid G".
  std::string no_names = json(timeline_problems(shown["unnamed.json"], "unnamed.json", events, truth_handle)).dump();
  CHECK(no_names != "[]");
  // Imported, with speedscope's warnings about a frame ended out of order, and Deep's times off.
  std::string overlapping = json(timeline_problems(shown["overlap.json"], "overlap.json", events, truth_handle)).dump();
  CHECK(overlapping != "[]");
  // Imported, but no main.Leaf.
  std::string no_leaf =
      json(flame_problems(shown["renamed.folded"], "renamed.folded", folded_text, {{"main.Leaf", leaf_calls}})).dump();
  CHECK(no_leaf != "[]");
  // Goroutines whose calls ran on more than one thread, each still one profile (got == want above).
  std::map<uint64_t, std::set<uint64_t>> threads;
  for (const json &e : events)
    threads[e["goid"].get<uint64_t>()].insert(e["tid"].get<uint64_t>());
  size_t hopped = 0;
  for (auto &[goid, tids] : threads)
    hopped += tids.size() > 1;
  MESSAGE(shown["trace.json"]["profiles"].size() << " goroutine tracks in speedscope, " << hopped
                                                 << " of them on more than one thread");
  // What the checks found in the damaged files, for the log.
  MESSAGE("truncated.json: " << truncated);
  MESSAGE("unnamed.json: " << no_names.substr(0, 300));
  MESSAGE("overlap.json: " << overlapping.substr(0, 300));
  MESSAGE("renamed.folded: " << no_leaf.substr(0, 300));
}
