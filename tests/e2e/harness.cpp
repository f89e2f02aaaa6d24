#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

#include <chrono>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <poll.h>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace e2e {

namespace {

std::vector<char *> c_args(const std::vector<std::string> &argv) {
  std::vector<char *> args;
  for (const auto &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  return args;
}

int decode_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

Result run(const std::vector<std::string> &argv, int timeout_ms) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0)
    throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    auto args = c_args(argv);
    execvp(args[0], args.data());
    fprintf(stderr, "exec %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  Result result;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  char buffer[65536];
  while (open_fds > 0) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0 && !killed) {
      kill(pid, SIGKILL);
      killed = true;
    }
    if (poll(fds, 2, std::max(left, 100)) < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.status = decode_status(status);
  return result;
}

Background spawn(const std::vector<std::string> &argv, const std::string &dir) {
  static int counter = 0;
  Background bg;
  bg.out_path = dir + "/bg" + std::to_string(counter) + ".out";
  bg.err_path = dir + "/bg" + std::to_string(counter++) + ".err";
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    int o = open(bg.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(bg.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(null, 0);
    dup2(o, 1);
    dup2(e, 2);
    auto args = c_args(argv);
    execvp(args[0], args.data());
    _exit(127);
  }
  bg.pid = pid;
  return bg;
}

Background::~Background() {
  if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

std::string Background::read_out() const { return read_file(out_path); }
std::string Background::read_err() const { return read_file(err_path); }

bool Background::wait_for_err(const std::string &text, int timeout_ms) const {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (read_err().find(text) != std::string::npos)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int Background::wait(int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 10) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return decode_status(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  pid = -1;
  return -1;
}

std::string weave() { return std::string(WEAVE_BINARY_DIR) + "/weave"; }
namespace {

const char *matrix_dir() {
  const char *dir = std::getenv("WEAVE_MATRIX_FIXTURES");
  return dir && *dir ? dir : nullptr;
}

// A matrix test whose toolchain could not be fetched skips, with the reason build.sh wrote, before
// any test case runs: never a silent pass, never a failure the machine's network caused.
const bool matrix_checked = [] {
  const char *dir = matrix_dir();
  if (!dir)
    return true;
  std::string skip = read_file(std::string(dir) + "/SKIP");
  if (!skip.empty()) {
    std::cout << skip << std::flush;
    std::exit(77);
  }
  // A full row has the fixture; the row of a toolchain before Go 1.21 only the spawn fixtures.
  if (!fs::exists(std::string(dir) + "/fixture") && !fs::exists(std::string(dir) + "/spawn")) {
    std::cerr << "WEAVE_MATRIX_FIXTURES=" << dir << " has no fixtures: tests/matrix/build.sh builds them\n";
    std::exit(1);
  }
  return true;
}();

} // namespace

std::string fixture(const std::string &name) {
  return std::string(matrix_dir() ? matrix_dir() : WEAVE_FIXTURE_DIR) + "/" + name;
}

std::vector<std::string> objdump() {
  if (matrix_dir())
    return {std::string(matrix_dir()) + "/objdump"};
  return {WEAVE_GO, "tool", "objdump"};
}

std::string matrix_version() {
  if (!matrix_dir())
    return "";
  std::string dir = fs::path(matrix_dir()).filename().string(); // "go1.24.13"
  return dir.rfind("go", 0) == 0 ? dir.substr(2) : dir;
}
std::string source(const std::string &relative) { return std::string(WEAVE_SOURCE_DIR) + "/" + relative; }

std::vector<std::string> &temp_dirs_made() {
  static std::vector<std::string> dirs;
  return dirs;
}

std::string temp_dir(const std::string &name) {
  // A matrix row runs the same tests as the pinned build, maybe at the same time (ctest -j):
  // each toolchain gets directories of its own.
  std::string row = matrix_version().empty() ? "" : "go" + matrix_version();
  // And each process its own: ctest runs every test case as a process of its own, two at a time,
  // and two cases that picked the same name removed each other's files.
  fs::path dir = fs::path(WEAVE_BINARY_DIR) / "e2e-tmp" / row / (name + "." + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  temp_dirs_made().push_back(dir.string());
  return dir.string();
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int source_line_holding(const std::string &relative, const std::string &text) {
  std::istringstream in(read_file(source(relative)));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find(text) != std::string::npos)
      return n;
  }
  throw std::runtime_error("no line of " + relative + " holds " + text);
}

void require_bpf() {
  if (geteuid() != 0) {
    std::cout << "SKIPPED: this test loads BPF programs and attaches uprobes, which needs root" << std::endl;
    std::exit(77);
  }
}

nlohmann::json map_pairs_sorted(nlohmann::json value) {
  if (value.is_array()) {
    for (auto &v : value)
      v = map_pairs_sorted(std::move(v));
    return value;
  }
  if (!value.is_object())
    return value;
  for (auto &[key, v] : value.items())
    v = map_pairs_sorted(std::move(v));
  auto items = value.find("items");
  if (items != value.end() && items->is_array() &&
      std::all_of(items->begin(), items->end(), [](const nlohmann::json &p) {
        return p.is_object() && p.size() == 2 && p.contains("key") && p.contains("value");
      }))
    std::sort(items->begin(), items->end(),
              [](const nlohmann::json &a, const nlohmann::json &b) { return a["key"].dump() < b["key"].dump(); });
  return value;
}

std::vector<nlohmann::json> json_lines(const std::string &text) {
  static const std::regex surrogate(R"(\\udc([0-9a-fA-F]{2}))");
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    lines.push_back(nlohmann::json::parse(std::regex_replace(line, surrogate, "<0x$1>")));
  }
  return lines;
}

namespace {
uint32_t loopback_address() {
  // pid_max is at most 2^22: the top byte is 1..64, never 127.0.x.x nor the broadcast address.
  auto pid = static_cast<uint32_t>(getpid());
  return (127u << 24) | ((1u + ((pid >> 16) & 0x3fu)) << 16) | (pid & 0xffffu);
}
} // namespace

std::string loopback() {
  uint32_t a = loopback_address();
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xff) + "." + std::to_string((a >> 8) & 0xff) +
         "." + std::to_string(a & 0xff);
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(loopback_address());
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
    std::cerr << "free_port: cannot bind " << loopback() << ": " << std::strerror(errno) << "\n";
    std::abort();
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

} // namespace e2e
