#include "support/timings.h"

#include <fmt/format.h>

#include <sys/resource.h>

namespace weave {

void Timings::mark(std::string stage) {
  auto now = std::chrono::steady_clock::now();
  stages_.emplace_back(std::move(stage), std::chrono::duration<double>(now - last_).count());
  last_ = now;
}

double Timings::seconds(const std::string &stage) const {
  double sum = 0;
  for (const auto &[name, s] : stages_)
    if (name == stage)
      sum += s;
  return sum;
}

double Timings::total() const {
  double sum = 0;
  for (const auto &stage : stages_)
    sum += stage.second;
  return sum;
}

std::vector<std::string> Timings::report() const {
  std::string line;
  for (const auto &[name, s] : stages_)
    line += fmt::format("{}{} {:.3f} s", line.empty() ? "" : ", ", name, s);
  // ru_maxrss is in KiB on Linux; RUSAGE_CHILDREN is the largest child that has been waited for.
  struct rusage self {}, children {};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  std::string summary = fmt::format("total {:.3f} s ({:.3f} s without clang); peak RSS {} MiB",
                                    total(), total() - seconds("clang"), (self.ru_maxrss + 1023) / 1024);
  if (children.ru_maxrss > 0)
    summary += fmt::format(" (clang: {} MiB)", (children.ru_maxrss + 1023) / 1024);
  return {line, summary};
}

} // namespace weave
