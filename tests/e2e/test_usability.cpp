// End to end for the rough edges of a first day with weave: a tracer that finds its binary from
// any working directory (and says what to do when it cannot), events written to a file of their
// own while the traced program keeps stdout, and plain wording.
#include "harness.h"

#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <pty.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool contains(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}

// The main.Ints calls of one process, each with the values the fixture says it passed.
void check_ints(const std::vector<json> &events, int pid, const std::string &truth_path) {
  std::vector<json> seen, truths;
  for (const json &e : events)
    if (e["function"] == "main.Ints" && e["kind"] == "entry" && (pid == 0 || e["pid"] == pid))
      seen.push_back(e);
  for (const json &t : e2e::json_lines(e2e::read_file(truth_path)))
    if (t["function"] == "main.Ints")
      truths.push_back(t);
  REQUIRE(!truths.empty());
  REQUIRE(seen.size() == truths.size());
  for (size_t i = 0; i < truths.size(); ++i)
    for (auto &[expr, expected] : truths[i]["args"].items()) {
      CAPTURE(expr);
      CHECK(seen[i]["args"][expr] == expected);
    }
}

} // namespace

TEST_CASE("a tracer built in one directory finds its binary from another, and a missing one points "
          "at --binary") {
  e2e::require_bpf();
  std::string root = e2e::temp_dir("usability-path");
  fs::create_directories(root + "/app");
  fs::create_directories(root + "/elsewhere");
  fs::copy_file(e2e::fixture("fixture"), root + "/app/svc");
  fs::current_path(root + "/app");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), "./svc", "-o", "out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  // Recorded relative to the output directory, where the tracer lives: no machine-specific prefix.
  json manifest = json::parse(e2e::read_file(root + "/app/out/probes.json"));
  CHECK(manifest["target"]["path"] == "../svc");

  // `./svc` and `svc` are one file: not drift, and no note about the path either.
  auto check = e2e::run({e2e::weave(), "check", e2e::source("tests/e2e/fixture.yaml"), "svc", "out"});
  CHECK(check.status == 0);
  CHECK_FALSE(contains(check.out, "note:"));

  fs::current_path(root + "/elsewhere");
  // From another directory the same tree checks clean too, named by another relative path.
  check = e2e::run({e2e::weave(), "check", e2e::source("tests/e2e/fixture.yaml"), "../app/svc",
                    "../app/out"});
  INFO(check.out);
  CHECK(check.status == 0);
  CHECK_FALSE(contains(check.out, "note:"));

  auto version = e2e::run({"../app/out/tracer", "--version"});
  CHECK(contains(version.out, "target: ../svc (from this tracer's directory: " + root + "/app/svc)"));

  // No --binary, no -- CMD, no --pid: every process running the recorded binary, found from here.
  auto trace = e2e::spawn({"../app/out/tracer", "--format", "json", "--no-summary"}, root + "/elsewhere");
  REQUIRE_MESSAGE(trace.wait_for_err("weave: tracing"), trace.read_err());
  CHECK(contains(trace.read_err(), "in " + root + "/app/svc (all processes)"));
  auto program = e2e::run({root + "/app/svc", "-rounds", "2", "-truth", root + "/truth.jsonl"});
  REQUIRE(program.status == 0);
  kill(trace.pid, SIGINT);
  CHECK(trace.wait() == 0);
  // The program's pid: Result does not carry it, so take the pid of its events (only it ran svc).
  check_ints(e2e::json_lines(trace.read_out()), 0, root + "/truth.jsonl");

  // The binary gone: the tracer says which file it looked for and how to name another.
  fs::rename(root + "/app/svc", root + "/app/svc.moved");
  auto missing = e2e::run({"../app/out/tracer"});
  INFO(missing.err);
  CHECK(missing.status == 2);
  CHECK(contains(missing.err, "weave: " + root + "/app/svc: cannot open"));
  CHECK(contains(missing.err, "this tracer was built for " + root + "/app/svc (recorded as ../svc"));
  CHECK(contains(missing.err, "--binary PATH"));
  // And --binary is that way.
  auto named = e2e::run({"../app/out/tracer", "--binary", root + "/app/svc.moved", "--exit-after-attach"});
  INFO(named.err);
  CHECK(named.status == 0);
}

TEST_CASE("-o through a symbolic link to a directory: the tracer still finds its binary, and the hint runs") {
  // The path was recorded lexically (lnk/out -> ../../svc), but the tracer resolves it from where
  // it really is (elsewhere/out), so it looked for a file that is not there and exited 2.
  e2e::require_bpf();
  std::string root = e2e::temp_dir("usability-symlink");
  fs::create_directories(root + "/app");
  fs::create_directories(root + "/elsewhere/deeper");
  fs::copy_file(e2e::fixture("fixture"), root + "/app/svc");
  fs::create_directory_symlink(root + "/elsewhere/deeper", root + "/app/lnk");
  fs::current_path(root + "/app");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), "svc", "-o", "lnk/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  json manifest = json::parse(e2e::read_file(root + "/elsewhere/deeper/out/probes.json"));
  CHECK(manifest["target"]["path"] == "../../../app/svc");
  // The hint names a command a shell runs as written: `-- svc` would look svc up in PATH.
  CHECK(contains(built.err, "run: lnk/out/tracer -- ./svc\n"));
  for (const std::string &from : {root + "/app", root, std::string("/")}) {
    CAPTURE(from);
    fs::current_path(from);
    auto attached = e2e::run({root + "/app/lnk/out/tracer", "--exit-after-attach"});
    INFO(attached.err);
    CHECK(attached.status == 0);
    auto version = e2e::run({root + "/app/lnk/out/tracer", "--version"});
    CHECK(contains(version.out, "(from this tracer's directory: " + root + "/app/svc)"));
  }
  // The hint's own command, from where weave was run.
  fs::current_path(root + "/app");
  auto hinted = e2e::run({"lnk/out/tracer", "--format", "json", "--no-summary", "--", "./svc", "-rounds", "1",
                          "-truth", root + "/truth.jsonl"});
  INFO(hinted.err);
  REQUIRE(hinted.status == 0);
  check_ints(e2e::json_lines(hinted.out), 0, root + "/truth.jsonl");
}

TEST_CASE("-o FILE: the events go to the file, the traced program keeps stdout, both complete") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("usability-output");
  auto built = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"),
                         e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  // Without -truth the fixture writes what it passes to its own stdout, one JSON line per call.
  for (const char *format : {"json", "text"}) {
    CAPTURE(format);
    std::string events_path = dir + "/events." + format;
    auto r = e2e::run({dir + "/out/tracer", "--format", format, "-o", events_path, "--",
                       e2e::fixture("fixture"), "-rounds", "2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    // stdout is the program's alone: every line is one of its truth lines, none an event.
    std::vector<json> truths = e2e::json_lines(r.out);
    REQUIRE(truths.size() > 10);
    size_t stdout_lines = 0;
    for (char c : r.out)
      stdout_lines += c == '\n';
    CHECK(stdout_lines == truths.size());
    std::map<std::string, size_t> truth_calls;
    for (const json &t : truths) {
      CHECK_FALSE(t.contains("probe"));
      ++truth_calls[t["function"].get<std::string>()];
    }
    std::string events_text = e2e::read_file(events_path);
    if (std::string(format) == "json") {
      std::vector<json> events = e2e::json_lines(events_text);
      std::map<std::string, size_t> event_calls;
      for (const json &e : events) {
        REQUIRE(e.contains("probe"));
        ++event_calls[e["function"].get<std::string>()];
      }
      // Every call of every traced function is in the file, none twice: 8 probes.
      CHECK(event_calls.size() == 8);
      for (const auto &[function, n] : event_calls) {
        CAPTURE(function);
        CHECK(n == truth_calls[function]);
      }
      std::string truth_path = dir + "/truth.jsonl";
      std::ofstream(truth_path) << r.out;
      check_ints(events, 0, truth_path);
    } else {
      // Text: one line per event, each naming a traced function, as many as the program made.
      std::istringstream in(events_text);
      size_t lines = 0, ints = 0;
      for (std::string line; std::getline(in, line);) {
        ++lines;
        CHECK(contains(line, " goid="));
        ints += contains(line, " main.Ints(");
      }
      CHECK(ints == truth_calls["main.Ints"]);
      CHECK(lines > ints);
    }
    // The summary stays on stderr.
    CHECK(contains(r.err, "main.Ints (entry): 2 events, 0 lost"));
  }
  // A file that cannot be written stops the tracer before the program runs.
  auto bad = e2e::run({dir + "/out/tracer", "-o", dir + "/no/such/dir/events", "--",
                       e2e::fixture("fixture"), "-rounds", "1"});
  CHECK(bad.status == 2);
  CHECK(contains(bad.err, "-o " + dir + "/no/such/dir/events: No such file or directory"));
  CHECK(bad.out.empty());
}

TEST_CASE("a function inlined into every caller: said so, where it went, and what to do") {
  // The fixture's main.inlineMe1 and inlineMe2 are inlined into main.CallChain (main.go:197-201).
  std::string dir = e2e::temp_dir("usability-inlined");
  // inlined: false: the function's own body only, which it does not have.
  std::ofstream(dir + "/exact.yaml") << "probes:\n  - function: main.inlineMe2\n    args: all\n    inlined: false\n";
  std::ofstream(dir + "/glob.yaml") << "probes:\n  - function: 'main.inlineMe*'\n";
  auto exact = e2e::run({e2e::weave(), "build", dir + "/exact.yaml", e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  INFO(exact.err);
  CHECK(exact.status == 1);
  CHECK(contains(exact.err, "exact.yaml:2:15: error[inlined-function]: no function main.inlineMe2 in "));
  CHECK(contains(exact.err, ": the compiler inlined it into every caller (main.CallChain), so it has "
                            "no code of its own to probe"));
  CHECK(contains(exact.err, "//go:noinline"));
  CHECK(contains(exact.err, "-gcflags=-l"));
  CHECK(contains(exact.err, "inlined: true"));
  CHECK_FALSE(fs::exists(dir + "/out"));
  // By default a function named exactly is probed at its inlined copies (tests/e2e/test_inlined.cpp).
  std::ofstream(dir + "/copies.yaml") << "probes:\n  - function: main.inlineMe2\n    args: all\n";
  auto copies = e2e::run({e2e::weave(), "build", dir + "/copies.yaml", e2e::fixture("fixture"), "-o",
                          dir + "/copies"});
  INFO(copies.err);
  CHECK(copies.status == 0);

  auto glob = e2e::run({e2e::weave(), "build", dir + "/glob.yaml", e2e::fixture("fixture"), "-o",
                        dir + "/out"});
  INFO(glob.err);
  CHECK(glob.status == 1);
  CHECK(contains(glob.err, "main.inlineMe1 into main.CallChain; main.inlineMe2 into main.CallChain"));

  // weave funcs lists the copies, where they are and what a probe can read there.
  auto funcs = e2e::run({e2e::weave(), "funcs", e2e::fixture("fixture"), "main.inlineMe1"});
  CHECK(funcs.status == 0);
  CHECK(contains(funcs.out, "main.inlineMe1  inlined copies: 1"));
  CHECK(contains(funcs.out, "  inlined into main.CallChain at "));
  // A function with a body of its own that the compiler also inlined elsewhere: built, with a
  // warning naming where calls go untraced. (bytes.(*Buffer).Len, in Go 1.19's standard library.)
  std::ofstream(dir + "/partly.yaml") << "probes:\n  - function: 'bytes.(*Buffer).Len'\n    inlined: false\n"
                                         "  - function: main.Ints\n    capture: [a]\n";
  auto partly = e2e::run({e2e::weave(), "build", dir + "/partly.yaml", e2e::fixture("fixture"),
                          "-o", dir + "/partly"});
  INFO(partly.err);
  CHECK(partly.status == 0);
  CHECK(contains(partly.err, "weave: warning: bytes.(*Buffer).Len is also inlined into "
                             "bytes.(*Buffer).grow, encoding/json.compact, encoding/json.Indent: "
                             "calls there run no code of its own and are not traced with inlined: false"));
  CHECK_FALSE(contains(partly.err, "main.Ints is also inlined"));
  // A typo is still a typo: no inlining story, the nearest name instead.
  auto typo = e2e::run({e2e::weave(), "funcs", e2e::fixture("fixture"), "main.CallChian"});
  CHECK(typo.status == 1);
  CHECK_FALSE(contains(typo.err, "inlined"));
  CHECK(contains(typo.err, "main.CallChain"));
}

TEST_CASE("counts are worded for one and for many: 1 event, 2 events") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("usability-plural");
  auto built = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"),
                         e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(contains(built.err, "(8 probes on "));
  auto one = e2e::run({dir + "/out/tracer", "--no-summary", "-o", dir + "/events", "--",
                       e2e::fixture("fixture"), "-rounds", "1", "-truth", "/dev/null"});
  INFO(one.err);
  REQUIRE(one.status == 0);
  CHECK(contains(one.err, "weave: main.Ints (entry): 1 event, 0 lost\n"));
  CHECK(contains(one.err, "weave: total: 9 events, 0 lost\n")); // main.Strings is called twice a round
  CHECK_FALSE(contains(one.err, " 1 events"));
  auto two = e2e::run({dir + "/out/tracer", "--no-summary", "-o", dir + "/events", "--",
                       e2e::fixture("fixture"), "-rounds", "2", "-truth", "/dev/null"});
  CHECK(contains(two.err, "weave: main.Ints (entry): 2 events, 0 lost\n"));

  std::ofstream(dir + "/one.yaml") << "probes:\n  - function: main.Ints\n    capture: [a]\n";
  auto single = e2e::run({e2e::weave(), "build", dir + "/one.yaml", e2e::fixture("fixture"), "-o",
                          dir + "/one"});
  CHECK(contains(single.err, "(1 probe on "));
}

namespace {

// Runs argv with stdout and stderr on a new pseudo-terminal, and returns what it wrote there
// (the terminal's line discipline turns "\n" into "\r\n": undone here). `no_color`: NO_COLOR's
// value, or nullptr to unset it.
std::string run_on_terminal(const std::vector<std::string> &argv, const char *no_color) {
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (no_color)
      setenv("NO_COLOR", no_color, 1);
    else
      unsetenv("NO_COLOR");
    setenv("TERM", "xterm", 1);
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(master, buf, sizeof buf)) > 0) // EIO once the child is gone
    out.append(buf, static_cast<size_t>(n));
  close(master);
  waitpid(pid, nullptr, 0);
  std::string plain;
  for (char c : out)
    if (c != '\r')
      plain += c;
  return plain;
}

std::string strip_escapes(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033' && i + 1 < text.size() && text[i + 1] == '[') {
      i = text.find('m', i);
      continue;
    }
    out += text[i];
  }
  return out;
}

} // namespace

TEST_CASE("colour on a terminal, plain when piped, NO_COLOR honoured, --color decides") {
  std::string dir = e2e::temp_dir("usability-color");
  std::ofstream(dir + "/bad.yaml") << "probes:\n  - function: main.inlineMe2\n    inlined: false\n";
  std::vector<std::string> build = {e2e::weave(), "build", dir + "/bad.yaml",
                                    e2e::fixture("fixture"), "-o", dir + "/out"};
  const std::string red = "\033[1;31merror[inlined-function]:\033[0m";
  // Piped (the harness reads pipes): plain.
  auto piped = e2e::run(build);
  CHECK(piped.status == 1);
  CHECK(piped.err.find('\033') == std::string::npos);
  // On a terminal: coloured, and the same text once the escapes are gone.
  std::string tty = run_on_terminal(build, nullptr);
  INFO(tty);
  CHECK(contains(tty, red));
  CHECK(contains(tty, "\033[36mhint:\033[0m"));
  CHECK(strip_escapes(tty) == piped.err);
  // NO_COLOR (any non-empty value) turns it off; an empty NO_COLOR does not.
  CHECK(run_on_terminal(build, "1") == piped.err);
  CHECK(contains(run_on_terminal(build, ""), red));
  // The flag wins either way.
  std::vector<std::string> never = build;
  never.insert(never.begin() + 2, "--color=never");
  CHECK(run_on_terminal(never, nullptr) == piped.err);
  std::vector<std::string> always = build;
  always.insert(always.begin() + 2, "--color=always");
  auto forced = e2e::run(always);
  CHECK(contains(forced.err, red));
  CHECK(strip_escapes(forced.err) == piped.err);
  auto bad = e2e::run({e2e::weave(), "build", "--color=sometimes", dir + "/bad.yaml", e2e::fixture("fixture")});
  CHECK(bad.status == 2);
}

TEST_CASE("the tracer's text events: coloured on a terminal or with --color=always, else plain") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("usability-color-tracer");
  auto built = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"),
                         e2e::fixture("fixture"), "-o", dir + "/out"});
  REQUIRE(built.status == 0);
  auto trace = [&](const std::vector<std::string> &flags) {
    std::vector<std::string> argv = {dir + "/out/tracer", "--no-summary"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (const char *a : {"--", "FIXTURE", "-rounds", "1", "-truth", "/dev/null"})
      argv.push_back(std::string(a) == "FIXTURE" ? e2e::fixture("fixture") : a);
    return argv;
  };
  auto plain = e2e::run(trace({}));
  REQUIRE(plain.status == 0);
  CHECK(plain.out.find('\033') == std::string::npos);
  CHECK(contains(plain.out, " main.Ints(a=-128"));
  auto forced = e2e::run(trace({"--color=always"}));
  CHECK(contains(forced.out, "\033[1mmain.Ints\033[0m(a=-128"));
  CHECK(contains(forced.out, "\033[2m0."));
  // The same lines but for the escapes: main.Ints's, whose values are the same in every run, from
  // the goroutine id on (times and pids differ).
  auto ints_lines = [](const std::string &text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (contains(line, " main.Ints("))
        lines.push_back(line.substr(line.find(" goid=")));
    return lines;
  };
  CHECK(ints_lines(plain.out).size() == 1);
  CHECK(ints_lines(strip_escapes(forced.out)) == ints_lines(plain.out));
  // --color=auto into a file: plain; JSON is never coloured.
  auto to_file = e2e::run(trace({"-o", dir + "/events.txt"}));
  CHECK(e2e::read_file(dir + "/events.txt").find('\033') == std::string::npos);
  auto json_forced = e2e::run(trace({"--format", "json", "--color=always"}));
  CHECK(json_forced.out.find('\033') == std::string::npos);
  // On a terminal (stdout and stderr both), coloured unless NO_COLOR says no.
  std::string tty = run_on_terminal(trace({}), nullptr);
  CHECK(contains(tty, "\033[1mmain.Ints\033[0m("));
  std::string no_color = run_on_terminal(trace({}), "1");
  CHECK(contains(no_color, " main.Ints(a=-128"));
  CHECK(no_color.find('\033') == std::string::npos);
}

TEST_CASE("weave trace BIN FUNC -- ARGS: no spec file, every parameter and result, the spec printed") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("usability-trace");
  std::string cache = "XDG_CACHE_HOME=" + dir + "/cache";
  auto r = e2e::run({"env", cache, e2e::weave(), "trace", "--format", "json", e2e::fixture("fixture"),
                     "main.Ints", "main.(*Server).Handle", "--", "-rounds", "2", "-truth",
                     dir + "/truth.jsonl"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  // The spec it used, printed to be saved, and the file it names holds the same text.
  const std::string spec = "# weave trace: every parameter, and the results at every RET\n"
                           "probes:\n"
                           "  - function: 'main.Ints'\n    args: all\n    return: true\n"
                           "  - function: 'main.(*Server).Handle'\n    args: all\n    return: true\n";
  CHECK(contains(r.err, "):\n" + spec));
  size_t open = r.err.find("weave: tracing with this spec (");
  REQUIRE(open != std::string::npos);
  open += std::string("weave: tracing with this spec (").size();
  std::string spec_path = r.err.substr(open, r.err.find(';', open) - open);
  CHECK(e2e::read_file(spec_path) == spec);
  // Every parameter of every call, value for value, and a return event per call.
  std::vector<json> events = e2e::json_lines(r.out);
  check_ints(events, 0, dir + "/truth.jsonl");
  size_t entries = 0, returns = 0, handle = 0;
  for (const json &e : events) {
    if (e["function"] == "main.Ints")
      (e["kind"] == "entry" ? entries : returns) += 1;
    handle += e["function"] == "main.(*Server).Handle";
  }
  CHECK(entries == 2);
  CHECK(returns == 2);
  CHECK(handle == 4);
  // Saved as it is, the spec is an ordinary spec: weave run finds the tracer trace built.
  // With -o passed on to the tracer: the events in the file, the program's truth on stdout.
  // --perfetto and --folded passed on too: the tracer writes both.
  auto again = e2e::run({"env", cache, e2e::weave(), "run", spec_path, e2e::fixture("fixture"),
                         "--format", "json", "-o", dir + "/again.jsonl", "--perfetto", dir + "/again.trace.json",
                         "--folded", dir + "/again.folded", "--", "-rounds", "1"});
  CHECK(again.status == 0);
  CHECK(contains(e2e::read_file(dir + "/again.trace.json"), "\"name\":\"main.Ints\""));
  CHECK(std::filesystem::exists(dir + "/again.folded")); // written, and empty: the spec asks for no stack
  CHECK(contains(again.err, "weave: using cached tracer"));
  std::ofstream(dir + "/again-truth.jsonl") << again.out;
  CHECK_FALSE(contains(again.out, "\"probe\""));
  check_ints(e2e::json_lines(e2e::read_file(dir + "/again.jsonl")), 0, dir + "/again-truth.jsonl");
  // A function that is not there is weave's error, before anything runs.
  auto missing = e2e::run({"env", cache, e2e::weave(), "trace", e2e::fixture("fixture"),
                           "main.NoSuch", "--", "-rounds", "1"});
  CHECK(missing.status == 1);
  CHECK(contains(missing.err, "no function main.NoSuch"));
}

TEST_CASE("probes[].name: two probes on one function print apart in text and --graph, values the program's") {
  // Text lines and --graph printed the function alone, so the two probes' lines were identical.
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("usability-names");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.(*Server).Handle\n"
                                       "    name: first\n"
                                       "    capture: [req.Path, deadline]\n"
                                       "    when: 'deadline == 100'\n"
                                       "  - function: main.(*Server).Handle\n"
                                       "    name: later\n"
                                       "    capture: [req.Path, deadline]\n"
                                       "    when: 'deadline >= 200'\n"
                                       "    return: true\n";
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("hello"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  // What hello says it passes, one line per call: hello: Handle(req.Path="/", ..., deadline=100, ...)
  auto text = e2e::run({dir + "/out/tracer", "--no-summary", "--", e2e::fixture("hello")});
  INFO(text.out << text.err);
  REQUIRE(text.status == 0);
  std::vector<std::string> calls, lines;
  std::istringstream in(text.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("hello: Handle(", 0) == 0) {
      size_t path = line.find("req.Path="), comma = line.find(", ", path);
      size_t deadline = line.find("deadline="), end = line.find(", ", deadline);
      calls.push_back(line.substr(path, comma - path) + ", " + line.substr(deadline, end - deadline));
    } else if (line.find(" goid=") != std::string::npos) {
      lines.push_back(line.substr(line.find(' ', line.find(" goid=") + 1) + 1));
    }
  }
  REQUIRE(calls.size() == 3);
  std::vector<std::string> want = {"first: main.(*Server).Handle(" + calls[0] + ")",
                                   "later: main.(*Server).Handle(" + calls[1] + ")",
                                   "\u2190 later: main.(*Server).Handle(~r0=true)",
                                   "later: main.(*Server).Handle(" + calls[2] + ")",
                                   "\u2190 later: main.(*Server).Handle(~r0=true)"};
  REQUIRE(lines.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    std::string got = lines[i];
    if (got.rfind("\u2190", 0) == 0)
      got = got.substr(0, got.rfind("  ")); // the duration
    CHECK(got == want[i]);
  }
  auto graph = e2e::run({dir + "/out/tracer", "--graph", "--no-summary", "--", e2e::fixture("hello")});
  INFO(graph.out);
  REQUIRE(graph.status == 0);
  CHECK(contains(graph.out, "first: main.(*Server).Handle(" + calls[0] + ")  #")); // then its call id
  for (int i : {1, 2})
    CHECK(contains(graph.out, "later: main.(*Server).Handle(" + calls[i] + ") = (~r0=true)  "));
}
