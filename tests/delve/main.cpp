// delve-oracle: compares the tracer's JSON entry events with the arguments Delve reads at the same
// calls (delve_oracle.h), for any Go binary the tracer ran:
//
//   tracer --format json -- BIN ARGS... > events.jsonl
//   delve-oracle --manifest out/probes.json --events events.jsonl [--work DIR] [--timeout S] -- BIN ARGS...
//
// Functions are the manifest's entry probes; its line probes (line: FILE:LINE) are checked at their PCs,
// their arguments and locals against the tracer's line events. Exit 0: no mismatch; 1: mismatches; 2: the run failed;
// 77: no dlv on PATH.
#include "delve_oracle.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

namespace {

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int usage() {
  std::cerr << "usage: delve-oracle --manifest probes.json --events events.jsonl [--work DIR] [--timeout S] "
               "[--dlv PATH] -- BIN ARGS...\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string manifest, events_path, work;
  delve_oracle::Options options;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--")
      break;
    if (i + 1 >= argc)
      return usage();
    if (a == "--manifest")
      manifest = argv[++i];
    else if (a == "--events")
      events_path = argv[++i];
    else if (a == "--work")
      work = argv[++i];
    else if (a == "--timeout")
      options.timeout_ms = std::stoi(argv[++i]) * 1000;
    else if (a == "--dlv")
      options.dlv = argv[++i];
    else
      return usage();
  }
  if (manifest.empty() || events_path.empty() || i + 1 >= argc)
    return usage();
  std::string binary = argv[i + 1];
  options.args.assign(argv + i + 2, argv + argc);
  if (system((options.dlv + " version >/dev/null 2>&1").c_str()) != 0) {
    std::cout << "delve-oracle: skipped: " << options.dlv << " not found (Debian: apt-get install delve)\n";
    return 77;
  }
  try {
    options.work_dir = work.empty() ? std::filesystem::temp_directory_path().string() : work;
    std::filesystem::create_directories(options.work_dir);
    auto m = nlohmann::json::parse(read_file(manifest));
    auto functions = delve_oracle::functions_from_manifest(m);
    auto events = delve_oracle::parse_events(read_file(events_path));
    delve_oracle::Counts counts;
    if (!functions.empty())
      counts = delve_oracle::compare(binary, functions, events, options, delve_oracle::left_out_from_manifest(m));
    // Line probes: Delve stopped at the same PCs, their arguments and locals against the line events.
    if (auto points = delve_oracle::line_points_from_manifest(m); !points.empty() && counts.error.empty()) {
      delve_oracle::Counts lines;
      auto hits = delve_oracle::run_delve_lines(binary, points, options, lines);
      if (lines.error.empty())
        delve_oracle::compare_line_hits(hits, points, events, lines);
      counts.calls += lines.calls;
      counts.functions += lines.functions;
      counts.compared += lines.compared;
      counts.refused += lines.refused;
      for (auto &[reason, n] : lines.skipped)
        counts.skipped[reason] += n;
      counts.mismatches.insert(counts.mismatches.end(), lines.mismatches.begin(), lines.mismatches.end());
      counts.error = lines.error;
    }
    std::cout << delve_oracle::report(counts, 100000);
    if (!counts.error.empty())
      return 2;
    return counts.mismatches.empty() ? 0 : 1;
  } catch (const std::exception &e) {
    std::cerr << "delve-oracle: " << e.what() << "\n";
    return 2;
  }
}
