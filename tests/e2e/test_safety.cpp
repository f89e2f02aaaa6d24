// End to end for what README "Safety" promises a root tool owes the files around it, each case an
// attack that worked before: links planted where weave or the tracer writes (--perfetto, --folded,
// -o, the run cache's specs), a cache entry it did not check (group-writable, a link, another
// owner), links, FIFOs and devices in a checked-in tree, a spec or binary that is a FIFO or a
// device, an output directory that is the current one, a probes.json of gigabytes, and the
// tracer's --metrics and --otlp arguments. Every path is in a directory this test made.
#include "harness.h"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

void write(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

const char *kSpec = "probes:\n  - function: main.Ints\n    capture: [a]\n";

// argv run in `dir` with XDG_CACHE_HOME=cache and umask 000 (the cache must not take its modes).
std::vector<std::string> in_dir(const std::string &dir, const std::string &cache, std::vector<std::string> argv) {
  // sh -c SCRIPT $0 $1 ARGV...: $0 the directory, $1 the cache, shifted off before exec.
  std::vector<std::string> out = {"sh", "-c", "cd \"$0\" && umask 000 && c=\"$1\" && shift && exec env XDG_CACHE_HOME=\"$c\" \"$@\"",
                                  dir, cache};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string entry_of(const std::string &cache) {
  for (const auto &e : fs::directory_iterator(cache + "/weave"))
    if (e.path().filename().string().size() == 64)
      return e.path().string();
  FAIL("no cache entry in " << cache);
  return "";
}

} // namespace

TEST_CASE("--perfetto and --folded replace a link planted at the file or its old temporary, never write through it") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("safety-views");
  write(dir + "/spec.yaml", "probes:\n  - function: main.Leaf\n    stack: 4\n    return: true\n");
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  for (const char *victim : {"victim1", "victim2", "victim3", "victim4"})
    write(dir + "/" + victim, "precious\n");
  // The names the tracer used to open with fopen("w"), and the files themselves.
  fs::create_symlink(dir + "/victim1", dir + "/trace.json.tmp");
  fs::create_symlink(dir + "/victim2", dir + "/stacks.folded.tmp");
  fs::create_symlink(dir + "/victim3", dir + "/trace.json");
  fs::create_symlink(dir + "/victim4", dir + "/stacks.folded");
  auto traced = e2e::run({dir + "/out/tracer", "--perfetto", dir + "/trace.json", "--folded", dir + "/stacks.folded",
                          "--", e2e::fixture("fixture"), "-truth", dir + "/truth.jsonl", "-rounds", "1"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  for (const char *victim : {"victim1", "victim2", "victim3", "victim4"})
    CHECK(e2e::read_file(dir + "/" + victim) == "precious\n");
  CHECK_FALSE(fs::is_symlink(dir + "/trace.json"));
  CHECK_FALSE(fs::is_symlink(dir + "/stacks.folded"));
  auto trace = nlohmann::json::parse(e2e::read_file(dir + "/trace.json"));
  CHECK(trace["traceEvents"].size() > 0);
  CHECK(e2e::read_file(dir + "/stacks.folded").find("main.Leaf ") != std::string::npos);
  // No temporary left behind.
  for (const auto &e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".XXXXXX") == std::string::npos);
}

TEST_CASE("tracer -o refuses a symbolic link, --metrics and --otlp refuse empty values and CR/LF, and :0 prints its port") {
  std::string dir = e2e::temp_dir("safety-tracer-args");
  write(dir + "/spec.yaml", kSpec);
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::string tracer = dir + "/out/tracer";
  auto empty_metrics = e2e::run({tracer, "--metrics", "", "--", e2e::fixture("fixture"), "-rounds", "1"});
  CHECK(empty_metrics.status == 2);
  CHECK(empty_metrics.err.find("--metrics was given an empty value") != std::string::npos);
  auto crlf = e2e::run({tracer, "--otlp", "http://127.0.0.1:4318/v1/traces\r\nX-Injected: 1", "--",
                        e2e::fixture("fixture"), "-rounds", "1"});
  CHECK(crlf.status == 2);
  CHECK(crlf.err.find("a URL cannot contain spaces or control characters (CR)") != std::string::npos);
  auto help = e2e::run({tracer, "--help"});
  CHECK(help.out.find("EVERY interface") != std::string::npos);

  e2e::require_bpf();
  write(dir + "/victim", "precious\n");
  fs::create_symlink(dir + "/victim", dir + "/events.txt");
  auto linked = e2e::run({tracer, "-o", dir + "/events.txt", "--", e2e::fixture("fixture"), "-rounds", "1"});
  CHECK(linked.status == 2);
  CHECK(linked.err.find("is a symbolic link") != std::string::npos);
  CHECK(e2e::read_file(dir + "/victim") == "precious\n");

  auto zero = e2e::run({tracer, "--metrics", "127.0.0.1:0", "--", e2e::fixture("fixture"), "-rounds", "1"});
  INFO(zero.err);
  CHECK(zero.status == 0);
  std::smatch m;
  REQUIRE(std::regex_search(zero.err, m, std::regex("metrics at http://127\\.0\\.0\\.1:([0-9]+)/metrics")));
  CHECK(std::stoi(m[1]) > 0);
}

TEST_CASE("weave run makes its cache 0700 and runs no tracer it did not check") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("safety-cache");
  std::string cache = dir + "/xdg";
  write(dir + "/spec.yaml", kSpec);
  fs::copy_file(e2e::fixture("fixture"), dir + "/svc");
  auto run = [&](const std::string &truth) {
    return e2e::run(in_dir(dir, cache,
                           {e2e::weave(), "run", "spec.yaml", "./svc", "--", "-truth", truth, "-rounds", "1"}));
  };
  auto first = run(dir + "/truth1.jsonl");
  INFO(first.err);
  REQUIRE(first.status == 0);
  CHECK((fs::status(cache + "/weave").permissions() & fs::perms::all) == fs::perms::owner_all);
  std::string entry = entry_of(cache);
  std::string tracer = entry + "/tracer";
  auto refused = [&](const std::string &truth, const std::string &why) {
    auto r = run(truth);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find("error[cache-unsafe]") != std::string::npos);
    CHECK(r.err.find(why) != std::string::npos);
    CHECK_FALSE(fs::exists(truth)); // the program never ran: no tracer was executed
  };

  // Writable by others: anyone could have replaced its bytes.
  chmod(tracer.c_str(), 0777);
  refused(dir + "/truth2.jsonl", "writable by others");
  chmod(tracer.c_str(), 0755);

  // A link in place of the tracer, to an executable the link's maker chose.
  fs::rename(tracer, entry + "/real");
  fs::create_symlink(entry + "/real", tracer);
  refused(dir + "/truth3.jsonl", "is a symbolic link");
  fs::remove(tracer);
  fs::rename(entry + "/real", tracer);

  // Another user's: planted by nobody in a cache an older weave made world-writable.
  REQUIRE(chown(tracer.c_str(), 65534, 65534) == 0);
  refused(dir + "/truth4.jsonl", "owned by uid 65534");
  REQUIRE(chown(tracer.c_str(), 0, 0) == 0);
  REQUIRE(chown(entry.c_str(), 65534, 65534) == 0);
  refused(dir + "/truth5.jsonl", "owned by uid 65534");
  REQUIRE(chown(entry.c_str(), 0, 0) == 0);

  // A cache root made 0777 by an older weave is made private again, and the entry used.
  chmod((cache + "/weave").c_str(), 0777);
  auto again = run(dir + "/truth6.jsonl");
  INFO(again.err);
  CHECK(again.status == 0);
  CHECK(again.err.find("using cached tracer") != std::string::npos);
  CHECK((fs::status(cache + "/weave").permissions() & fs::perms::all) == fs::perms::owner_all);
}

TEST_CASE("weave trace writes no quick spec through a link planted at CACHE/specs") {
  std::string dir = e2e::temp_dir("safety-specs");
  std::string cache = dir + "/xdg";
  fs::create_directories(cache + "/weave");
  fs::create_directories(dir + "/elsewhere");
  fs::create_directory_symlink(dir + "/elsewhere", cache + "/weave/specs");
  auto r = e2e::run(in_dir(dir, cache, {e2e::weave(), "trace", e2e::fixture("fixture"), "main.Ints"}));
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("error[cache-unsafe]") != std::string::npos);
  CHECK(r.err.find("is not a directory") != std::string::npos);
  CHECK(fs::is_empty(dir + "/elsewhere"));
}

TEST_CASE("weave check reports links, FIFOs and devices in the checked-in tree as drift, never reading them") {
  std::string dir = e2e::temp_dir("safety-check");
  write(dir + "/spec.yaml", kSpec);
  fs::copy_file(e2e::fixture("fixture"), dir + "/svc");
  auto weave_here = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"sh", "-c", "cd \"$0\" && exec \"$@\"", dir, e2e::weave()};
    argv.insert(argv.end(), args.begin(), args.end());
    return e2e::run(argv);
  };
  auto built = weave_here({"build", "spec.yaml", "./svc", "-o", "out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  write(dir + "/secret", "CI_TOKEN=hunter2-do-not-print\n");
  fs::remove(dir + "/out/probes.json");
  fs::create_symlink(dir + "/secret", dir + "/out/probes.json");
  fs::remove(dir + "/out/probes.bpf.c");
  REQUIRE(mkfifo((dir + "/out/probes.bpf.c").c_str(), 0644) == 0);
  fs::remove(dir + "/out/probes.h");
  fs::create_symlink("/dev/zero", dir + "/out/probes.h");
  auto r = weave_here({"check", "spec.yaml", "./svc", "out"});
  INFO(r.out);
  INFO(r.err);
  CHECK(r.status == 1); // drift
  CHECK(r.out.find("hunter2") == std::string::npos);
  CHECK(r.err.find("hunter2") == std::string::npos);
  CHECK(r.out.find("the checked-in probes.json is a symbolic link (not followed): not read") != std::string::npos);
  CHECK(r.out.find("the checked-in probes.h is a symbolic link (not followed)") != std::string::npos);
  CHECK(r.out.find("the checked-in probes.bpf.c is a FIFO, not a regular file: not read") != std::string::npos);
}

TEST_CASE("a spec or binary that is a FIFO or a device is refused at once, a spec past 1 MiB too") {
  std::string dir = e2e::temp_dir("safety-inputs");
  std::string cache = dir + "/xdg";
  write(dir + "/spec.yaml", kSpec);
  REQUIRE(mkfifo((dir + "/fifo").c_str(), 0644) == 0);
  write(dir + "/big.yaml", "probes:\n  - function: main.Ints\n" + std::string(2 << 20, '#') + "\n");
  struct Case {
    std::vector<std::string> args;
    std::string error;
  } cases[] = {
      {{"build", dir + "/fifo", e2e::fixture("fixture"), "-o", dir + "/out"}, "the spec file is a FIFO, not a regular file"},
      {{"build", "/dev/zero", e2e::fixture("fixture"), "-o", dir + "/out"}, "the spec file is a character device"},
      {{"build", dir + "/big.yaml", e2e::fixture("fixture"), "-o", dir + "/out"}, "error[spec-too-large]"},
      {{"run", dir + "/spec.yaml", dir + "/fifo"}, "is a FIFO, not a regular file"},
      {{"run", dir + "/fifo", e2e::fixture("fixture")}, "the spec file is a FIFO"},
      {{"trace", dir + "/fifo", "main.Ints"}, "is a FIFO, not a regular file"},
  };
  for (const Case &c : cases) {
    std::vector<std::string> args = {e2e::weave()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CAPTURE(c.args[0]);
    CAPTURE(c.args[1]);
    auto r = e2e::run(in_dir(dir, cache, args), 60000);
    INFO(r.err);
    CHECK(r.status == 1); // not 137: killed after waiting on the FIFO
    CHECK(r.err.find(c.error) != std::string::npos);
  }
}

TEST_CASE("-o '' and -o . are refused with a reason, and the current directory is kept") {
  std::string dir = e2e::temp_dir("safety-output");
  write(dir + "/spec.yaml", kSpec);
  write(dir + "/keep.txt", "mine\n");
  auto here = [&](const std::string &out) {
    return e2e::run({"sh", "-c", "cd \"$0\" && exec \"$@\"", dir, e2e::weave(), "build", "spec.yaml",
                     e2e::fixture("fixture"), "-o", out});
  };
  auto empty = here("");
  INFO(empty.err);
  CHECK(empty.status == 1);
  CHECK(empty.err.find("error[bad-output]: -o was given an empty directory name") != std::string::npos);
  for (const char *out : {".", "./", "..", dir.c_str()}) {
    CAPTURE(out);
    auto r = here(out);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find("error[bad-output]") != std::string::npos);
    CHECK(e2e::read_file(dir + "/keep.txt") == "mine\n");
  }
}

TEST_CASE("an -o directory's probes.json of gigabytes is judged in constant memory") {
  std::string dir = e2e::temp_dir("safety-big-manifest");
  write(dir + "/spec.yaml", kSpec);
  fs::create_directories(dir + "/out");
  // Sparse: 4 GiB of zeros that take no disk. Read whole, as before, it cannot fit under the 3 GB
  // address-space limit below (the read ended in std::bad_alloc, an internal error).
  int fd = open((dir + "/out/probes.json").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, off_t(4) << 30) == 0);
  close(fd);
  auto r = e2e::run({"sh", "-c", "ulimit -v 3000000 && exec \"$@\"", "sh", e2e::weave(), "build", dir + "/spec.yaml",
                     e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("error[output-exists]") != std::string::npos);
  CHECK(r.err.find("probes.json (not a weave manifest)") != std::string::npos);
}

TEST_CASE("min_duration on a function that exists only as inlined copies is that probe's error") {
  std::string dir = e2e::temp_dir("safety-min-duration");
  write(dir + "/spec.yaml", "probes:\n  - function: main.label\n    return: true\n    min_duration: 1ms\n");
  auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("inlined"), "-o", dir + "/out"});
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("error[inlined-min-duration]: main.label exists only as inlined copies") != std::string::npos);
  CHECK(r.err.find("spec.yaml:4:19") != std::string::npos);
  CHECK(r.err.find("wildcard") == std::string::npos);
}
