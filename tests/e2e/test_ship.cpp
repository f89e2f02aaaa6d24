// End to end for "built on one machine, carried to another as one file": the tracer is a static
// executable, says what it was built for, and traces from a directory holding nothing else, and
// from an empty root holding nothing but it and the (static) Go binary.
//
// What the empty root needs, found by trying (kernel 6.18, libbpf 1.1): /proc, because the tracer
// finds its payload through /proc/self/exe; and /sys, because libbpf reads the uprobe PMU's type
// from /sys/bus/event_source/devices/uprobe/type (without it libbpf falls back to tracefs
// uprobe_events and the attach fails with ENOENT). No /dev, /etc, /lib, /tmp or /sys/fs/bpf.
#include "harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Builds the fixture's tracer, copies the tracer alone into `dir`/`name`, and removes everything
// else weave wrote, so nothing beside it can be what makes it work.
std::string lone_tracer(const std::string &dir, const std::string &name = "tracer") {
  auto built = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"),
                         e2e::fixture("fixture"), "-o", dir + "/build"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  fs::copy_file(dir + "/build/tracer", dir + "/" + name);
  fs::remove_all(dir + "/build");
  return dir + "/" + name;
}

// Every main.Ints event must carry exactly the values the fixture says it passed (the other
// functions are covered value for value by test_trace.cpp; here the point is that it runs at all).
void check_ints(const std::string &tracer_out, const std::string &truth_path) {
  std::string events_text;
  std::istringstream in(tracer_out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '{')
      events_text += line + "\n";
  std::vector<json> events, truths;
  for (const json &e : e2e::json_lines(events_text))
    if (e["function"] == "main.Ints")
      events.push_back(e);
  for (const json &t : e2e::json_lines(e2e::read_file(truth_path)))
    if (t["function"] == "main.Ints")
      truths.push_back(t);
  REQUIRE(!truths.empty());
  REQUIRE(events.size() == truths.size());
  for (size_t i = 0; i < truths.size(); ++i)
    for (auto &[expr, expected] : truths[i]["args"].items()) {
      CAPTURE(expr);
      CHECK(events[i]["args"][expr] == expected);
    }
}

bool have_program(const std::string &name) {
  for (const char *dir : {"/usr/bin", "/bin", "/usr/sbin", "/sbin"})
    if (access((std::string(dir) + "/" + name).c_str(), X_OK) == 0)
      return true;
  return false;
}

} // namespace

TEST_CASE("the tracer is one static executable: no interpreter, no shared libraries") {
  std::string dir = e2e::temp_dir("ship-static");
  std::string tracer = lone_tracer(dir);
  std::string bytes = e2e::read_file(tracer);
  REQUIRE(bytes.size() > sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  REQUIRE(std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0);
  REQUIRE(eh.e_ident[EI_CLASS] == ELFCLASS64);
  CHECK(eh.e_type == ET_EXEC); // not PIE: no dynamic relocation at start-up either
  bool interp = false, dynamic = false;
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    REQUIRE(eh.e_phoff + (i + 1) * sizeof(ph) <= bytes.size());
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * eh.e_phentsize, sizeof(ph));
    interp |= ph.p_type == PT_INTERP;
    dynamic |= ph.p_type == PT_DYNAMIC;
  }
  CHECK_FALSE(interp);  // no ld.so to find on the target
  CHECK_FALSE(dynamic); // no libc.so, libelf.so, libz.so, libstdc++.so ...
  MESSAGE("tracer: " << bytes.size() << " bytes");
  if (have_program("ldd")) {
    auto ldd = e2e::run({"ldd", tracer});
    CHECK(ldd.out.find("not a dynamic executable") + ldd.err.find("not a dynamic executable") !=
          2 * std::string::npos);
  }
}

TEST_CASE("--version, from a copy alone in an empty directory, names the target and versions") {
  std::string dir = e2e::temp_dir("ship-version");
  std::string tracer = lone_tracer(dir);
  auto manifest = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"),
                            e2e::fixture("fixture"), "--dump", "probes.json"});
  REQUIRE(manifest.status == 0);
  json m = json::parse(manifest.out);
  auto r = e2e::run({tracer, "--version"});
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("weave-tracer " + m["weave_version"].get<std::string>()) != std::string::npos);
  CHECK(r.out.find("build id: " + m["target"]["build_id"].get<std::string>()) != std::string::npos);
  CHECK(r.out.find("go: go1.19.8 amd64") != std::string::npos);
}

TEST_CASE("a tracer copied alone into an empty directory traces the fixture from there") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("ship-alone");
  std::string tracer = lone_tracer(dir + "/empty");
  REQUIRE(std::distance(fs::directory_iterator(dir + "/empty"), fs::directory_iterator()) == 1);
  fs::current_path(dir + "/empty");
  auto r = e2e::run({"./tracer", "--format", "json", "--", e2e::fixture("fixture"), "-truth",
                     dir + "/truth.jsonl", "-rounds", "2"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  check_ints(r.out, dir + "/truth.jsonl");
}

TEST_CASE("in an empty root holding only the tracer and the Go binary, it traces") {
  e2e::require_bpf();
  for (const char *program : {"unshare", "mount", "chroot", "sh"})
    if (!have_program(program)) {
      std::cout << "SKIPPED: needs " << program
                << " (util-linux / coreutils) to build an empty root" << std::endl;
      std::exit(77);
    }
  std::string dir = e2e::temp_dir("ship-root");
  std::string root = dir + "/root";
  fs::create_directories(root);
  lone_tracer(root);
  fs::copy_file(e2e::fixture("fixture"), root + "/fixture");
  // Mount points only: the root holds no files but these two.
  fs::create_directories(root + "/proc");
  fs::create_directories(root + "/sys");
  // A private mount namespace (unshare's default propagation): the mounts vanish with it.
  std::string script = "mount -t proc proc \"$1/proc\" && mount -t sysfs sysfs \"$1/sys\" && "
                       "exec chroot \"$1\" /tracer --format json -- /fixture -truth /truth.jsonl "
                       "-rounds 2";
  auto r = e2e::run({"unshare", "--mount", "sh", "-c", script, "sh", root});
  INFO(r.err);
  if (r.status != 0 && r.err.find("unshare failed") != std::string::npos) {
    std::cout << "SKIPPED: cannot create a mount namespace here: " << r.err << std::endl;
    std::exit(77);
  }
  REQUIRE(r.status == 0);
  check_ints(r.out, root + "/truth.jsonl");
  // Nothing else came to be needed: the root still holds just the two files (and the truth).
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(root))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"fixture", "proc", "sys", "tracer", "truth.jsonl"});
  CHECK(fs::is_empty(root + "/proc")); // unmounted again
}

TEST_CASE("in an empty root without /proc the tracer says why it cannot start") {
  e2e::require_bpf();
  if (!have_program("chroot")) {
    std::cout << "SKIPPED: needs chroot (coreutils)" << std::endl;
    std::exit(77);
  }
  std::string root = e2e::temp_dir("ship-noproc") + "/root";
  fs::create_directories(root);
  lone_tracer(root);
  fs::copy_file(e2e::fixture("fixture"), root + "/fixture");
  auto r = e2e::run({"chroot", root, "/tracer", "--", "/fixture"});
  CHECK(r.status == 2);
  CHECK(r.err.find("/proc/self/exe") != std::string::npos);
}

// ---- weave run ---------------------------------------------------------------------------------

TEST_CASE("weave run builds into the cache once, then runs the cached tracer without clang") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("ship-run");
  setenv("XDG_CACHE_HOME", (dir + "/cache").c_str(), 1);
  const std::string spec = e2e::source("tests/e2e/fixture.yaml");
  auto first = e2e::run({e2e::weave(), "run", "--format", "json", spec, e2e::fixture("fixture"),
                         "--", "-truth", dir + "/truth1.jsonl", "-rounds", "1"});
  INFO(first.err);
  REQUIRE(first.status == 0);
  CHECK(first.err.find("weave: built tracer into " + dir + "/cache/weave/") != std::string::npos);
  check_ints(first.out, dir + "/truth1.jsonl");

  std::vector<fs::path> entries(fs::directory_iterator(dir + "/cache/weave"),
                                fs::directory_iterator());
  REQUIRE(entries.size() == 1);
  std::string entry = entries[0].string();
  CHECK(entries[0].filename().string().size() == 64); // the hex SHA-256 key
  struct stat before;
  REQUIRE(stat((entry + "/tracer").c_str(), &before) == 0);

  // A clang that cannot run proves the second run does not compile; the same inode proves it does
  // not rebuild the directory either.
  auto second =
      e2e::run({e2e::weave(), "run", "--format", "json", "--clang", "/nonexistent/clang", spec,
                e2e::fixture("fixture"), "--", "-truth", dir + "/truth2.jsonl", "-rounds", "1"});
  INFO(second.err);
  REQUIRE(second.status == 0);
  CHECK(second.err.find("weave: using cached tracer " + entry + "\n") != std::string::npos);
  CHECK(second.err.find("built tracer") == std::string::npos);
  check_ints(second.out, dir + "/truth2.jsonl");
  struct stat after;
  REQUIRE(stat((entry + "/tracer").c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);

  // Another binary is another entry.
  auto other = e2e::run(
      {e2e::weave(), "run", e2e::source("examples/hello/spec.yaml"), e2e::fixture("hello"), "--"});
  INFO(other.err);
  CHECK(other.err.find("weave: built tracer into") != std::string::npos);
  CHECK(std::distance(fs::directory_iterator(dir + "/cache/weave"), fs::directory_iterator()) == 2);
  unsetenv("XDG_CACHE_HOME");
}

TEST_CASE("weave run: errors before tracing are weave's, with its exit codes") {
  std::string dir = e2e::temp_dir("ship-run-errors");
  setenv("XDG_CACHE_HOME", (dir + "/cache").c_str(), 1);
  auto usage = e2e::run({e2e::weave(), "run", e2e::source("tests/e2e/fixture.yaml")});
  CHECK(usage.status == 2);
  auto both = e2e::run({e2e::weave(), "run", "--pid", "1", e2e::source("tests/e2e/fixture.yaml"),
                        e2e::fixture("fixture"), "--", "-rounds", "1"});
  CHECK(both.status == 2);
  CHECK(both.err.find("exclude each other") != std::string::npos);
  std::ofstream(dir + "/bad.yaml") << "probes:\n  - function: main.Int\n";
  auto bad = e2e::run({e2e::weave(), "run", dir + "/bad.yaml", e2e::fixture("fixture"), "--"});
  CHECK(bad.status == 1);
  CHECK(bad.err.find("error[unknown-function]") != std::string::npos);
  // Nothing half-built is left in the cache to be "used" next time.
  CHECK((!fs::exists(dir + "/cache/weave") || fs::is_empty(dir + "/cache/weave")));
  unsetenv("XDG_CACHE_HOME");
}
