// Stats: what `tracer --stats` reports per probe, and how the numbers add up.
//
// For every probe (one manifest "probes" entry: a function's entry or return event):
//   hits    its BPF program ran for it in a traced process: counted in weave_reserve after the pid
//           filter (weave_hits, templates/weave_bpf.h);
//   events  records the tracer received from the ring buffer (each one reserved and submitted);
//   lost    no room in the ring buffer (weave_lost), or, for a record built in a per-CPU scratch
//           record, every one of its CPU busy (weave_scratch_busy: runs preempted halfway);
//   filtered dropped by the probe's when: condition, or a return whose entry was not emitted
//           (filtered or limited) (weave_filtered);
//   limited dropped by limits: events_per_second (weave_limited). Each of the two is a column of
//           its own when any probe has some.
//   evicted min_duration, when_return: held entries the probe's map of calls in flight could not keep (full,
//           or a call at the same goroutine and depth never returned) (weave_evicted);
//   held    min_duration, when_return: entries held at the end, calls still in flight (weave_held). Both are
//           entry-probe counts, columns of their own when any probe has some; a slow call's entry
//           is an event, a fast one's is filtered (and its return too).
// For every BPF program (probes of one shape share one, telling each other apart by the attach
// point's cookie):
//   runs    every run, other processes' included (bpf_prog_info.run_cnt, with the kernel's
//           run-time statistics on), and run_time_ns their total time inside the program.
// A probe's ns/run is its program's average: probes sharing a program run the same code.
// Once the links are closed and the ring buffer is drained, hits == events + lost + filtered +
// limited for every probe;
// while tracing, events trail by what is still in the buffer. Pure, for unit tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "manifest.h"

namespace weave {

struct ProbeStats {
  uint64_t hits = 0;
  uint64_t events = 0;
  uint64_t lost = 0;
  uint64_t filtered = 0;
  uint64_t limited = 0;
  uint64_t evicted = 0;
  uint64_t held = 0;
};

struct ProgramStats {
  uint64_t runs = 0;
  uint64_t run_time_ns = 0;
};

struct StatsReport {
  std::vector<ProbeStats> probes;     // by probe id
  std::vector<ProgramStats> programs; // by program index
  std::vector<size_t> program_of_probe; // by probe id: index into programs
  bool hits_known = false;            // the object has weave_hits
  bool run_time_known = false;        // run-time statistics were on
  // The spawn probe (Manifest::spawn): its entry and return programs' runs and times, when known.
  bool spawn_known = false;
  ProgramStats spawn_entry, spawn_return;
  double seconds = 0;                 // since tracing started
};

inline bool stats_add_up(const ProbeStats &s) {
  return s.hits == s.events + s.lost + s.filtered + s.limited + s.evicted + s.held;
}

// "entry", "return", or "entry+return" from the kinds of a probe's attach points.
inline const char *probe_kind(const ManifestProbe &probe) {
  bool entry = false, ret = false;
  for (const ManifestAttach &a : probe.attach)
    (a.kind == AttachKind::Return ? ret : entry) = true;
  return entry && ret ? "entry+return" : ret ? "return" : "entry";
}

// The table, one string per line without a newline:
//   probe        kind    points   hits  events  lost  ns/run
//   main.Work    entry        1  1000    1000     0     412
//   total                     1  1000    1000     0     412
//   1 BPF program for 1 probe: 1000 runs, 412 ns/run
// A "total" row when there is more than one probe; the last line when run times are known.
// Unknown values print as "-".
inline std::vector<std::string> format_stats(const Manifest &manifest, const StatsReport &report) {
  constexpr int kColumns = 11;
  constexpr int kFilteredColumn = 6; // shown only when a when: condition dropped something
  constexpr int kLimitedColumn = 7;  // shown only when limits dropped something
  constexpr int kEvictedColumn = 8;  // shown only when min_duration's maps lost some entries
  constexpr int kHeldColumn = 9;     // shown only when min_duration calls are still in flight
  struct Row {
    std::string cells[kColumns];
  };
  auto num = [](uint64_t v) { return std::to_string(v); };
  auto avg = [](uint64_t total, uint64_t count) {
    return count ? std::to_string((total + count / 2) / count) : std::string("-");
  };
  auto plural = [](size_t n, const char *what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  };
  std::vector<Row> rows;
  rows.push_back({{"probe", "kind", "points", "hits", "events", "lost", "filtered", "limited", "evicted", "held", "ns/run"}});
  ProbeStats total;
  size_t total_points = 0;
  for (size_t i = 0; i < manifest.probes.size() && i < report.probes.size(); ++i) {
    const ProbeStats &s = report.probes[i];
    const ManifestProbe &p = manifest.probes[i];
    std::string ns_per_run = "-";
    if (report.run_time_known && i < report.program_of_probe.size() &&
        report.program_of_probe[i] < report.programs.size()) {
      const ProgramStats &program = report.programs[report.program_of_probe[i]];
      ns_per_run = avg(program.run_time_ns, program.runs);
    }
    rows.push_back({{p.name, probe_kind(p), num(p.attach.size()), report.hits_known ? num(s.hits) : "-",
                     num(s.events), num(s.lost), num(s.filtered), num(s.limited), num(s.evicted), num(s.held), ns_per_run}});
    total.hits += s.hits;
    total.events += s.events;
    total.lost += s.lost;
    total.filtered += s.filtered;
    total.limited += s.limited;
    total.evicted += s.evicted;
    total.held += s.held;
    total_points += p.attach.size();
  }
  ProgramStats all_programs;
  for (const ProgramStats &program : report.programs) {
    all_programs.runs += program.runs;
    all_programs.run_time_ns += program.run_time_ns;
  }
  if (manifest.probes.size() > 1)
    rows.push_back({{"total", "", num(total_points), report.hits_known ? num(total.hits) : "-",
                     num(total.events), num(total.lost), num(total.filtered), num(total.limited),
                     num(total.evicted), num(total.held),
                     report.run_time_known ? avg(all_programs.run_time_ns, all_programs.runs) : "-"}});
  size_t width[kColumns] = {};
  for (const Row &row : rows)
    for (int c = 0; c < kColumns; ++c)
      width[c] = std::max(width[c], row.cells[c].size());
  std::vector<std::string> lines;
  for (const Row &row : rows) {
    std::string line;
    for (int c = 0; c < kColumns; ++c) {
      if ((c == kFilteredColumn && total.filtered == 0) || (c == kLimitedColumn && total.limited == 0) ||
          (c == kEvictedColumn && total.evicted == 0) || (c == kHeldColumn && total.held == 0))
        continue;
      const std::string &cell = row.cells[c];
      std::string pad(width[c] - cell.size(), ' ');
      if (c > 0)
        line += "  ";
      line += c < 2 ? cell + pad : pad + cell; // names left, numbers right
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    lines.push_back(line);
  }
  if (report.run_time_known)
    lines.push_back(plural(report.programs.size(), "BPF program") + " for " +
                    plural(manifest.probes.size(), "probe") + ": " + plural(all_programs.runs, "run") +
                    ", " + avg(all_programs.run_time_ns, all_programs.runs) + " ns/run");
  if (report.spawn_known && manifest.spawn)
    // Each goroutine made runs the entry program once and the return program once (at one RET).
    lines.push_back("goroutine creation (" + manifest.spawn->function + ", for created_by's parent): " +
                    plural(report.spawn_return.runs, "goroutine") + " made, " +
                    avg(report.spawn_entry.run_time_ns + report.spawn_return.run_time_ns, report.spawn_return.runs) +
                    " ns each (BPF: " + avg(report.spawn_entry.run_time_ns, report.spawn_entry.runs) + " ns/run first, " +
                    avg(report.spawn_return.run_time_ns, report.spawn_return.runs) + " ns/run with the new g)");
  return lines;
}

// Names the probes whose numbers do not add up (hits != events + lost + filtered + limited), for the
// exit summary:
// "main.Work: 10 hits != 9 events + 0 lost". Empty when they all do, or hits are unknown.
inline std::vector<std::string> stats_mismatches(const Manifest &manifest,
                                                 const StatsReport &report) {
  std::vector<std::string> out;
  if (!report.hits_known)
    return out;
  for (size_t i = 0; i < manifest.probes.size() && i < report.probes.size(); ++i) {
    const ProbeStats &s = report.probes[i];
    if (!stats_add_up(s))
      out.push_back(manifest.probes[i].name + ": " + std::to_string(s.hits) + " hits != " +
                    std::to_string(s.events) + " events + " + std::to_string(s.lost) + " lost" +
                    (s.filtered ? " + " + std::to_string(s.filtered) + " filtered" : "") +
                    (s.limited ? " + " + std::to_string(s.limited) + " limited" : "") +
                    (s.evicted ? " + " + std::to_string(s.evicted) + " evicted" : "") +
                    (s.held ? " + " + std::to_string(s.held) + " held" : ""));
  }
  return out;
}

} // namespace weave
