// `weave check`: compares freshly generated files with a checked-in output directory, so CI can
// tell when committed probes no longer match the binary they were generated for.
//
// Pure comparison: the caller regenerates (the same pipeline as `weave build`, in memory) and hands
// the files in; this module only reads the directory and reports. For probes.json the report is
// semantic (which probe, which attach offset, which capture moved); for the other text files it is
// a unified line diff.
#pragma once

#include "codegen/codegen.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weave {

// Exit codes of `weave check` (README "Checked in, built offline").
inline constexpr int kCheckClean = 0;       // every file is byte-identical
inline constexpr int kCheckDrift = 1;       // a file differs or is missing
inline constexpr int kCheckUsage = 2;       // bad command line
inline constexpr int kCheckCannotRegen = 3; // spec or binary error: nothing was compared
inline constexpr int kCheckInternal = 70;   // a bug in weave (as for every command)

// FileDrift is one file of the directory that does not match what weave generates now.
struct FileDrift {
  std::string name;               // relative to the directory: "probes.json"
  bool missing = false;           // absent (or unreadable) in the directory
  std::vector<std::string> lines; // the explanation, one line each (no trailing newlines)
};

struct CheckResult {
  std::string dir;
  std::vector<std::string> compared; // every file compared, in generate() order
  std::vector<FileDrift> drift;      // the ones that differ, same order
  std::vector<std::string> notes;    // said after the drift; not drift themselves
  bool clean() const { return drift.empty(); }
};

// Compares each generated text file with dir/<name>, byte for byte, and explains the differences.
// A `tracer` in the directory (optional: it is a build product) is checked too: its embedded
// manifest must be the regenerated probes.json. probes.bpf.o is not compared (that would need
// clang).
CheckResult check_output(const std::vector<GeneratedFile> &generated, const std::string &dir);

// The binary's path recorded in dir/probes.json (target.path), if it can be read. `weave check`
// regenerates with it: the path is where the tracer looks for the binary by default, not a
// property of the probes, so a tree checked out or checked elsewhere is not drift for it.
std::optional<std::string> checked_in_target_path(const std::string &dir);

// The note `weave check` prints when that path is not the one `weave build` would record here.
std::string target_path_note(const std::string &recorded, const std::string &here);

// The report printed by `weave check`: a summary line, then each drifted file's explanation.
std::string format_check_report(const CheckResult &result);

// Semantic differences between two manifests (checked-in → regenerated), one readable line each:
//   target build id X -> Y
//   probe main.(*Server).Handle: entry file offset 0xa3c80 -> 0xa3ca0
//   probe main.Nested: capture r.Header.Port: field offset 0 -> 8 (load 1 of 1)
//   probe main.Foo added
// Probes are matched by name, captures by expression, struct members by name, attach points by
// kind and position, so a reordered or inserted item is reported as such and not as a cascade.
// Keys this code does not know are still compared and named after their JSON key.
// Objects are walked in the order of their keys in the file (hence ordered_json).
std::vector<std::string> manifest_changes(const nlohmann::ordered_json &checked_in,
                                          const nlohmann::ordered_json &regenerated);

// A unified diff (diff -u style, `context` lines around each change) of two texts by lines,
// computed with Myers' O(ND) algorithm. Empty when the texts are equal. `max_lines` bounds the
// output (then a final "... N more diff lines" line).
std::string unified_diff(std::string_view old_text, std::string_view new_text,
                         const std::string &old_label, const std::string &new_label,
                         int context = 3, size_t max_lines = 400);

// Line edit script underlying unified_diff: for each line of the result, ' ' kept, '-' only in
// old, '+' only in new, with the line's index in old (for ' ' and '-') or new (for '+').
struct DiffLine {
  char op;
  size_t old_index;
  size_t new_index;
};
std::vector<DiffLine> diff_lines(const std::vector<std::string_view> &a,
                                 const std::vector<std::string_view> &b);

} // namespace weave
