// End to end, for real: the traced binary changes under a running tool (README "Safety").
//  - A host-wide tracer whose binary is overwritten in place (`cp` over it, as a redeploy does)
//    detaches at once and says so, so the new build runs untouched instead of hitting the old
//    build's breakpoints; when the original build is renamed back into place it attaches again and
//    traces the processes started from it.
//  - weave reading a binary that is truncated meanwhile fails with an error, never a signal.
#include "harness.h"

#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void copy_executable(const std::string &from, const std::string &to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  chmod(to.c_str(), 0755);
}

// The events the tracer printed so far for process `pid`, waiting until `want` of `function`'s
// entries arrived (events reach the tracer's output asynchronously) or a minute passed.
std::vector<json> events_of(const e2e::Background &tracer, int pid, const std::string &function, size_t want) {
  std::vector<json> mine;
  for (int waited = 0; waited < 60000; waited += 20) {
    mine.clear();
    size_t entries = 0;
    for (const json &e : e2e::json_lines(tracer.read_out()))
      if (e["pid"] == pid) {
        mine.push_back(e);
        entries += e["function"] == function && e["kind"] == "entry";
      }
    if (entries >= want)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return mine;
}

size_t truth_calls(const std::string &path, const std::string &function) {
  size_t n = 0;
  for (const json &t : e2e::json_lines(e2e::read_file(path)))
    n += t["function"] == function;
  return n;
}

} // namespace

TEST_CASE("a binary overwritten in place under a host-wide tracer: detached at once, the new build runs, "
          "and the original renamed back is traced again") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("redeploy");
  std::string bin = dir + "/bin";
  copy_executable(e2e::fixture("fixture"), bin);
  {
    std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Ints\n    capture: [a, b]\n";
  }
  auto built = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", bin, "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  // Host-wide: every process that runs `bin`.
  e2e::Background tracer = e2e::spawn({dir + "/out/tracer", "--format", "json"}, dir);
  REQUIRE_MESSAGE(tracer.wait_for_err("weave: tracing"), tracer.read_err());

  // Traced before anything changes.
  e2e::Background first = e2e::spawn({bin, "-truth", dir + "/truth1.jsonl", "-rounds", "1"}, dir);
  int first_pid = first.pid;
  REQUIRE(first.wait() == 0);
  size_t calls = truth_calls(dir + "/truth1.jsonl", "main.Ints");
  REQUIRE(calls > 0);
  CHECK(events_of(tracer, first_pid, "main.Ints", calls).size() == calls);

  // A redeploy with cp: the same inode, another program's bytes. Before the watch, the new build
  // ran into the old build's breakpoints and died of SIGSEGV.
  auto cp = e2e::run({"cp", e2e::fixture("hello"), bin});
  REQUIRE(cp.status == 0);
  REQUIRE_MESSAGE(tracer.wait_for_err(bin + " was written in place: detached its", 60000), tracer.read_err());
  e2e::Background other = e2e::spawn({bin}, dir);
  int other_pid = other.pid;
  CHECK(other.wait() == 0); // runs normally: not 128 + SIGSEGV, nor SIGTRAP
  CHECK(other.read_out().find("hello: Handle(req.Path=\"/search?q=weave\"") != std::string::npos);
  CHECK(tracer.read_err().find("now holds another build") != std::string::npos);

  // The original build back, by rename (a new inode): attached again, and the processes started
  // from it traced, every call.
  copy_executable(e2e::fixture("fixture"), dir + "/bin.new");
  REQUIRE(std::rename((dir + "/bin.new").c_str(), bin.c_str()) == 0);
  REQUIRE_MESSAGE(tracer.wait_for_err(" again: re-attached", 60000), tracer.read_err());
  e2e::Background again = e2e::spawn({bin, "-truth", dir + "/truth2.jsonl", "-rounds", "1"}, dir);
  int again_pid = again.pid;
  REQUIRE(again.wait() == 0);
  calls = truth_calls(dir + "/truth2.jsonl", "main.Ints");
  std::vector<json> events = events_of(tracer, again_pid, "main.Ints", calls);
  CHECK(events.size() == calls);
  std::multiset<std::pair<int64_t, int64_t>> traced, truth;
  for (const json &e : events)
    traced.insert({e["args"]["a"].get<int64_t>(), e["args"]["b"].get<int64_t>()});
  for (const json &t : e2e::json_lines(e2e::read_file(dir + "/truth2.jsonl")))
    if (t["function"] == "main.Ints")
      truth.insert({t["args"]["a"].get<int64_t>(), t["args"]["b"].get<int64_t>()});
  CHECK(traced == truth);

  kill(tracer.pid, SIGINT);
  CHECK(tracer.wait() == 0);
  // Nothing was ever reported for the other build's process.
  for (const json &e : e2e::json_lines(tracer.read_out()))
    CHECK(e["pid"] != other_pid);
  MESSAGE(tracer.read_err());
}

TEST_CASE("a binary truncated while weave reads it: an error, never a signal") {
  std::string dir = e2e::temp_dir("truncated");
  std::string bin = dir + "/bin";
  std::string original = e2e::read_file(e2e::fixture("fixture"));
  {
    std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Ints\n    capture: [a, b]\n";
  }
  copy_executable(e2e::fixture("fixture"), bin);
  auto built = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", bin, "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::map<int, int> statuses;
  // 40 runs, each truncating the file a little later into the read (0 to ~80 ms after weave
  // started, the first few before it opened the file), to a size that cuts DWARF or text.
  for (int run = 0; run < 40; ++run) {
    {
      std::ofstream out(bin, std::ios::binary | std::ios::trunc);
      out << original;
    }
    bool check = run % 2 == 1;
    std::vector<std::string> argv =
        check ? std::vector<std::string>{e2e::weave(), "check", dir + "/spec.yaml", bin, dir + "/out"}
              : std::vector<std::string>{e2e::weave(), "funcs", bin, "main.*"};
    e2e::Background reader = e2e::spawn(argv, dir);
    std::this_thread::sleep_for(std::chrono::microseconds(2000 * run));
    off_t size = static_cast<off_t>(original.size()) * (1 + run % 7) / 8;
    REQUIRE(truncate(bin.c_str(), size) == 0);
    int status = reader.wait(120000);
    CAPTURE(run);
    CAPTURE(reader.read_err());
    statuses[status]++;
    // The documented exit codes: funcs 0 or 1, check 0 (up to date), 1 (drift) or 3 (not compared).
    if (check)
      CHECK((status == 0 || status == 1 || status == 3));
    else
      CHECK((status == 0 || status == 1));
    CHECK(reader.read_err().find("internal error") == std::string::npos);
  }
  std::string seen;
  for (auto [status, n] : statuses)
    seen += " " + std::to_string(status) + "x" + std::to_string(n);
  MESSAGE("exit statuses (status x runs):" << seen);
}
