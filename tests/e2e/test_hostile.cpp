// End to end for hostile and mistaken input (README "Safety"): bytes that are not UTF-8 in a spec,
// a build id or a path; programs for another OS; the two arguments swapped; several spec errors at
// once; and the exit codes of `weave build` (1) and `weave check` (3) on every bad input the suites
// know, never an internal error (70). Also: a build killed during clang leaves nothing behind once
// the next build has run.
#include "harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <linux/bpf.h>
#include <map>
#include <set>
#include <sys/syscall.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>

namespace fs = std::filesystem;

namespace {

void write(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

const char *kSpec = "probes:\n  - function: main.Ints\n    capture: [a]\n";

// The fixture with its Go build-id note's first two bytes replaced by ones that are not UTF-8.
std::string binary_with_raw_build_id(const std::string &dir) {
  std::string bytes = e2e::read_file(e2e::fixture("fixture"));
  // The note: namesz 4, descsz, type 4 (ELF_NOTE_GOBUILDID_TAG), "Go\0\0", then the id.
  const std::string header("\x04\x00\x00\x00", 4);
  const std::string tail("\x04\x00\x00\x00Go\x00\x00", 8);
  size_t at = std::string::npos;
  for (size_t pos = bytes.find(header); pos != std::string::npos && pos < 65536; pos = bytes.find(header, pos + 1))
    if (bytes.compare(pos + 8, tail.size(), tail) == 0) {
      at = pos + 16;
      break;
    }
  REQUIRE(at != std::string::npos);
  bytes[at] = '\xff';
  bytes[at + 1] = '\xfe';
  std::string path = dir + "/rawid";
  write(path, bytes);
  chmod(path.c_str(), 0755);
  return path;
}

// hello built for GOOS=freebsd by the pinned Go (cached in the build's Go cache).
std::string freebsd_binary(const std::string &dir) {
  std::string out = dir + "/hello_freebsd";
  // Go 1.19's `go build` has no -C: the shell changes directory.
  auto r = e2e::run({"sh", "-c", "cd \"$0\" && exec \"$@\"", e2e::source("examples/hello"), "env",
                     "GOCACHE=" WEAVE_GOCACHE, "GOOS=freebsd", "GOARCH=amd64", "CGO_ENABLED=0", "GOTOOLCHAIN=local",
                     "GOFLAGS=-mod=mod", "GOPROXY=off", WEAVE_GO, "build", "-trimpath", "-o", out, "."},
                    240000);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return out;
}

// Whether BPF program `id` is still loaded anywhere on the machine.
bool bpf_program_loaded(uint32_t id) {
  union bpf_attr get {};
  get.prog_id = id;
  int fd = static_cast<int>(syscall(SYS_bpf, BPF_PROG_GET_FD_BY_ID, &get, sizeof get));
  if (fd < 0)
    return errno != ENOENT;
  close(fd);
  return true;
}

// The BPF programs process `pid` holds, by id, with their names (the first 15 bytes): read from its
// descriptors' fdinfo ("prog_id:" and the program's info), so no other process's programs count,
// whatever else runs on the machine.
std::map<uint32_t, std::string> bpf_programs_of(pid_t pid) {
  std::map<uint32_t, std::string> programs;
  std::string fds = "/proc/" + std::to_string(pid) + "/fdinfo";
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(fds, ec)) {
    std::ifstream info(entry.path());
    std::string line;
    bool is_program = false;
    uint32_t id = 0;
    while (std::getline(info, line)) {
      if (line.starts_with("prog_type:"))
        is_program = true;
      if (line.starts_with("prog_id:"))
        id = static_cast<uint32_t>(std::stoul(line.substr(8)));
    }
    if (!is_program || id == 0)
      continue; // a link's fdinfo names its program too, but every program also has an fd of its own
    union bpf_attr get {};
    get.prog_id = id;
    int fd = static_cast<int>(syscall(SYS_bpf, BPF_PROG_GET_FD_BY_ID, &get, sizeof get));
    if (fd < 0)
      continue;
    bpf_prog_info prog{};
    union bpf_attr query {};
    query.info.bpf_fd = static_cast<uint32_t>(fd);
    query.info.info_len = sizeof prog;
    query.info.info = reinterpret_cast<uint64_t>(&prog);
    if (syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &query, sizeof query) == 0)
      programs[id] = prog.name;
    close(fd);
  }
  return programs;
}

} // namespace

TEST_CASE("a tracer killed with SIGKILL leaves no probe behind: its programs and uprobes go with it") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("tracer-killed");
  auto built = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::set<std::string> names; // as the kernel keeps them: 15 bytes
  nlohmann::json manifest = nlohmann::json::parse(e2e::read_file(dir + "/out/probes.json"));
  for (const auto &probe : manifest["probes"])
    names.insert(probe["program"].get<std::string>().substr(0, 15));
  std::vector<double> gone_ms;
  for (int round = 0; round < 3; ++round) {
    e2e::Background tracer = e2e::spawn({dir + "/out/tracer"}, dir);
    REQUIRE_MESSAGE(tracer.wait_for_err("weave: tracing"), tracer.read_err());
    // This tracer's programs, by its descriptors: another tracer of the same probes may run beside.
    std::set<uint32_t> ours;
    for (const auto &[id, name] : bpf_programs_of(tracer.pid))
      if (names.count(name))
        ours.insert(id);
    // An uprobe holds its program: while any of these is loaded, a probe may still fire.
    REQUIRE(ours.size() == names.size());
    const int pid = tracer.pid;
    REQUIRE(kill(pid, SIGKILL) == 0);
    auto killed = std::chrono::steady_clock::now();
    CHECK(tracer.wait() == 128 + SIGKILL);
    bool left = true;
    // A deadline for a failure, not a bound on the time: freeing waits for RCU, slower on a busy machine.
    while (left && std::chrono::steady_clock::now() - killed < std::chrono::seconds(60)) {
      left = std::any_of(ours.begin(), ours.end(), [](uint32_t id) { return bpf_program_loaded(id); });
      if (left)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHECK_FALSE(left);
    gone_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - killed).count());
  }
  // And the program runs untouched.
  CHECK(e2e::run({e2e::fixture("fixture")}).status == 0);
  MESSAGE("programs gone " << gone_ms[0] << ", " << gone_ms[1] << ", " << gone_ms[2] << " ms after SIGKILL");
}

TEST_CASE("a name that is not UTF-8 is a located error, and a build id that is not UTF-8 is shown in hex") {
  std::string dir = e2e::temp_dir("utf8");
  write(dir + "/name.yaml", "probes:\n  - function: main.Ints\n    name: caf\xe9\n");
  auto build = e2e::run({e2e::weave(), "build", dir + "/name.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  CHECK(build.status == 1);
  CHECK(build.err.find("name.yaml:3:14: error[spec-encoding]: invalid UTF-8 (byte 0xe9)") != std::string::npos);
  CHECK(build.err.find("internal error") == std::string::npos);
  auto check = e2e::run({e2e::weave(), "check", dir + "/name.yaml", e2e::fixture("fixture"), dir + "/out"});
  CHECK(check.status == 3);

  // A build id is bytes: probes.json records them in hex, and the tracer's own reading agrees.
  std::string raw = binary_with_raw_build_id(dir);
  write(dir + "/spec.yaml", kSpec);
  auto dump = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", raw, "--dump", "probes.json"});
  INFO(dump.err);
  REQUIRE(dump.status == 0);
  nlohmann::json manifest = nlohmann::json::parse(dump.out);
  std::string id = manifest["target"]["build_id"];
  CHECK(id.starts_with("hex:fffe"));
  auto built = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", raw, "-o", dir + "/raw-out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto version = e2e::run({dir + "/raw-out/tracer", "--version"});
  CHECK(version.out.find(id) != std::string::npos);
  CHECK(e2e::run({e2e::weave(), "check", dir + "/spec.yaml", raw, dir + "/raw-out"}).status == 0);

  // The tracer finds the binary by the recorded path, which JSON can only carry as UTF-8.
  std::string odd = dir + "/bin\xff";
  fs::copy_file(e2e::fixture("fixture"), odd);
  auto path = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", odd, "-o", dir + "/odd-out"});
  CHECK(path.status == 1);
  CHECK(path.err.find("error[binary-path-encoding]") != std::string::npos);
  CHECK(e2e::run({e2e::weave(), "check", dir + "/spec.yaml", odd, dir + "/odd-out"}).status == 3);
}

TEST_CASE("a program for another OS is refused, naming its GOOS") {
  std::string dir = e2e::temp_dir("goos");
  write(dir + "/spec.yaml", "probes:\n  - function: main.main\n");
  auto refused = [&](const std::string &binary, const std::string &needle) {
    auto r = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", binary, "-o", dir + "/out"});
    CAPTURE(binary);
    CAPTURE(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find("error[unsupported-os]") != std::string::npos);
    CHECK(r.err.find(needle) != std::string::npos);
    CHECK(r.err.find("GOOS=linux") != std::string::npos);
    CHECK_FALSE(fs::exists(dir + "/out"));
    CHECK(e2e::run({e2e::weave(), "check", dir + "/spec.yaml", binary, dir + "/out"}).status == 3);
  };
  refused(freebsd_binary(dir), "built for GOOS=freebsd, not Linux");
  // A Linux binary whose ELF header claims FreeBSD: the two signals disagree, so it is refused.
  std::string bytes = e2e::read_file(e2e::fixture("fixture"));
  bytes[7] = 9; // EI_OSABI = ELFOSABI_FREEBSD
  write(dir + "/osabi", bytes);
  refused(dir + "/osabi", "GOOS=");
  // Windows and macOS programs are not ELF at all: said so, by their format.
  write(dir + "/prog.exe", std::string("MZ\x90\x00", 4) + std::string(512, '\0'));
  refused(dir + "/prog.exe", "a Windows program (PE format, GOOS=windows)");
  write(dir + "/prog.macho", std::string("\xcf\xfa\xed\xfe\x07\x00\x00\x01", 8) + std::string(512, '\0'));
  refused(dir + "/prog.macho", "a macOS program (Mach-O format, GOOS=darwin or ios)");
}

TEST_CASE("the binary given where the spec belongs is named as such, in a few lines") {
  std::string dir = e2e::temp_dir("swapped");
  write(dir + "/spec.yaml", kSpec);
  auto r = e2e::run({e2e::weave(), "build", e2e::fixture("fixture"), dir + "/spec.yaml", "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("error[spec-not-text]: this is an ELF file (a compiled program), not a probe spec") !=
        std::string::npos);
  CHECK(r.err.find("weave build SPEC BINARY") != std::string::npos);
  CHECK(r.err.size() < 400); // it printed ~3 KB of the ELF file as a YAML error
  auto shortcut = e2e::run({e2e::weave(), e2e::fixture("fixture"), dir + "/spec.yaml", "-o", dir + "/out"});
  CHECK(shortcut.status == 1);
  CHECK(shortcut.err.find("error[spec-not-text]") != std::string::npos);
}

TEST_CASE("several spec errors: all reported, each located, one non-zero exit") {
  std::string dir = e2e::temp_dir("several");
  write(dir + "/spec.yaml", "probes:\n  - function: main.Ints\n    captur: [a]\n  - function: main.Floats\n"
                            "    return: \"true\"\n  - function: !custom main.Nested\n");
  auto r = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("spec.yaml:3:5: error[spec-schema]: unknown key \"captur\" in probe") != std::string::npos);
  CHECK(r.err.find("spec.yaml:5:13: error[spec-schema]: return must be true or false, found \"true\"") !=
        std::string::npos);
  CHECK(r.err.find("spec.yaml:6:15: error[spec-syntax]: unexpected YAML tag \"!custom\"") != std::string::npos);
  CHECK(r.err.ends_with("3 errors\n"));
  auto check = e2e::run({e2e::weave(), "check", dir + "/spec.yaml", e2e::fixture("fixture"), dir + "/out"});
  CHECK(check.status == 3);
  CHECK(check.err.find("3 errors\n") != std::string::npos);
}

TEST_CASE("every bad input: weave build exits 1 and weave check 3, never an internal error") {
  std::string dir = e2e::temp_dir("exit-codes");
  const std::string fixture = e2e::fixture("fixture");
  std::vector<std::pair<std::string, std::string>> inputs; // {spec, binary}
  for (const auto &entry : fs::directory_iterator(e2e::source("tests/specs")))
    if (entry.path().filename().string().starts_with("fail_"))
      inputs.push_back({entry.path().string(), fixture});
  std::sort(inputs.begin(), inputs.end());
  size_t specs = inputs.size();
  CHECK(specs >= 50);
  // Bad binaries, each with a good spec.
  write(dir + "/spec.yaml", kSpec);
  std::string bytes = e2e::read_file(fixture);
  write(dir + "/truncated", bytes.substr(0, 65536));
  write(dir + "/empty", "");
  std::string noisy = bytes;
  for (size_t i = 64; i < noisy.size(); i += 4099)
    noisy[i] = static_cast<char>(noisy[i] ^ 0x5a);
  write(dir + "/noisy", noisy);
  write(dir + "/osabi", std::string(bytes).replace(7, 1, 1, '\x09'));
  mkfifo((dir + "/fifo").c_str(), 0600);
  for (const std::string &binary :
       {e2e::source("README.md"), std::string("/bin/true"), std::string("/nonexistent"), dir + "/truncated",
        dir + "/empty", dir + "/osabi", dir + "/fifo", dir, dir + "/bin\xff"})
    inputs.push_back({dir + "/spec.yaml", binary});
  fs::copy_file(fixture, dir + "/bin\xff");
  inputs.push_back({fixture, dir + "/spec.yaml"}); // swapped
  inputs.push_back({dir + "/spec.yaml", dir + "/noisy"});
  size_t failed_builds = 0;
  for (const auto &input : inputs) {
    const std::string &spec = input.first, &binary = input.second; // clang 14 captures no bindings
    CAPTURE(spec);
    CAPTURE(binary);
    auto build = e2e::run({e2e::weave(), "build", spec, binary, "-o", dir + "/out"});
    CAPTURE(build.err);
    // The bit-flipped binary may still build: what matters is a clean 0 or 1 and no crash.
    if (binary != dir + "/noisy")
      CHECK(build.status == 1);
    CHECK((build.status == 0 || build.status == 1));
    CHECK(build.err.find("internal error") == std::string::npos);
    failed_builds += build.status == 1;
    auto check = e2e::run({e2e::weave(), "check", spec, binary, dir + "/checked"});
    CAPTURE(check.err);
    CHECK(check.status >= 0);
    CHECK(check.status <= 3);
    if (build.status == 1)
      CHECK(check.status == 3);
    CHECK(check.err.find("internal error") == std::string::npos);
  }
  fs::remove_all(dir + "/out");
  MESSAGE(inputs.size() << " bad inputs (" << specs << " specs, " << inputs.size() - specs
                        << " binaries or argument orders): " << failed_builds << " refused with exit 1");
}

TEST_CASE("a build killed during clang leaves no temporary once the next build has run") {
  std::string dir = e2e::temp_dir("killed");
  std::string logs = e2e::temp_dir("killed-logs");
  write(logs + "/spec.yaml", kSpec);
  // A "clang" that says it started, then waits to be killed.
  write(logs + "/slow-clang", "#!/bin/sh\necho $$ > " + logs + "/clang.pid\nexec sleep 60\n");
  chmod((logs + "/slow-clang").c_str(), 0755);
  for (int round = 0; round < 3; ++round) {
    fs::remove(logs + "/clang.pid");
    e2e::Background weave = e2e::spawn({e2e::weave(), "build", logs + "/spec.yaml", e2e::fixture("fixture"), "-o",
                                        dir + "/out", "--clang", logs + "/slow-clang"},
                                       logs);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(logs + "/clang.pid") && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(fs::exists(logs + "/clang.pid"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const int pid = weave.pid;
    REQUIRE(kill(pid, SIGKILL) == 0);
    CHECK(weave.wait() == 128 + SIGKILL);
    pid_t clang = std::stoi(e2e::read_file(logs + "/clang.pid"));
    kill(clang, SIGKILL);
    // The killed build left its temporary (each build first removes those of dead ones, so there
    // is one at a time): what the next build must clean.
    std::vector<std::string> litter;
    for (const auto &entry : fs::directory_iterator(dir))
      litter.push_back(entry.path().filename().string());
    REQUIRE(litter.size() == 1);
    CHECK(litter[0].rfind(".out.weave-tmp-" + std::to_string(pid) + "-", 0) == 0); // mkdtemp's suffix follows
  }
  auto next = e2e::run({e2e::weave(), "build", logs + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(next.err);
  REQUIRE(next.status == 0);
  std::vector<std::string> left;
  for (const auto &entry : fs::directory_iterator(dir))
    left.push_back(entry.path().filename().string());
  CHECK(left == std::vector<std::string>{"out"});
}

TEST_CASE("text from the command line, spec or binary reaches probes.bpf.c only inside comments") {
  // The binary's path is written into a comment of the C file: one holding "*/" and C code must
  // neither end the comment nor add code.
  std::string dir = e2e::temp_dir("c-injection");
  std::string evil = dir + "/x*/int injected = 1; /*";
  fs::create_directories(evil);
  fs::copy_file(e2e::fixture("fixture"), evil + "/bin");
  auto r = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"), evil + "/bin", "-o", dir + "/out"});
  INFO(r.err);
  REQUIRE(r.status == 0); // clang compiled it
  std::string c = e2e::read_file(dir + "/out/probes.bpf.c");
  CHECK(c.find("x* /int injected = 1; /* /bin") != std::string::npos);
  // Every "*/" in the file closes a comment weave opened: none comes from the path.
  CHECK(c.find("x*/") == std::string::npos);
}

TEST_CASE("a capture index past 2^64 is a located error (found by fuzz_capture_expr)") {
  std::string dir = e2e::temp_dir("huge-index");
  write(dir + "/spec.yaml", "probes:\n  - function: main.Collections\n    capture:\n      - arr[18446744073709551616]\n");
  auto r = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("spec.yaml:4:13: error[bad-expression]") != std::string::npos);
  CHECK(r.err.find("index 18446744073709551616 is larger than any Go value can have") != std::string::npos);
  CHECK(e2e::run({e2e::weave(), "check", dir + "/spec.yaml", e2e::fixture("fixture"), dir + "/out"}).status == 3);
}

TEST_CASE("every probe that cannot be planned is reported in one run, each at its line") {
  std::string dir = e2e::temp_dir("hostile-many-errors");
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Nope\n"              // line 2: no such function
                                       "  - function: main.Ints\n"
                                       "  - function: main.ByValue\n"
                                       "    capture: [h.Nope]\n"                // line 5: no such field
                                       "  - function: 'nothing.matches.*'\n";  // line 6: an empty glob
  auto glob = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  CHECK(glob.status == 1);
  CHECK(glob.err.find("spec.yaml:6:") != std::string::npos); // the wildcards are expanded first
  CHECK(glob.err.find("internal error") == std::string::npos);
  // Without the empty glob, the two planning errors come together.
  std::ofstream(dir + "/spec.yaml") << "probes:\n"
                                       "  - function: main.Nope\n"
                                       "  - function: main.Ints\n"
                                       "  - function: main.ByValue\n"
                                       "    capture: [h.Nope]\n";
  auto r = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", e2e::fixture("fixture"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("spec.yaml:2:") != std::string::npos);
  CHECK(r.err.find("no function main.Nope") != std::string::npos);
  CHECK(r.err.find("spec.yaml:5:") != std::string::npos);
  CHECK(r.err.find("has no field Nope") != std::string::npos);
  CHECK(r.err.find("2 errors") != std::string::npos);
  CHECK(!std::filesystem::exists(dir + "/out"));
}
