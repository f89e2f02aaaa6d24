// Harness for end-to-end tests: runs the real weave, the real tracer and the real Go fixtures.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace e2e {

struct Result {
  int status = -1; // exit code, or 128 + signal
  std::string out;
  std::string err;
};

// Runs argv (no shell) to completion with a timeout (then SIGKILL, status 137); stdin is /dev/null.
// The default timeout is a guard against a hang, five minutes: a build (clang) on a machine whose
// cores are busy with other tests may take tens of seconds.
Result run(const std::vector<std::string> &argv, int timeout_ms = 300000);

// A process left running in the background, its output going to files. It is killed when the
// object goes away still running (a failed REQUIRE must not leave tracers attached).
struct Background {
  Background() = default;
  Background(Background &&other) noexcept { *this = std::move(other); }
  Background &operator=(Background &&other) noexcept {
    std::swap(pid, other.pid);
    out_path = other.out_path;
    err_path = other.err_path;
    return *this;
  }
  ~Background();
  int pid = -1;
  std::string out_path;
  std::string err_path;
  std::string read_out() const;
  std::string read_err() const;
  // Waits until stderr contains `text`; false after timeout_ms. The default is a guard against a
  // hang, two minutes: on a machine whose cores are busy with other tests, attaching a tracer or
  // starting a Go program can take seconds, and a wait that gives up early is a flaky test.
  bool wait_for_err(const std::string &text, int timeout_ms = 120000) const;
  // Waits for exit; returns the status or -1 after timeout_ms (the process is then killed). A guard
  // against a hang, as wait_for_err's, generous for a busy machine.
  int wait(int timeout_ms = 180000);
};
Background spawn(const std::vector<std::string> &argv, const std::string &dir);

std::string weave();          // the weave executable under test
// A fixture by name: the pinned Go 1.19 build, or, when the version matrix runs a test
// (WEAVE_MATRIX_FIXTURES names one toolchain's directory, tests/matrix/build.sh), that toolchain's.
std::string fixture(const std::string &name);
// `go tool objdump` of the toolchain that built the fixtures, as argv. Go 1.25+ ships no prebuilt objdump (`go tool` builds
// it on demand), so the matrix builds it once beside the fixtures.
std::vector<std::string> objdump();
// The matrix toolchain's version ("1.24.13"), or "" for the pinned fixtures.
std::string matrix_version();
std::string source(const std::string &relative);
std::string temp_dir(const std::string &name); // fresh, empty, under the build tree, this process's own (NAME.PID)
// Every directory temp_dir made in this process; tests/e2e/cleanup.cpp removes them after a run
// whose test cases all passed.
std::vector<std::string> &temp_dirs_made();
std::string read_file(const std::string &path);
// The number of the first line of a source file (relative to the checkout) that holds `text`: where
// a fixture marks a call or a probed line. Throws when no line does (the test case fails).
int source_line_holding(const std::string &relative, const std::string &text);

// Exits the test process with ctest's skip code (77) after saying why, when the machine cannot run
// real BPF programs (not root). Never lets such a test pass silently.
void require_bpf();

// Parses JSON lines. The tracer writes bytes that are not UTF-8 as \udcXX escapes, which
// nlohmann::json rejects (lone surrogates); they become the text "<0xXX>" here.
std::vector<nlohmann::json> json_lines(const std::string &text);

// `value` with the pairs of every map in it in one order: a map capture's items ({key, value}
// objects) are in memory order, a Go program's in random order, so compare maps through this.
nlohmann::json map_pairs_sorted(nlohmann::json value);

// This test process's own loopback address, 127.A.B.C from its pid: Linux routes all of
// 127.0.0.0/8 to lo, and no two running processes share a pid, so servers a test starts there
// cannot collide with another test's, nor with any connection to 127.0.0.1.
std::string loopback();

// A port nothing listens on now at loopback() (bound to 0, read back, closed), for servers that
// cannot bind 0 and say which port they got. Only a wildcard bind(0) elsewhere in the moment
// between the close and the server's bind could take it; connections to other addresses cannot.
int free_port();

} // namespace e2e
