// The command line as a new user meets it: weave's and the tracer's help, the usage weave alone
// prints, range errors that say what is wanted, `weave funcs --names`, and the runtime-missing hint.
#include "harness.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace {

const std::string kRuntime = std::string(WEAVE_BINARY_DIR) + "/weave-tracer";

bool has(const std::string &text, const std::string &needle) { return text.find(needle) != std::string::npos; }

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// CLI11's range validators print their upper bound, the largest double in ~300 digits.
bool has_huge_number(const std::string &text) { return std::regex_search(text, std::regex("[0-9]{20}")); }

} // namespace

TEST_CASE("weave --help names the program and leads with the README's form, weave SPEC BIN") {
  auto r = e2e::run({e2e::weave(), "--help"});
  INFO(r.out);
  CHECK(r.status == 0);
  std::vector<std::string> out = lines(r.out);
  REQUIRE(out.size() > 3);
  CHECK(out[1].rfind("Usage: weave SPEC BIN", 0) == 0);
  CHECK(out[2].rfind("   or: weave COMMAND", 0) == 0);
  CHECK(out[3].rfind("The first is weave build SPEC BIN", 0) == 0);
  CHECK_FALSE(has(r.out, "Usage: [OPTIONS]"));
  for (const char *command : {"build", "check", "run", "funcs"})
    CHECK_MESSAGE(std::regex_search(r.out, std::regex(std::string("\n  ") + command + " ")), command);
  CHECK(has(r.out, "Examples:\n  weave spec.yaml ./bin "));
  CHECK(has(r.out, "man weave-spec"));
}

TEST_CASE("weave alone prints a short usage on stderr and exits 2") {
  auto r = e2e::run({e2e::weave()});
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(has(r.err, "Usage: weave SPEC BIN"));
  CHECK(has(r.err, "weave --help"));
  CHECK_FALSE(has(r.err, "A subcommand is required"));
  CHECK(lines(r.err).size() <= 6);
}

TEST_CASE("every command's help has its usage line and examples of that command") {
  for (const std::string command : {"build", "check", "run", "funcs"}) {
    auto r = e2e::run({e2e::weave(), command, "--help"});
    CAPTURE(command);
    INFO(r.out);
    CHECK(r.status == 0);
    CHECK(has(r.out, "Usage: weave " + command + " [OPTIONS]"));
    CHECK(has(r.out, "Examples:\n"));
    CHECK(has(r.out, "\n  weave " + command + " "));
  }
  auto tracer = e2e::run({kRuntime, "--help"});
  INFO(tracer.out);
  CHECK(tracer.status == 0);
  CHECK(has(tracer.out, "Usage: tracer [OPTIONS] [-- CMD ARGS...]"));
  CHECK(has(tracer.out, "Examples:\n  weave-out/tracer -- ./bin args"));
}

TEST_CASE("the examples of weave funcs --help run as written on the example program") {
  std::string hello = e2e::fixture("hello");
  auto all = e2e::run({e2e::weave(), "funcs", hello, "main.*"});
  CHECK(all.status == 0);
  CHECK(has(all.out, "main.(*Server).Handle  0x"));
  CHECK(has(all.out, "param  req "));
  auto methods = e2e::run({e2e::weave(), "funcs", hello, "*.(*Server).*"});
  CHECK(methods.status == 0);
  CHECK(has(methods.out, "main.(*Server).Handle  0x"));
  auto names = e2e::run({e2e::weave(), "funcs", "--names", hello, "main.*"});
  CHECK(names.status == 0);
  CHECK(names.out == "main.(*Server).Handle\nmain.main\n");
}

TEST_CASE("weave funcs --names lists every .gopclntab name once, sorted, and nothing for no match") {
  std::string hello = e2e::fixture("hello");
  auto r = e2e::run({e2e::weave(), "funcs", "--names", hello});
  CHECK(r.status == 0);
  std::vector<std::string> names = lines(r.out);
  CHECK(names.size() > 500); // the runtime's functions too
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  CHECK(std::find(names.begin(), names.end(), "main.(*Server).Handle") != names.end());
  CHECK(std::find(names.begin(), names.end(), "runtime.main") != names.end());
  // A stripped binary has the same names: they come from .gopclntab, not DWARF.
  auto stripped = e2e::run({e2e::weave(), "funcs", "--names", e2e::fixture("fixture_stripped"), "main.Ints"});
  CHECK(stripped.status == 0);
  CHECK(stripped.out == "main.Ints\n");
  auto none = e2e::run({e2e::weave(), "funcs", "--names", hello, "nosuch.*"});
  CHECK(none.status == 0);
  CHECK(none.out.empty());
}

TEST_CASE("the tracer's --stats reads as a flag with an optional SECONDS, and plain --stats works") {
  auto help = e2e::run({kRuntime, "--help"});
  INFO(help.out);
  CHECK(has(help.out, "--stats [SECONDS]"));
  CHECK_FALSE(has(help.out, "NONNEGATIVE"));
  CHECK_FALSE(has(help.out, "INT:"));
  // The runtime alone answers --version without probes: it shows the options parse.
  for (const std::string form : {"--stats", "--stats=5", "--stats=0"}) {
    auto r = e2e::run({kRuntime, form, "--version"});
    CAPTURE(form);
    CHECK(r.status == 0);
    CHECK(has(r.out, "weave-tracer "));
  }
  auto bad = e2e::run({kRuntime, "--stats=-1", "--version"});
  INFO(bad.err);
  CHECK(bad.status != 0);
  CHECK(has(bad.err, "--stats: must be a number of seconds (0: only at exit), not '-1'"));
  CHECK_FALSE(has_huge_number(bad.err));
}

TEST_CASE("--pid 0 says a process id is wanted, without CLI11's 300-digit bound") {
  for (const std::string pid : {"0", "-3", "99999999999999999999999", "12x"}) {
    CAPTURE(pid);
    auto tracer = e2e::run({kRuntime, "--pid", pid});
    INFO(tracer.err);
    CHECK(tracer.status != 0);
    CHECK(has(tracer.err, "--pid: must be a process id (a number from 1 up), not '" + pid + "'"));
    CHECK_FALSE(has_huge_number(tracer.err.substr(0, tracer.err.find(pid)) +
                                tracer.err.substr(tracer.err.find(pid) + pid.size())));
    CHECK(tracer.err.size() < 200);
    auto run = e2e::run({e2e::weave(), "run", "--pid", pid, e2e::source("examples/hello/spec.yaml"),
                         e2e::fixture("hello")});
    INFO(run.err);
    CHECK(run.status == 2);
    CHECK(has(run.err, "--pid: must be a process id (a number from 1 up), not '" + pid + "'"));
    CHECK(run.err.size() < 200);
  }
  auto help = e2e::run({e2e::weave(), "run", "--help"});
  CHECK(has(help.out, "--pid PID"));
  CHECK_FALSE(has(help.out, "POSITIVE"));
}

TEST_CASE("a weave without its runtime names where it looked and the real ways to get one") {
  std::string dir = e2e::temp_dir("runtime-missing");
  fs::create_directories(dir + "/bin");
  fs::copy_file(e2e::weave(), dir + "/bin/weave");
  auto r = e2e::run({dir + "/bin/weave", e2e::source("examples/hello/spec.yaml"), e2e::fixture("hello"), "-o",
                     dir + "/out"});
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(has(r.err, "error[runtime-missing]"));
  CHECK(has(r.err, dir + "/bin/weave-tracer (nor " + dir + "/libexec/weave/weave-tracer)"));
  CHECK(has(r.err, "the weave .deb"));
  CHECK(has(r.err, "cmake --install BUILD"));
  CHECK(has(r.err, "--target weave-tracer"));
  CHECK(has(r.err, "WEAVE_RUNTIME"));
  CHECK_FALSE(has(r.err, "it installs weave-tracer next to weave"));
  CHECK_FALSE(fs::exists(dir + "/out"));
  // The installed layout, bin/../libexec/weave/, is found without any variable.
  fs::create_directories(dir + "/libexec/weave");
  fs::copy_file(kRuntime, dir + "/libexec/weave/weave-tracer");
  auto found = e2e::run({dir + "/bin/weave", e2e::source("examples/hello/spec.yaml"), e2e::fixture("hello"), "-o",
                         dir + "/out"});
  INFO(found.err);
  CHECK(found.status == 0);
  CHECK(fs::exists(dir + "/out/tracer"));
}
