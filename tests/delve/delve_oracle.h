// A second, independent oracle: Delve. weave computes where each parameter lives from its own model of
// the Go ABI and never reads DWARF location lists; Delve reads nothing else. This drives a headless
// Delve (JSON-RPC 2 over TCP) over a Go binary with a breakpoint at the entry of each function, reads
// the arguments Delve sees at every call, and compares them value for value with the tracer's JSON
// entry events of the same calls (a second run of a deterministic program makes the same calls in the
// same order; calls are matched per function and goroutine, in order).
//
// Values Delve cannot give are never passed silently: each is counted under the reason it was skipped
// (DWARF names one register twice, DWARF stack locations that overlap, a value Delve cannot read,
// a parameter DWARF leaves out, a value weave refuses by design). Anything else that differs is a
// mismatch.
//
// WEAVE_DELVE_LOG=1 in the environment writes every request and reply to WORK_DIR/rpc.log and prints
// the path of each overlapping or left-out value, to tell why a value was skipped.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace delve_oracle {

struct Options {
  std::string dlv = "dlv";            // the Delve executable
  std::vector<std::string> dlv_flags; // before the binary: e.g. --check-go-version=false
  std::vector<std::string> args;      // the program's arguments
  std::string work_dir;               // Delve's output goes to files here
  int timeout_ms = 120000;            // the whole Delve run, then it is killed
  size_t max_string = 4096;           // Delve's MaxStringLen; also the limit for comparing bytes
  size_t max_array = 64;              // Delve's MaxArrayValues
};

struct Counts {
  size_t calls = 0;     // calls both saw and compared
  size_t functions = 0; // functions with a breakpoint
  size_t compared = 0;  // leaf values compared (an integer, a string, a length, a type name ...)
  std::map<std::string, size_t> skipped; // reason -> values (parameters or parts) not compared
  std::vector<std::string> mismatches;   // "function#call goroutine: path: weave X, delve Y"
  std::string error;                     // the run itself failed (Delve missing, timeout, RPC error)
  size_t refused = 0;                    // line probes: values Delve read that weave shows as unavailable
  bool ok() const { return error.empty() && mismatches.empty(); }
};

// Parses the tracer's JSON lines. Bytes that are not UTF-8 (written as \udcXX escapes, which JSON
// parsers reject as lone surrogates) are kept as U+E0XX, which compare() turns back into the byte.
std::vector<nlohmann::json> parse_events(const std::string &text);

// Delve's arguments (api.Variable JSON, an array) at each hit, by (function, goroutine id), in order.
using Hits = std::map<std::pair<std::string, long long>, std::vector<nlohmann::json>>;

// Runs `binary` under Delve to its end with a breakpoint at the entry of each of `functions`.
// Failures to set a breakpoint are mismatches; a failed run sets counts.error.
Hits run_delve(const std::string &binary, const std::vector<std::string> &functions, const Options &options,
               Counts &counts);

// Parameters weave leaves out of `args: all` by design, from its manifest: function -> parameter ->
// the warning's tag ("[float-in-register]"). Each is counted under its tag instead of compared.
using LeftOut = std::map<std::string, std::map<std::string, std::string>>;
LeftOut left_out_from_manifest(const nlohmann::json &manifest);
// The functions of the manifest's entry probes (line probes aside), each once.
std::vector<std::string> functions_from_manifest(const nlohmann::json &manifest);

// Compares the hits with the tracer's entry events of the same function, goroutine and call number.
void compare_hits(const Hits &hits, const std::vector<std::string> &functions,
                  const std::vector<nlohmann::json> &events, Counts &counts, const LeftOut &left_out = {});

// run_delve then compare_hits.
// Runs `binary` under Delve with a breakpoint at each of `functions` and compares the arguments Delve
// reads at every hit with the tracer's entry events (`events`, as parsed by parse_events) of the same
// function, goroutine and call number.
Counts compare(const std::string &binary, const std::vector<std::string> &functions,
               const std::vector<nlohmann::json> &events, const Options &options, const LeftOut &left_out = {});

// Compares one call: the `args` object of a tracer event with Delve's argument variables (api.Variable
// as JSON). Exposed for tests and for callers that drive Delve themselves.
void compare_call(const std::string &where, const nlohmann::json &weave_args, const nlohmann::json &delve_args,
                  Counts &counts);

// ---- line probes ----
// Each PC the manifest's line probes attach at (its "line": {"pc"}), with the probe's name, and per
// value the probe cannot read there, weave's reason (from the captures' "unavailable" and the
// probe's "skipped").
struct LinePoint {
  uint64_t pc = 0;
  std::string probe;
  std::map<std::string, std::string> refused; // local -> weave's reason
};
std::vector<LinePoint> line_points_from_manifest(const nlohmann::json &manifest);

// Delve's arguments and locals (api.Variable JSON, one array) at each hit of a breakpoint at each
// PC, in order.
using LineHits = std::map<uint64_t, std::vector<nlohmann::json>>;
LineHits run_delve_lines(const std::string &binary, const std::vector<LinePoint> &points, const Options &options,
                         Counts &counts);

// Compares each line event of the tracer (kind "line", by "pc", in order) with Delve's variables at
// the same hit of the same PC: every local both show must be equal. A local Delve reads that weave
// shows as unavailable is counted under "weave refuses it: REASON" (and in counts.refused); one
// weave does not list, under why. Mismatches name "PROBE pc PC hit N: NAME.FIELD".
void compare_line_hits(const LineHits &hits, const std::vector<LinePoint> &points,
                       const std::vector<nlohmann::json> &events, Counts &counts);

// A few lines: calls, values compared, skipped by reason, mismatches (the first `max_mismatches`).
std::string report(const Counts &counts, size_t max_mismatches = 40);

} // namespace delve_oracle
