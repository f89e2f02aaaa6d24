// Source-line probes, one room of the plan stage: "line: FILE:LINE" becomes one probe per
// statement PC the line maps to (DWARF's line table, copies inlined into other functions
// included), each an entry-kind event attached at that PC whose values are the locals and
// parameters in scope there, read where DWARF's location lists put them at that PC and only
// there. A value DWARF does not locate soundly is unavailable with the reason, never guessed.
#pragma once

#include "debuginfo/locations.h"
#include "plan/captures.h"
#include "plan/plan.h"
#include "spec/spec.h"

#include <string>
#include <vector>

namespace weave {

class DebugInfo;
class Pclntab;
struct BinaryImage;

// Where each value of `site` is at its PC, by name ("i" -> "RBX", "s" -> "unavailable: ..."),
// in scope order; for listings.
struct LineValue {
  std::string name;
  std::string type;
  std::string where; // describe_inlined_value(): "RBX", "SP+40", "unavailable: why"
};

// One probe per PC of the line `spec` names (spec.line_file, spec.line), ids from `first_id` on.
// Throws UserError: [unknown-line-file] no file matches, [ambiguous-line-file] more than one does
// (the hint lists them), [no-code-at-line], [not-in-scope] a captured variable in scope at none of
// the PCs, [line-probe-option] a key a line probe does not take. Without DWARF (`debug` null) the
// PCs come from .gopclntab's pcfile/pcln tables and no value is read: [no-dwarf-locals] for a
// capture: or when:, and one warning that says so.
std::vector<ProbePlan> plan_line_probes(const ProbeSpec &spec, const std::string &dwarf_file, DebugInfo *debug,
                                        const BinaryImage &image, const Pclntab *pcln,
                                        const CaptureContext &context, const std::string &abi, int first_id,
                                        size_t max_sites, std::vector<std::string> &warnings);

// The sites of FILE:LINE (narrowed to `function` when not empty) with where each local is at
// each: for `weave funcs --line`. Without DWARF (`debug` null) the PCs from .gopclntab, with no
// values. Throws like plan_line_probes.
struct LineListing {
  LineSite site;
  std::vector<LineValue> values;
};
std::vector<LineListing> list_line_sites(const std::string &file, int line, const std::string &function,
                                         const std::string &dwarf_file, DebugInfo *debug, const BinaryImage &image,
                                         const Pclntab *pcln, TypeTable &types);

} // namespace weave
