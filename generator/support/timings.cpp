#include "support/timings.h"

#include <fmt/format.h>

#include <sys/resource.h>

namespace weave {

namespace {

// CPU seconds (user + system) of this process and of the children it has waited for (clang).
double cpu_seconds() {
  struct rusage self {}, children {};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  auto secs = [](const timeval &t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(self.ru_utime) + secs(self.ru_stime) + secs(children.ru_utime) + secs(children.ru_stime);
}

} // namespace

Timings::Timings() : last_(std::chrono::steady_clock::now()), last_cpu_(cpu_seconds()) {}

void Timings::mark(std::string stage) {
  auto now = std::chrono::steady_clock::now();
  double cpu = cpu_seconds();
  cpu_.push_back(cpu - last_cpu_);
  stages_.emplace_back(std::move(stage), std::chrono::duration<double>(now - last_).count());
  last_ = now;
  last_cpu_ = cpu;
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
  // CPU time apart from wall time: on a busy machine a stage waits for a core, and only its CPU
  // time says what it costs.
  std::string cpu;
  double cpu_total = 0;
  for (size_t i = 0; i < stages_.size(); ++i) {
    cpu += fmt::format("{}{} {:.3f} s", cpu.empty() ? "cpu: " : ", ", stages_[i].first, cpu_[i]);
    cpu_total += cpu_[i];
  }
  cpu += fmt::format("; total {:.3f} s", cpu_total);
  return {line, summary, cpu};
}

} // namespace weave
