// Timings: where `weave build` spends its time, stage by stage, for `weave build --timings` and
// bench/run.sh. Wall time per stage plus peak memory: weave's own and that of the children it ran
// (clang), which getrusage keeps apart.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace weave {

class Timings {
public:
  Timings();
  // Ends the stage that ran since the previous mark (or construction) and names it.
  void mark(std::string stage);
  double seconds(const std::string &stage) const; // 0 for a stage that did not run
  double total() const;
  // "spec 0.001 s, binary 0.004 s, ...", "total 0.23 s (0.14 s without clang); peak RSS ..." and
  // "cpu: spec 0.001 s, ...; total 0.2 s" (user + system, clang's included in its stage).
  std::vector<std::string> report() const;

private:
  std::chrono::steady_clock::time_point last_;
  double last_cpu_ = 0;
  std::vector<std::pair<std::string, double>> stages_;
  std::vector<double> cpu_; // per stage, as stages_
};

// Marks a stage on `timings` when it is not null.
inline void mark(Timings *timings, std::string stage) {
  if (timings)
    timings->mark(std::move(stage));
}

} // namespace weave
