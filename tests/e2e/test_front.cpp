// weave trace as the one-line front end, end to end with the real fixture and a real tracer: every
// option of the tracer's own table is taken and passed on (each exercised below), -c/--when/
// --min-duration/--stack/--inlined shape the spec, --pid alone names the binary, errors point at the
// argument that caused them with nothing written to the cache, a stripped binary is timed, and
// arguments in the wrong order get a hint in the form of the command that was run.
#include "harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool contains(const std::string &text, const std::string &needle) { return text.find(needle) != std::string::npos; }

// weave with its cache in `dir`, so nothing is shared with other tests.
std::vector<std::string> weave_in(const std::string &dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {"env", "XDG_CACHE_HOME=" + dir + "/cache", e2e::weave()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<json> truth_of(const std::string &path, const std::string &function) {
  std::vector<json> out;
  for (const json &t : e2e::json_lines(e2e::read_file(path)))
    if (t["function"] == function)
      out.push_back(t);
  return out;
}

std::vector<json> of(const std::vector<json> &events, const std::string &function, const std::string &kind) {
  std::vector<json> out;
  for (const json &e : events)
    if (e["function"] == function && e["kind"] == kind)
      out.push_back(e);
  return out;
}

// The option names (long form) a --help lists in its options table.
std::set<std::string> help_options(const std::string &help) {
  std::set<std::string> names;
  std::istringstream in(help);
  std::regex option(R"(^  (?:-\w,\s*)?(--[a-z][a-z-]*))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, option))
      names.insert(m[1]);
  }
  return names;
}

// The files under the cache's specs/ directory (weave trace's saved specs).
size_t saved_specs(const std::string &dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator(dir + "/cache/weave/specs", ec); !ec && it != fs::directory_iterator(); ++it)
    ++n;
  return n;
}

} // namespace

TEST_CASE("weave trace and weave run take every option of the tracer's own table") {
  // The tracer's --help is its option table; weave's commands must list each option, except the
  // two that replace what weave builds (--object, --manifest).
  auto tracer = e2e::run({WEAVE_BINARY_DIR "/weave-tracer", "--help"});
  REQUIRE(tracer.status == 0);
  std::set<std::string> wanted = help_options(tracer.out);
  REQUIRE(wanted.count("--folded-weight"));
  REQUIRE(wanted.count("--graph"));
  wanted.erase("--object");
  wanted.erase("--manifest");
  wanted.erase("--version"); // weave's own --version, before any command
  wanted.erase("--color");   // weave's own --color (before or after the command), passed on
  for (const std::string command : {"trace", "run"}) {
    CAPTURE(command);
    auto help = e2e::run({e2e::weave(), command, "--help"});
    REQUIRE(help.status == 0);
    std::set<std::string> offered = help_options(help.out);
    for (const std::string &option : wanted)
      CHECK_MESSAGE(offered.count(option), option);
  }
  auto trace_help = e2e::run({e2e::weave(), "trace", "--help"});
  for (const std::string option : {"--capture", "--when", "--when-return", "--min-duration", "--stack", "--inlined"})
    CHECK_MESSAGE(help_options(trace_help.out).count(option), option);
}

TEST_CASE("weave trace --graph --no-summary -v -v --color never: trees of the program's own values, no summary, libbpf's debug output") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-graph");
  auto r = e2e::run(weave_in(dir, {"trace", "--color", "never", e2e::fixture("fixture"), "main.(*Server).Handle", "-c", "req.Path",
                                   "-c", "deadline", "--graph", "--no-summary", "-v", "-v", "--", "-rounds", "2", "-truth", dir + "/truth.jsonl"}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  // --graph: one tree line per call with its values, each as the program recorded it, and its return.
  std::vector<json> truth = truth_of(dir + "/truth.jsonl", "main.(*Server).Handle");
  REQUIRE(truth.size() == 2);
  for (const json &t : truth) {
    std::string values = "main.(*Server).Handle(req.Path=\"" + t["args"]["req.Path"].get<std::string>() +
                         "\", deadline=" + std::to_string(t["args"]["deadline"].get<int64_t>()) + ")";
    CHECK_MESSAGE(contains(r.out, values), values);
  }
  CHECK(contains(r.out, "goroutine 1"));
  CHECK(r.out.find('\033') == std::string::npos); // --color never reached the tracer
  // --no-summary: no latency table; -v -v: libbpf's debug lines.
  CHECK_FALSE(contains(r.err, "p50"));
  CHECK(contains(r.err, "libbpf: "));
}

TEST_CASE("weave trace --stats --perfetto --folded --folded-weight time: stacks asked for by themselves, every file the calls'") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-files");
  auto r = e2e::run(weave_in(dir, {"trace", "--format", "json", "-o", dir + "/events.jsonl", e2e::fixture("fixture"),
                                   "main.Ints", "--stats", "--perfetto", dir + "/trace.json", "--folded",
                                   dir + "/out.folded", "--folded-weight", "time", "--", "-rounds", "3", "-truth",
                                   dir + "/truth.jsonl"}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  // The spec weave trace printed asks for stacks: --folded alone turned them on.
  CHECK(contains(r.err, "    stack: 64\n"));
  std::vector<json> events = e2e::json_lines(e2e::read_file(dir + "/events.jsonl"));
  std::vector<json> entries = of(events, "main.Ints", "entry"), returns = of(events, "main.Ints", "return");
  std::vector<json> truth = truth_of(dir + "/truth.jsonl", "main.Ints");
  REQUIRE(entries.size() == truth.size());
  REQUIRE(returns.size() == truth.size());
  for (size_t i = 0; i < truth.size(); ++i)
    CHECK(entries[i]["args"] == truth[i]["args"]);
  // --stats: the per-probe table at exit, with this probe's hits.
  CHECK(contains(r.err, "weave: stats"));
  CHECK(std::regex_search(r.err, std::regex(R"(main\.Ints\s+entry)")));
  // --perfetto: one complete slice per call.
  json perfetto = json::parse(e2e::read_file(dir + "/trace.json"));
  size_t slices = 0;
  for (const json &e : perfetto["traceEvents"])
    slices += e.value("name", "") == "main.Ints" && e.value("ph", "") == "X";
  CHECK(slices == truth.size());
  // --folded with --folded-weight time: main.main;main.Ints weighing the calls' nanoseconds, which
  // add up to the returns' durations.
  uint64_t weight = 0, durations = 0;
  std::istringstream folded(e2e::read_file(dir + "/out.folded"));
  for (std::string line; std::getline(folded, line);) {
    CHECK_MESSAGE(contains(line, "main.main;main.Ints "), line);
    weight += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  for (const json &ret : returns)
    durations += ret["duration_ns"].get<uint64_t>();
  CHECK(weight > 0);
  CHECK(weight == durations);
}

TEST_CASE("weave trace -c -c --when: those values only, of the calls the condition picks, as the program passed them") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-capture");
  auto r = e2e::run(weave_in(dir, {"trace", "--format", "json", e2e::fixture("fixture"), "main.(*Server).Handle", "-c",
                                   "req.Path", "--capture", "s.Name", "--when", "s.Hits >= 1", "--", "-rounds", "3",
                                   "-truth", dir + "/truth.jsonl"}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.err, "    capture:\n      - 'req.Path'\n      - 's.Name'\n"));
  CHECK(contains(r.err, "    when: 's.Hits >= 1'\n"));
  std::vector<json> entries = of(e2e::json_lines(r.out), "main.(*Server).Handle", "entry");
  std::vector<json> want;
  for (const json &t : truth_of(dir + "/truth.jsonl", "main.(*Server).Handle"))
    if (t["args"]["s.Hits"].get<int>() >= 1)
      want.push_back(t);
  REQUIRE(want.size() == 2); // rounds 1 and 2
  REQUIRE(entries.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(entries[i]["args"]["req.Path"] == want[i]["args"]["req.Path"]);
    CHECK(entries[i]["args"]["s.Name"] == want[i]["args"]["s.Name"]);
    CHECK(entries[i]["args"]["s.Hits"] == want[i]["args"]["s.Hits"]); // read by the condition, shown too
    CHECK_FALSE(entries[i]["args"].contains("deadline"));             // -c replaced args: all
  }
}

TEST_CASE("weave trace --min-duration --inlined --stack N: only the slow calls, with their stacks") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-slow");
  auto r = e2e::run(weave_in(dir, {"trace", "--format", "json", e2e::fixture("fixture"), "main.Sle*", "--inlined",
                                   "--min-duration", "15ms", "--stack", "4", "--", "-rounds", "1", "-sleepers", "2",
                                   "-truth", dir + "/truth.jsonl"}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.err, "    min_duration: '15ms'\n    stack: 4\n    inlined: true\n"));
  std::vector<json> events = e2e::json_lines(r.out);
  std::vector<json> entries = of(events, "main.Sleepy", "entry"), returns = of(events, "main.Sleepy", "return");
  REQUIRE(entries.size() == returns.size());
  // Every call of 20 ms is at least 15 ms long and shown, twice; a call of 10 ms only when it took
  // 15 ms after all (a busy machine): each shown call took at least that long.
  size_t twenty = 0;
  for (const json &e : entries) {
    int ms = e["args"]["ms"];
    CHECK((ms == 10 || ms == 20));
    twenty += ms == 20;
    REQUIRE(e.contains("stack"));
    CHECK(e["stack"].size() <= 4);
  }
  CHECK(twenty == 2);
  for (const json &ret : returns) {
    CHECK(ret["duration_ns"].get<uint64_t>() >= 15000000);
    CHECK((ret["results"]["~r0"] == 10 || ret["results"]["~r0"] == 20));
  }
}

TEST_CASE("weave trace --pid N FUNC: the process's own binary, --binary and --attach passed on") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-pid");
  auto target = e2e::spawn({e2e::fixture("fixture"), "-wait-signal", "-rounds", "2", "-truth", dir + "/truth.jsonl"}, dir);
  REQUIRE(target.wait_for_err("ready"));
  const int pid = target.pid; // wait() forgets it
  auto trace = e2e::spawn(weave_in(dir, {"trace", "--format", "json", "--pid", std::to_string(pid), "main.Ints",
                                         "--attach", "perf", "--binary", "/proc/" + std::to_string(pid) + "/exe",
                                         "--stats=1"}),
                          dir);
  REQUIRE_MESSAGE(trace.wait_for_err("weave: tracing 2 probes of 1 function"), trace.read_err()); // entry and return
  kill(pid, SIGUSR1);
  CHECK(target.wait() == 0);
  CHECK(trace.wait() == 0);
  std::string err = trace.read_err();
  INFO(err);
  CHECK(contains(err, "weave: process " + std::to_string(pid) + " runs " + fs::canonical(e2e::fixture("fixture")).string()));
  CHECK(contains(err, "perf-event links")); // --attach perf, said by --stats
  std::vector<json> entries = of(e2e::json_lines(trace.read_out()), "main.Ints", "entry");
  std::vector<json> truth = truth_of(dir + "/truth.jsonl", "main.Ints");
  REQUIRE(truth.size() == 2);
  REQUIRE(entries.size() == truth.size());
  for (size_t i = 0; i < truth.size(); ++i) {
    CHECK(entries[i]["args"] == truth[i]["args"]);
    CHECK(entries[i]["pid"] == pid);
  }
}

TEST_CASE("weave trace --exit-after-attach --metrics --otlp --otlp-timeout --service-name: passed on, and the tracer answers each") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-export");
  // --exit-after-attach attaches, detaches and exits.
  auto r = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "--exit-after-attach"}));
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(contains(r.err, "weave: detached"));
  // --metrics on port 0 says the port it got.
  auto metrics = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "--metrics", "127.0.0.1:0", "--",
                                         "-rounds", "1"}));
  INFO(metrics.err);
  CHECK(metrics.status == 0);
  CHECK(std::regex_search(metrics.err, std::regex(R"(weave: metrics at http://127\.0\.0\.1:\d+/metrics)")));
  // --otlp and --service-name reach the tracer, which checks them before it attaches: a host that
  // is not an IP address is refused by the tracer, naming the option.
  auto otlp = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "--otlp", "http://collector.invalid:4318",
                                      "--service-name", "svc", "--exit-after-attach"}));
  CHECK(otlp.status == 2);
  CHECK(contains(otlp.err, "weave: --otlp "));
  auto named = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "--service-name", "svc",
                                       "--exit-after-attach"}));
  CHECK(named.status == 2);
  CHECK(contains(named.err, "--service-name names the spans --otlp sends"));
  // --otlp-timeout likewise needs --otlp, and a number of seconds from 1 to 3600.
  auto timeout = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "--otlp-timeout", "30",
                                         "--exit-after-attach"}));
  CHECK(timeout.status == 2);
  CHECK(contains(timeout.err, "--otlp-timeout is for the spans --otlp sends"));
  auto zero = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "--otlp", "http://127.0.0.1:9",
                                      "--otlp-timeout", "0", "--exit-after-attach"}));
  CHECK(zero.status == 2);
  CHECK(contains(zero.err, "--otlp-timeout"));
  // --stats=SECONDS passes on as one word (the binary after it is not its value).
  auto stats = e2e::run(weave_in(dir, {"trace", "--stats=0", e2e::fixture("fixture"), "main.Ints", "--exit-after-attach"}));
  CHECK(stats.status == 0);
}

TEST_CASE("weave trace errors point at the argument, every bad capture at once, and nothing is cached") {
  std::string dir = e2e::temp_dir("front-errors");
  std::vector<std::string> args = {"trace", e2e::fixture("fixture"), "main.(*Server).Handle", "-c", "req.Pth",
                                   "-c", "deadline", "-c", "req.Hdr.Idd"};
  auto r = e2e::run(weave_in(dir, args));
  INFO(r.err);
  CHECK(r.status == 1);
  // Both bad captures, each at its own argument on the command line as typed, with a caret.
  std::string line = "weave trace " + e2e::fixture("fixture") + " 'main.(*Server).Handle' -c req.Pth -c deadline -c req.Hdr.Idd";
  size_t pth = line.find("req.Pth") + 1, idd = line.find("req.Hdr.Idd") + 1;
  CHECK(contains(r.err, "command line:1:" + std::to_string(pth + 4) + ": error["));  // at "Pth"
  CHECK(contains(r.err, "command line:1:" + std::to_string(idd + 8) + ": error["));  // at "Idd"
  CHECK(contains(r.err, "  " + line + "\n"));
  CHECK(contains(r.err, "2 errors"));
  CHECK_FALSE(contains(r.err, ".cache"));
  CHECK_FALSE(contains(r.err, "weave/specs"));
  CHECK(saved_specs(dir) == 0);
  // A function that is not there: at its argument.
  auto missing = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "main.NoSuch"}));
  std::string typed = "weave trace " + e2e::fixture("fixture") + " main.Ints main.NoSuch";
  CHECK(missing.status == 1);
  CHECK(contains(missing.err, "command line:1:" + std::to_string(typed.find("main.NoSuch") + 1) + ": error["));
  CHECK(contains(missing.err, "no function main.NoSuch"));
  // A condition's error at its column inside the argument.
  auto when = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "--when", "a == 1.5"}));
  CHECK(when.status == 1);
  std::string when_line = "weave trace " + e2e::fixture("fixture") + " main.Ints --when 'a == 1.5'";
  CHECK(contains(when.err, "  " + when_line + "\n"));
  CHECK(contains(when.err, "command line:1:"));
  // A bad --min-duration, with its argument.
  auto duration = e2e::run(weave_in(dir, {"trace", e2e::fixture("fixture"), "main.Ints", "--min-duration", "5 parsecs"}));
  CHECK(duration.status == 1);
  CHECK(contains(duration.err, "min_duration: \"5 parsecs\" is not a duration"));
  CHECK(contains(duration.err, "command line:1:"));
  CHECK(saved_specs(dir) == 0);
}

TEST_CASE("weave trace --when-return goes into the spec, and the generator's answer points at the argument") {
  std::string dir = e2e::temp_dir("front-when-return");
  auto r = e2e::run(weave_in(dir, {"trace", "--format", "json", e2e::fixture("fixture"), "main.Divmod", "--when-return",
                                   "r == 5", "--", "-rounds", "3", "-truth", dir + "/truth.jsonl"}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  // The spec weave printed carries it, and only the calls whose remainder the program itself
  // recorded as 5 are shown, entry and return.
  CHECK(contains(r.err, "    when_return: 'r == 5'\n"));
  std::vector<json> events = e2e::json_lines(r.out);
  std::vector<json> entries = of(events, "main.Divmod", "entry"), returns = of(events, "main.Divmod", "return");
  std::vector<json> want;
  for (const json &t : truth_of(dir + "/truth.jsonl", "main.Divmod:return"))
    if (t["args"]["r"] == 5)
      want.push_back(t);
  REQUIRE(want.size() == 1);
  REQUIRE(returns.size() == want.size());
  REQUIRE(entries.size() == want.size());
  CHECK(returns[0]["results"] == want[0]["args"]);

  // A name the function does not have: the generator's error points at it in --when-return's
  // argument, and nothing is cached. `err` for an unnamed error result is told its name, ~r0.
  std::string bad_dir = e2e::temp_dir("front-when-return-err");
  auto bad = e2e::run(weave_in(bad_dir, {"trace", e2e::fixture("assert"), "main.Fail", "--when-return", "err != nil"}));
  INFO(bad.err);
  CHECK(bad.status == 1);
  std::string line = "weave trace " + e2e::fixture("assert") + " main.Fail --when-return 'err != nil'";
  CHECK(contains(bad.err, "command line:1:" + std::to_string(line.find("err != nil") + 1) + ": error[unknown-parameter]"));
  CHECK(contains(bad.err, "did you mean ~r0? The function's error result has no name"));
  CHECK(saved_specs(bad_dir) == 0);
}

TEST_CASE("weave trace on a stripped binary times the calls, saying so, instead of refusing") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-stripped");
  auto r = e2e::run(weave_in(dir, {"trace", "--format", "json", e2e::fixture("fixture_stripped"), "main.Ints", "--",
                                   "-rounds", "3", "-truth", dir + "/truth.jsonl"}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.err, "has no DWARF (stripped): tracing its calls and their durations, without values"));
  CHECK_FALSE(contains(r.err, "no-dwarf-params"));
  std::vector<json> events = e2e::json_lines(r.out);
  std::vector<json> truth = truth_of(dir + "/truth.jsonl", "main.Ints");
  CHECK(of(events, "main.Ints", "entry").size() == truth.size());
  std::vector<json> returns = of(events, "main.Ints", "return");
  REQUIRE(returns.size() == truth.size());
  for (const json &ret : returns)
    CHECK(ret["duration_ns"].get<uint64_t>() > 0);
}

TEST_CASE("arguments in the wrong order get a hint in the form of the command that was run") {
  std::string dir = e2e::temp_dir("front-order");
  std::string bin = e2e::fixture("fixture"), spec = e2e::source("tests/e2e/fixture.yaml");
  auto trace = e2e::run(weave_in(dir, {"trace", "main.Ints", bin}));
  CHECK(trace.status == 1);
  CHECK(contains(trace.err, "hint: the binary comes first: weave trace BINARY FUNCTION..."));
  auto funcs = e2e::run({e2e::weave(), "funcs", "main.*", bin});
  CHECK(funcs.status == 1);
  CHECK(contains(funcs.err, "hint: the binary comes first: weave funcs BINARY [PATTERN]"));
  auto spec_to_trace = e2e::run(weave_in(dir, {"trace", spec, "main.Ints"}));
  CHECK(spec_to_trace.status == 1);
  CHECK(contains(spec_to_trace.err, "to trace with a spec: weave run SPEC BINARY"));
  auto run = e2e::run(weave_in(dir, {"run", bin, spec}));
  CHECK(run.status == 1);
  CHECK(contains(run.err, "the spec comes first, then the binary: weave run SPEC BINARY"));
  auto check = e2e::run({e2e::weave(), "check", bin, spec, dir});
  CHECK(contains(check.err, "the spec comes first, then the binary: weave check SPEC BINARY DIR"));
  auto build = e2e::run({e2e::weave(), bin, spec});
  CHECK(contains(build.err, "the spec comes first, then the binary: weave build SPEC BINARY"));
}

TEST_CASE("a spec's independent errors in one run: every bad capture of every probe, a bad value behind a schema error") {
  std::string dir = e2e::temp_dir("front-all-errors");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.(*Server).Handle\n"
                                       "    capture: [req.Pth, deadline, req.Hdr.Idd]\n"
                                       "  - function: main.Nested\n"
                                       "    capture: [r.Pat, r.Size]\n";
  auto r = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(contains(r.err, "spec.yaml:3:19: error[")); // at Pth
  CHECK(contains(r.err, "spec.yaml:3:42: error[")); // at Idd
  CHECK(contains(r.err, "spec.yaml:5:17: error[")); // at Pat
  CHECK(contains(r.err, "3 errors"));
  std::ofstream(dir + "/keys.yaml") << "probes:\n"
                                       "  - function: main.Ints\n"
                                       "    return: tru\n"
                                       "    min_duration: 5 parsecs\n"
                                       "    captur: [a]\n"
                                       "    stak: 3\n";
  auto keys = e2e::run({e2e::weave(), "build", dir + "/keys.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(keys.err);
  CHECK(keys.status == 1);
  CHECK(contains(keys.err, "keys.yaml:3:13: error[spec-schema]"));
  CHECK(contains(keys.err, "keys.yaml:4:19: error[spec-schema]: min_duration: \"5 parsecs\""));
  CHECK(contains(keys.err, "keys.yaml:5:5: error["));
  CHECK(contains(keys.err, "keys.yaml:6:5: error["));
  CHECK(contains(keys.err, "4 errors"));
}

TEST_CASE("--folded with no probe that captures stacks warns, and the tracer given another process's pid says so") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-folded-warning");
  auto built = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  REQUIRE(built.status == 0);
  auto r = e2e::run({dir + "/out/tracer", "--folded", dir + "/out.folded", "--", e2e::fixture("fixture"), "-rounds", "1"});
  CHECK(r.status == 0);
  CHECK(contains(r.err, "weave: warning: --folded " + dir + "/out.folded: no probe of this tracer captures stacks"));
  // A process running something else: named as such, not as a build id to regenerate for.
  auto other = e2e::spawn({"sleep", "30"}, dir);
  auto wrong = e2e::run({dir + "/out/tracer", "--pid", std::to_string(other.pid)});
  CHECK(wrong.status == 2);
  CHECK(contains(wrong.err, "--pid " + std::to_string(other.pid) + ": that process is not running the binary this tracer was built for"));
  kill(other.pid, SIGKILL);
  other.wait();
}

TEST_CASE("under LANG=C the tracer's text says <- and us, in ASCII, and a UTF-8 locale keeps the arrow") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("front-ascii");
  auto c = e2e::run({"env", "LANG=C", "LC_ALL=", "LC_CTYPE=", "XDG_CACHE_HOME=" + dir + "/cache", e2e::weave(), "trace",
                     e2e::fixture("fixture"), "main.Ints", "--graph", "--", "-rounds", "2"});
  INFO(c.err);
  REQUIRE(c.status == 0);
  auto text = e2e::run({"env", "LANG=C", "LC_ALL=", "LC_CTYPE=", "XDG_CACHE_HOME=" + dir + "/cache", e2e::weave(), "trace",
                        e2e::fixture("fixture"), "main.Ints", "--", "-rounds", "2"});
  REQUIRE(text.status == 0);
  std::regex ret(R"(goid=1 <- main\.Ints\(~r0=-?\d+\)  [\d.]+(ns|us|ms|s)$)");
  size_t returns = 0;
  std::istringstream in(text.out);
  for (std::string line; std::getline(in, line);) {
    returns += std::regex_search(line, ret);
    if (contains(line, "main.Ints"))
      CHECK_MESSAGE(std::none_of(line.begin(), line.end(), [](char ch) { return static_cast<unsigned char>(ch) >= 0x80; }), line);
  }
  CHECK(returns == 2);
  // --graph reads the same text back: its returns are still recognised (durations, no stray arrows).
  CHECK_FALSE(contains(c.out, "\xe2\x86\x90"));
  CHECK_FALSE(contains(c.out, "\xc2\xb5"));
  // The summary's durations too.
  CHECK_FALSE(contains(c.err, "\xc2\xb5"));
  // And with a UTF-8 locale, the arrow as before.
  auto utf8 = e2e::run({"env", "LANG=C.UTF-8", "XDG_CACHE_HOME=" + dir + "/cache", e2e::weave(), "trace",
                        e2e::fixture("fixture"), "main.Ints", "--", "-rounds", "1"});
  CHECK(contains(utf8.out, "goid=1 \xe2\x86\x90 main.Ints(~r0="));
}
