// tracer_e2e: the tracer runtime for real, without the generator. A hand-written probe
// (probe_ints.bpf.c, built by CMake) and a manifest written here are appended to weave-tracer with
// append_payload, and the result traces main.Ints in the Go fixture through real uprobes.
//
// Needs root, BPF and the uprobe PMU. Where they are missing it prints why and exits 77, which
// ctest reports as skipped (SKIP_RETURN_CODE): it never passes without having run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gelf.h>
#include <grp.h>
#include <libelf.h>
#include <linux/bpf.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "gobinary/elf_notes.h"
#include "payload.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kFixtureDir = WEAVE_FIXTURE_DIR;
const std::string kFixture = kFixtureDir + "/fixture";
const std::string kRuntime = std::string(WEAVE_BINARY_DIR) + "/weave-tracer";
const std::string kTestdata = WEAVE_RUNTIME_TESTDATA;
fs::path g_work; // this run's scratch directory

std::string skip_reason() {
  if (geteuid() != 0)
    return "needs root to load BPF programs and attach uprobes";
  if (!fs::exists("/sys/bus/event_source/devices/uprobe/type"))
    return "the kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe)";
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  int fd = static_cast<int>(syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
  if (fd < 0)
    return std::string("BPF is unavailable: bpf(BPF_MAP_CREATE): ") + std::strerror(errno);
  close(fd);
  return {};
}

std::string slurp(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// main.Ints's file offset in the fixture: its symbol's address mapped through the PT_LOAD
// segment that holds it (vaddr - p_vaddr + p_offset).
uint64_t ints_file_offset() {
  elf_version(EV_CURRENT);
  int fd = open(kFixture.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  Elf *elf = elf_begin(fd, ELF_C_READ, nullptr);
  REQUIRE(elf);
  uint64_t vaddr = 0;
  for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB)
      continue;
    Elf_Data *data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; ++i) {
      GElf_Sym sym;
      gelf_getsym(data, static_cast<int>(i), &sym);
      const char *name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (name && std::strcmp(name, "main.Ints") == 0)
        vaddr = sym.st_value;
    }
  }
  uint64_t offset = 0;
  size_t phnum = 0;
  elf_getphdrnum(elf, &phnum);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) && phdr.p_type == PT_LOAD &&
        vaddr >= phdr.p_vaddr && vaddr < phdr.p_vaddr + phdr.p_filesz)
      offset = vaddr - phdr.p_vaddr + phdr.p_offset;
  }
  elf_end(elf);
  close(fd);
  REQUIRE_MESSAGE(vaddr != 0, "main.Ints is not in the fixture's symbol table");
  REQUIRE(offset != 0);
  return offset;
}

json ints_manifest(bool wakeup = true) {
  std::string error;
  std::string build_id = weave::read_build_id_file(kFixture, error);
  REQUIRE_MESSAGE(!build_id.empty(), error);
  char offset[32];
  std::snprintf(offset, sizeof offset, "0x%llx", (unsigned long long)ints_file_offset());
  json m = {
      {"format", 1},
      {"weave_version", "0.1.0"},
      {"target",
       {{"path", kFixture},
        {"build_id", build_id},
        {"go_version", "go1.19.8"},
        {"arch", "amd64"},
        {"pointer_size", 8}}},
      {"options", {{"string_max", 64}}},
      {"event_header_size", 64},
      {"probes",
       {{{"id", 0},
         {"name", "main.Ints"},
         {"function", "main.Ints"},
         {"abi", "ABIInternal"},
         {"program", "probe_0_entry"},
         {"event_size", 72},
         {"attach", {{{"kind", "entry"}, {"file_offset", offset}, {"cookie", 0}}}},
         {"captures",
          {{{"expr", "a"},
            {"type", "int8"},
            {"fault_bit", 0},
            {"fields",
             {{{"name", ""},
               {"kind", "int"},
               {"go_type", "int8"},
               {"size", 1},
               {"offset", 64}}}}}}}}}},
  };
  if (!wakeup)
    m["options"]["ringbuf_wakeup"] = "none";
  return m;
}

// A tracer in the scratch directory, made the way `weave build` makes one.
std::string make_tracer(const std::string &name, const json &manifest,
                        const std::string &object = "probe_ints.bpf.o") {
  std::string path = (g_work / name).string(), error;
  REQUIRE_MESSAGE(weave::append_payload(kRuntime, slurp(kTestdata + "/" + object), manifest.dump(2),
                                        path, error),
                  error);
  return path;
}

struct Proc {
  pid_t pid = -1;
  fs::path out, err;
};

int g_spawned = 0;

// Starts argv with stdout and stderr to files, $PATH led by the fixture directory, and, when
// `uid` is set, as that user with no groups.
Proc spawn(const std::vector<std::string> &argv, uid_t uid = 0) {
  Proc p;
  int n = ++g_spawned;
  p.out = g_work / ("out." + std::to_string(n));
  p.err = g_work / ("err." + std::to_string(n));
  std::string path =
      "PATH=" + kFixtureDir + ":" + (getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  p.pid = fork();
  REQUIRE(p.pid >= 0);
  if (p.pid == 0) {
    int out = open(p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    putenv(path.data());
    if (uid && (setgroups(0, nullptr) != 0 || setgid(uid) != 0 || setuid(uid) != 0))
      _exit(99);
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(98);
  }
  return p;
}

// Waits for p like a shell: the exit code, or 128 + the signal. Kills it (by its pid) after
// `timeout`, failing the test.
int wait_for(const Proc &p, std::chrono::seconds timeout = std::chrono::seconds(60)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(p.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, &status, 0);
      FAIL("timed out: pid " << p.pid << "; stderr: " << slurp(p.err));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Result {
  int status;
  std::string out, err;
  pid_t pid;
};

Result run(const std::vector<std::string> &argv, uid_t uid = 0) {
  Proc p = spawn(argv, uid);
  int status = wait_for(p);
  return {status, slurp(p.out), slurp(p.err), p.pid};
}

// Waits until p's stderr contains `text`.
void await_stderr(const Proc &p, const std::string &text) {
  for (int i = 0; i < 2000; ++i) {
    if (slurp(p.err).find(text) != std::string::npos)
      return;
    int status;
    if (waitpid(p.pid, &status, WNOHANG) == p.pid)
      FAIL("exited before printing '" << text << "': " << slurp(p.err));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("never printed '" << text << "': " << slurp(p.err));
}

std::vector<json> json_lines(const std::string &out) {
  std::vector<json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    lines.push_back(json::parse(line));
  return lines;
}

std::vector<std::string> text_lines(const std::string &out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE("-- CMD: JSON events of the traced command, then its exit status") {
  std::string tracer = make_tracer("tracer", ints_manifest());
  // "fixture" has no slash: the tracer finds it through $PATH, as execvp would.
  Result r =
      run({tracer, "--format", "json", "--", "fixture", "-rounds", "2", "-truth", "/dev/null"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  std::vector<json> events = json_lines(r.out);
  REQUIRE(events.size() == 2);
  CHECK(events[0]["args"]["a"] == -128);
  CHECK(events[1]["args"]["a"] == -127);
  for (const json &e : events) {
    CHECK(e["probe"] == "main.Ints");
    CHECK(e["function"] == "main.Ints");
    CHECK(e["kind"] == "entry");
    CHECK(e["pid"] == events[0]["pid"]);
    CHECK(e["ts_ns"].get<uint64_t>() > 0);
  }
  CHECK(events[0]["ts_ns"].get<uint64_t>() < events[1]["ts_ns"].get<uint64_t>());
  CHECK(contains(r.err, "weave: main.Ints (entry): 2 events, 0 lost"));
  CHECK_FALSE(contains(r.err, "lost (ring buffer full)"));
}

TEST_CASE("-- CMD: text lines") {
  std::string tracer = make_tracer("tracer", ints_manifest());
  Result r = run({tracer, "--", kFixture, "-rounds", "3", "-truth", "/dev/null"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  std::vector<std::string> lines = text_lines(r.out);
  REQUIRE(lines.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(lines[i]);
    // "<seconds, 6 decimals> pid=N tid=N goid=0 main.Ints(a=-128)"; goid is 0 because the
    // hand-written probe does not read it.
    size_t dot = lines[i].find('.');
    REQUIRE(dot != std::string::npos);
    CHECK(lines[i].find(' ') == dot + 7);
    CHECK(std::stod(lines[i].substr(0, dot + 7)) < 30.0);
    CHECK(contains(lines[i], " pid="));
    CHECK(contains(lines[i], " goid=0 main.Ints(a=" + std::to_string(-128 + i) + ")"));
  }
}

TEST_CASE("BPF_RB_NO_WAKEUP submits are drained on a timer, every event arrives") {
  std::string tracer =
      make_tracer("tracer-nowakeup", ints_manifest(false), "probe_ints_nowakeup.bpf.o");
  Result r =
      run({tracer, "--format", "json", "--", kFixture, "-rounds", "200", "-truth", "/dev/null"});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  std::vector<json> events = json_lines(r.out);
  REQUIRE(events.size() == 200);
  for (int i = 0; i < 200; ++i)
    CHECK(events[i]["args"]["a"] == int8_t(-128 + i));
  CHECK(contains(r.err, "main.Ints (entry): 200 events, 0 lost"));
}

TEST_CASE("events the ring buffer had no room for are counted and reported") {
  // 1 MiB events: the 4 MiB ring buffer holds three. The tracer is stopped while the fixture
  // makes 20 calls, so 3 arrive and 17 are lost.
  json m = ints_manifest();
  m["probes"][0]["event_size"] = 1 << 20;
  std::string tracer = make_tracer("tracer-big", m, "probe_ints_big.bpf.o");
  // 4 MiB of ring: three of the padded 1 MiB records fit (the default is larger).
  Proc p = spawn({tracer, "--format", "json", "--ring-size", "4M", "--binary", kFixture});
  await_stderr(p, "Ctrl-C to stop");
  kill(p.pid, SIGSTOP);
  Result fixture = run({kFixture, "-rounds", "20", "-truth", "/dev/null"});
  kill(p.pid, SIGCONT);
  REQUIRE(fixture.status == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(p.pid, SIGINT);
  CHECK(wait_for(p) == 0);
  std::string err = slurp(p.err);
  INFO("stderr: " << err);
  std::vector<json> events = json_lines(slurp(p.out));
  // Another test's fixture run may have taken some of the room; ours still adds up to 20.
  size_t ours = 0;
  for (const json &e : events)
    ours += e["pid"] == fixture.pid;
  CHECK(ours <= 3);
  CHECK(contains(err, "weave: main.Ints (entry): " + std::to_string(events.size()) + " events, "));
  if (events.size() == 3) {
    CHECK(contains(err, "weave: main.Ints (entry): 3 events, 17 lost"));
    CHECK(contains(err, "weave: 17 events lost (ring buffer full)"));
  }
}

TEST_CASE("-- CMD: the command's exit status, a signal, and a missing command") {
  std::string tracer = make_tracer("tracer", ints_manifest());
  Result r = run({tracer, "--binary", kFixture, "--", "/bin/sh", "-c", "exit 7"});
  CHECK(r.status == 7);
  CHECK(r.out.empty());
  CHECK(contains(r.err, "main.Ints (entry): 0 events, 0 lost"));

  r = run({tracer, "--binary", kFixture, "--", "/bin/sh", "-c", "kill -KILL $$"});
  CHECK(r.status == 128 + SIGKILL);

  r = run({tracer, "--binary", kFixture, "--", "no-such-command-weave"});
  CHECK(r.status == 127);
  CHECK(contains(r.err, "cannot run 'no-such-command-weave': not found in $PATH"));
  r = run({tracer, "--binary", kFixture, "--", "/no/such/program"});
  CHECK(r.status == 127);
  CHECK(contains(r.err, "cannot run '/no/such/program': No such file or directory"));
}

TEST_CASE("-- CMD: SIGTERM to the tracer is passed on to the command") {
  std::string tracer = make_tracer("tracer", ints_manifest());
  auto start = std::chrono::steady_clock::now();
  Proc p = spawn({tracer, "-v", "--binary", kFixture, "--", "/bin/sh", "-c", "exec sleep 30"});
  await_stderr(p, "starting /bin/sh");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(p.pid, SIGTERM);
  int status = wait_for(p);
  CHECK(status == 128 + SIGTERM); // the command's status: it died of the forwarded SIGTERM
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  CHECK(contains(slurp(p.err), "main.Ints (entry): 0 events, 0 lost"));
}

TEST_CASE("no -- and no --pid: every process running the binary, until SIGINT") {
  // No --binary either: the manifest's target.path names the fixture.
  std::string tracer = make_tracer("tracer", ints_manifest());
  Proc p = spawn({tracer, "--format", "json"});
  await_stderr(p, "Ctrl-C to stop");
  Result fixture = run({kFixture, "-rounds", "3", "-truth", "/dev/null"});
  REQUIRE(fixture.status == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(p.pid, SIGINT);
  CHECK(wait_for(p) == 0);
  std::string err = slurp(p.err);
  INFO("stderr: " << err);
  // Other tests may run the fixture at the same time: count only this run's events.
  std::vector<int> seen;
  for (const json &e : json_lines(slurp(p.out)))
    if (e["pid"] == fixture.pid)
      seen.push_back(e["args"]["a"].get<int>());
  CHECK(seen == std::vector<int>{-128, -127, -126});
  CHECK(contains(err, "events, 0 lost"));
}

TEST_CASE("--pid: traces that process through /proc/N/exe and exits when it is gone") {
  std::string tracer = make_tracer("tracer", ints_manifest());
  // -wait-signal: the fixture prints "ready" and makes no call until SIGUSR1.
  Proc fixture = spawn({kFixture, "-wait-signal", "-rounds", "2", "-truth", "/dev/null"});
  await_stderr(fixture, "ready");
  Proc p = spawn({tracer, "--format", "json", "--pid", std::to_string(fixture.pid)});
  await_stderr(p, "Ctrl-C to stop");
  CHECK(contains(slurp(p.err), "/proc/" + std::to_string(fixture.pid) + "/exe"));
  kill(fixture.pid, SIGUSR1);
  // The fixture stays an unreaped zombie (this test is its parent) while the tracer must notice
  // that it is gone.
  CHECK(wait_for(p) == 0);
  CHECK(wait_for(fixture) == 0);
  std::vector<json> events = json_lines(slurp(p.out));
  REQUIRE(events.size() == 2);
  CHECK(events[0]["pid"] == fixture.pid);
  CHECK(events[0]["args"]["a"] == -128);
  CHECK(events[1]["args"]["a"] == -127);
}

TEST_CASE("--pid: exits when the process is gone, even while it is an unreaped zombie") {
  std::string tracer = make_tracer("tracer", ints_manifest());
  Proc sleeper = spawn({"/bin/sleep", "1"});
  Result r = run({tracer, "--pid", std::to_string(sleeper.pid), "--binary", kFixture});
  INFO("stderr: " << r.err);
  CHECK(r.status == 0);
  CHECK(contains(r.err, "(pid " + std::to_string(sleeper.pid) + ")"));
  CHECK(contains(r.err, "main.Ints (entry): 0 events, 0 lost"));
  CHECK(wait_for(sleeper) == 0);

  r = run({tracer, "--pid", "999999999", "--binary", kFixture});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "--pid 999999999: no such process"));
}

TEST_CASE("setup errors say what is wrong and exit 2") {
  std::string tracer = make_tracer("tracer", ints_manifest());

  Result r = run({kRuntime});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "this is the weave tracer runtime without probes; `weave build` makes "
                        "a tracer"));

  r = run({tracer, "--binary", kFixtureDir + "/hello"});
  CHECK(r.status == 2);
  CHECK(contains(r.err, kFixtureDir + "/hello has build id "));
  CHECK(contains(r.err, ", but this tracer was generated for build id "));
  CHECK(contains(r.err, "; regenerate it with weave build"));

  json m = ints_manifest();
  m["probes"][0]["event_size"] = 10;
  r = run({make_tracer("tracer-badmanifest", m)});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "weave: manifest: probes[0].event_size: 10 is smaller"));

  m = ints_manifest();
  m["probes"][0]["program"] = "probe_9_entry";
  r = run({make_tracer("tracer-noprogram", m), "--", kFixture});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "probe 'main.Ints': program 'probe_9_entry' is not in the BPF object"));

  m = ints_manifest();
  m["probes"][0]["attach"][0]["file_offset"] = "0x7ffffff0"; // past the end of the file
  r = run({make_tracer("tracer-badoffset", m), "--", kFixture});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "probe 'main.Ints': attach at 0x7ffffff0 in " + kFixture + " failed: "));

  r = run({tracer, "--format", "yaml"});
  CHECK(r.status == 2);
  r = run({tracer, "--pid", "1", "--", kFixture});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "--pid and -- CMD exclude each other"));
  r = run({tracer, kFixture});
  CHECK(r.status == 2);
  CHECK(contains(r.err, "put it after --"));
}

TEST_CASE("without privileges the tracer says what it needs") {
  std::string tracer = make_tracer("tracer", ints_manifest());
  Result r = run({tracer, "--", kFixture, "-rounds", "1", "-truth", "/dev/null"}, 65534);
  CHECK(r.status == 2);
  CHECK(contains(r.err, "cannot load BPF programs: Operation not permitted — run as root (or "
                        "with CAP_BPF and CAP_PERFMON)"));
}

TEST_CASE("--version names the target") {
  std::string tracer = make_tracer("tracer", ints_manifest());
  std::string error;
  std::string build_id = weave::read_build_id_file(kFixture, error);
  Result r = run({tracer, "--version"});
  CHECK(r.status == 0);
  CHECK(contains(r.out, "weave-tracer 0.1.0"));
  CHECK(contains(r.out, "build id: " + build_id));
  CHECK(contains(r.out, "go: go1.19.8 amd64"));
}

int main(int argc, char **argv) {
  std::string reason = skip_reason();
  if (!reason.empty()) {
    std::printf("SKIPPED: %s\n", reason.c_str());
    return 77;
  }
  std::string pattern = (fs::temp_directory_path() / "weave-tracer-e2e-XXXXXX").string();
  if (!mkdtemp(pattern.data())) {
    std::perror("mkdtemp");
    return 1;
  }
  g_work = pattern;
  // World-readable, so the unprivileged run (as nobody) can execute the tracer inside it.
  fs::permissions(g_work, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  doctest::Context context(argc, argv);
  int rc = context.run();
  fs::remove_all(g_work);
  return rc;
}
