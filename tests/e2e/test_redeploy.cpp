// End to end, for real: the traced binary changes under a running tool (README "Safety").
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

} // namespace

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
