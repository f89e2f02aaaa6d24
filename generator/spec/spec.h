// Stage 1 — spec: the probe specification a user writes, in YAML or JSON (same model).
//
//   probes:
//     - function: main.(*Server).Handle
//       capture: [req.Path, req.Header.Port, deadline, s.Name]
//   options: {string_max: 64}
//
// Every node keeps its source location so later stages can point at it. The document is validated
// against specs/weave.schema.json (embedded into weave at build time) before it is turned into a Spec.
#pragma once

#include "common/diag.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weave {

struct ParamSpec;

// TypeSpec is a Go type as a spec writes it: a type expression ("[]string", "*int64",
// "map[string]int"), or a struct, pointer, slice or array spelled out as a mapping, for binaries
// without DWARF to say what their parameters are.
struct TypeSpec {
  std::string expr;              // the type expression, when written as a string
  std::string form;              // "" (an expression), "struct", "pointer", "slice" or "array"
  std::vector<ParamSpec> fields; // struct
  std::vector<TypeSpec> elem;    // pointer, slice, array: exactly one
  uint64_t len = 0;              // array
  // struct: the named type this layout spells ("net/url.URL"), when the spec says: the layout is
  // then checked against the binary's own record of that type.
  std::string name;
  SourceLoc loc;
};

struct ParamSpec {
  std::string name;
  TypeSpec type;
  SourceLoc loc;
};

struct CaptureSpec {
  std::string expr; // exactly as written, e.g. "req.Header.Port"; also the output key
  SourceLoc loc;
  // Set by the plan for a map, slice or chan a condition compares with nil: its header word is
  // read too, as a hidden field "#nil" (a nil map and an empty one both have len 0).
  bool nil_word = false;
};

struct ProbeSpec {
  std::string name;     // "name:" if given, else the function name; unique within the spec
  std::string function; // exact Go symbol name
  SourceLoc loc;        // of the function name
  std::vector<CaptureSpec> captures;
  std::vector<std::string> exclude; // globs a wildcard `function` leaves out
  std::string when;                 // "when:": a condition on the entry's values, evaluated in BPF
  uint64_t events_per_second = 0;   // "limits: {events_per_second: N}": 0 for none
  SourceLoc when_loc;
  bool all_args = false;       // "args: all"
  SourceLoc all_args_loc;
  bool capture_return = false; // "return: true": results at every RET
  uint64_t min_duration_ns = 0; // "min_duration: 5ms": only calls at least this long (0: every call)
  SourceLoc min_duration_loc;
  // "when_return: 'err != nil'": a condition over the results (and the entry's values) decided at
  // the return; the entry waits in BPF until then, as with min_duration
  std::string when_return;
  SourceLoc when_return_loc;
  // "capture_at_return: [w.status]": read at the RET through pointers the entry saw
  std::vector<CaptureSpec> at_return;
  // "contents: true": each interface value the probe captures (an error, an any) is shown as a
  // value of its dynamic type, read only when the type word proves it is that type (plan/captures.cpp);
  // "contents_types: [T, ...]": types to read first, e.g. those an `any` holds that no itab names.
  bool contents = false;
  std::vector<std::string> contents_types;
  SourceLoc contents_loc;
  int stack = 0;               // "stack: N": frames of the call stack captured at entry
  // "stack_mode: fp|window": how the stack is captured ("" = the architecture's default: fp on
  // amd64/arm64, window on 386); "stack_bytes: N": the window's size (0 = default).
  std::string stack_mode;
  SourceLoc stack_mode_loc;
  uint32_t stack_bytes = 0;
  // "inlined: true|false": also probe the function's inlined copies. Unset: yes for a function
  // named exactly (every call of it), no for a wildcard (whose matches can have thousands).
  std::optional<bool> inlined;
  // "line: FILE:LINE": a source-line probe (FILE a path suffix) instead of a function's entry;
  // `function`, when also given, narrows the match to that function's code ("" otherwise).
  std::string line_file;
  int line = 0;
  SourceLoc line_loc;
  bool all_locals = false; // "locals: all"
  SourceLoc all_locals_loc;
  bool has_params = false;     // "params:" given (possibly empty)
  std::vector<ParamSpec> params;
  bool has_results = false;
  std::vector<ParamSpec> results;
};

struct SpecOptions {
  int string_max = 64; // bytes copied from each string (1..4096)
  int slice_max = 8;   // elements copied from each slice or array (1..64)
  int max_functions = 1000; // most functions one wildcard may match
  uint64_t events_per_second = 0; // "limits:" over all probes together: 0 for none
  uint64_t ring_size = 0; // bytes of the events ring buffer (a power of two); 0: the tracer's default
};

struct Spec {
  std::string path; // as given on the command line
  std::vector<ProbeSpec> probes;
  SpecOptions options;
};

// Parses and validates a spec file. The format is chosen by content, not by name: JSON is parsed by
// the same YAML parser (JSON is YAML's flow style), so both keep line:column for every node.
// Throws UserError ([spec-syntax], [spec-schema], [duplicate-probe], [spec-unreadable],
// [spec-too-large]).
Spec parse_spec_file(const std::string &path);

// The largest spec weave reads: 1 MiB is some ten thousand probes, far past any real spec, and
// bounds what a mistaken path (/dev/zero, a log file) costs. Only regular files are read.
inline constexpr size_t kMaxSpecBytes = 1 << 20;

// The same from text already in memory; `path` is only used in locations.
Spec parse_spec_text(const std::string &text, const std::string &path);

// A duration as specs write it: a decimal number and a unit, "500us", "5ms", "1.5s", "250ns" (also
// "µs"), in nanoseconds; nullopt when it is not one, or not a whole number of nanoseconds above 0.
std::optional<uint64_t> parse_duration(const std::string &text);

// Deterministic dump for `weave build --dump=spec`.
std::string dump_spec(const Spec &spec);

} // namespace weave
