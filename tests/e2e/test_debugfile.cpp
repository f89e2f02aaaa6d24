// End to end, for real: a stripped binary traced by name with its DWARF in a separate file — the
// unstripped build's debug part split off with objcopy, as distributions ship it — given with
// --debug-file, found through .gnu_debuglink, and found by GNU build id under --debug-dir. The
// probes must be byte for byte the ones the unstripped binary gives, and every value the program's
// own. A debug file of another build is refused, never believed.
#include "harness.h"

#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

void sh(const std::vector<std::string> &argv) {
  auto r = e2e::run(argv, 240000);
  INFO(argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << ": " << r.err);
  REQUIRE(r.status == 0);
}

// `binary` split as distributions do: DIR/NAME.debug (DWARF and symbols), DIR/NAME (stripped).
void split(const std::string &binary, const std::string &dir, const std::string &name) {
  sh({"objcopy", "--only-keep-debug", binary, dir + "/" + name + ".debug"});
  sh({"objcopy", "--strip-all", binary, dir + "/" + name});
}

std::string generated(const std::string &out, const std::string &file, const std::string &binary_path) {
  // The outputs record the traced binary's path; the rest must not differ.
  return std::regex_replace(e2e::read_file(out + "/" + file), std::regex(binary_path), "BINARY");
}

// Builds spec for `traced` (with `extra` arguments) and for the unstripped `reference`: the same
// generated files; then traces `traced` and compares every value of main.Ints, main.SpillOver and
// main.Nested with what the program recorded.
void check_traced_by_name(const std::string &dir, const std::string &traced, const std::string &reference,
                          const std::vector<std::string> &extra) {
  std::string spec = e2e::source("tests/e2e/fixture.yaml");
  std::vector<std::string> argv = {e2e::weave(), "build", spec, traced, "-o", dir + "/out"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto built = e2e::run(argv);
  INFO(built.err);
  REQUIRE(built.status == 0);
  CHECK(built.err.find("weave: DWARF and symbols from ") != std::string::npos);
  auto ref = e2e::run({e2e::weave(), "build", spec, reference, "-o", dir + "/ref"});
  INFO(ref.err);
  REQUIRE(ref.status == 0);
  for (const char *file : {"probes.bpf.c", "probes.h", "probes.json"}) {
    CAPTURE(file);
    CHECK(generated(dir + "/out", file, traced) == generated(dir + "/ref", file, reference));
  }

  auto run = e2e::run({dir + "/out/tracer", "--format", "json", "--", traced, "-truth", dir + "/truth.jsonl",
                       "-rounds", "2"});
  INFO(run.err);
  REQUIRE(run.status == 0);
  std::map<std::string, std::vector<json>> truth, events;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    truth[t["function"]].push_back(t["args"]);
  for (auto &e : e2e::json_lines(run.out))
    events[e["function"]].push_back(e["args"]);
  size_t compared = 0;
  for (const char *function : {"main.Ints", "main.SpillOver", "main.Nested"}) {
    CAPTURE(function);
    REQUIRE(events[function].size() == truth[function].size());
    REQUIRE(!truth[function].empty());
    for (size_t i = 0; i < truth[function].size(); ++i)
      for (auto &[name, value] : events[function][i].items()) {
        CAPTURE(name);
        // Nested's captures are field paths (r.Path): the truth has them under the same names.
        REQUIRE(truth[function][i].contains(name));
        CHECK(value == truth[function][i][name]);
        ++compared;
      }
  }
  MESSAGE(compared << " values by name from a stripped binary, equal to the program's");
}

} // namespace

TEST_CASE("--debug-file: a stripped binary traced by name, probes identical to the unstripped build's") {
  e2e::require_bpf();
  for (const char *binary : {"fixture", "fixture_386"}) {
    CAPTURE(binary);
    std::string dir = e2e::temp_dir(std::string("debugfile-") + binary);
    split(e2e::fixture(binary), dir, "server");
    check_traced_by_name(dir, dir + "/server", e2e::fixture(binary), {"--debug-file", dir + "/server.debug"});
  }
}

TEST_CASE("a .gnu_debuglink is followed, and a file with another CRC passed over with a warning") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("debugfile-link");
  split(e2e::fixture("fixture"), dir, "plain");
  fs::create_directories(dir + "/bin/.debug");
  sh({"objcopy", "--add-gnu-debuglink=" + dir + "/plain.debug", dir + "/plain", dir + "/bin/server"});
  // Where debuggers look: beside the binary's directory's .debug/.
  fs::copy_file(dir + "/plain.debug", dir + "/bin/.debug/plain.debug");
  check_traced_by_name(dir, dir + "/bin/server", e2e::fixture("fixture"), {});

  // The same file changed by one byte: its CRC32 is not the link's, so it is not believed.
  {
    std::ofstream(dir + "/bin/.debug/plain.debug", std::ios::app) << 'x';
  }
  auto refused = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"), dir + "/bin/server", "-o",
                           dir + "/refused"});
  CHECK(refused.status != 0);
  CHECK(refused.err.find("debug file " + dir + "/bin/.debug/plain.debug passed over: its CRC32 is not the one "
                         ".gnu_debuglink records") != std::string::npos);
  CHECK(refused.err.find("[no-dwarf-params]") != std::string::npos);
  CHECK(!fs::exists(dir + "/refused"));
}

TEST_CASE("--debug-dir: the debug file found by GNU build id under .build-id/xx/yyyy.debug") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("debugfile-buildid");
  // The fixture with a GNU build id note (Go writes one when asked: -B).
  const std::string id = "5eed0123456789abcdef0123456789abcdef0042";
  auto r = e2e::run({"sh", "-c", "cd \"$0\" && exec \"$@\"", e2e::source("tests/e2e/fixture"), "env",
                     "GOCACHE=" WEAVE_GOCACHE, "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod",
                     "GOPROXY=off", WEAVE_GO, "build", "-trimpath", "-ldflags=-B=0x" + id, "-o",
                     dir + "/withid", "."},
                    240000);
  INFO(r.err);
  REQUIRE(r.status == 0);
  fs::create_directories(dir + "/debug/.build-id/" + id.substr(0, 2));
  sh({"objcopy", "--only-keep-debug", dir + "/withid", dir + "/debug/.build-id/" + id.substr(0, 2) + "/" +
                                                            id.substr(2) + ".debug"});
  sh({"objcopy", "--strip-all", dir + "/withid", dir + "/server"});
  check_traced_by_name(dir, dir + "/server", dir + "/withid", {"--debug-dir", dir + "/debug"});
}

TEST_CASE("a debug file of another build, another architecture, no build id, or not a file is refused") {
  std::string dir = e2e::temp_dir("debugfile-refused");
  split(e2e::fixture("fixture"), dir, "server");
  split(e2e::fixture("fixture_pie"), dir, "other");
  split(e2e::fixture("fixture_386"), dir, "other386");
  auto build = [&](const std::string &binary, const std::string &debug) {
    return e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"), binary, "--debug-file", debug,
                     "-o", dir + "/out"});
  };
  auto another = build(dir + "/server", dir + "/other.debug");
  CHECK(another.status == 1);
  CHECK(another.err.find("[debug-file-mismatch]") != std::string::npos);
  CHECK(another.err.find("its Go build id is ") != std::string::npos);
  auto arch = build(dir + "/server", dir + "/other386.debug");
  CHECK(arch.status == 1);
  CHECK(arch.err.find("is for another architecture than amd64") != std::string::npos);
  // Neither carries a build id: nothing proves they belong together.
  sh({"objcopy", "--remove-section=.note.go.buildid", dir + "/server", dir + "/noid"});
  sh({"objcopy", "--remove-section=.note.go.buildid", dir + "/server.debug", dir + "/noid.debug"});
  auto unverified = build(dir + "/noid", dir + "/noid.debug");
  CHECK(unverified.status == 1);
  CHECK(unverified.err.find("[debug-file-unverified]") != std::string::npos);
  // A FIFO (it would block a read forever) and a missing file.
  REQUIRE(mkfifo((dir + "/fifo").c_str(), 0600) == 0);
  auto fifo = build(dir + "/server", dir + "/fifo");
  CHECK(fifo.status == 1);
  CHECK(fifo.err.find("[debug-file-unreadable]") != std::string::npos);
  CHECK(fifo.err.find("not a regular file") != std::string::npos);
  auto missing = build(dir + "/server", dir + "/nothing.debug");
  CHECK(missing.status == 1);
  CHECK(missing.err.find("[debug-file-unreadable]") != std::string::npos);
  // The stripped binary itself has no DWARF to give.
  auto nodwarf = build(dir + "/server", dir + "/server");
  CHECK(nodwarf.status == 1);
  CHECK(nodwarf.err.find("[debug-file-no-dwarf]") != std::string::npos);
  CHECK(!fs::exists(dir + "/out"));
}
