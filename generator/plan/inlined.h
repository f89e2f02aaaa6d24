// Inlined copies, one room of the plan stage: the calls the compiler replaced by a copy of the
// callee's body. Each copy becomes a probe of its own: an entry event at the copy's first
// instruction (from .gopclntab's inline tree, so stripped binaries are counted too), named after
// the function and call site it was inlined into, whose parameters are read where DWARF's location
// lists put them at that instruction, and only there.
#pragma once

#include "gobinary/pclntab.h"
#include "debuginfo/locations.h"
#include "plan/captures.h"
#include "plan/plan.h"
#include "spec/spec.h"

#include <string>
#include <vector>

namespace weave {

class DebugInfo;
struct BinaryImage;

// The inlined copies of one function, as both sources describe them.
struct InlinedCopies {
  std::vector<Pclntab::InlinedCopy> copies;          // every copy, by first PC
  std::vector<const InlinedCopyLocations *> dwarf;   // DWARF's copy at the same place, or null (parallel)
};

// The value of parameter `param` at an inlined copy's first instruction `pc`, or why it is not
// available there: DWARF's location at pc, pieces matched to the type's scalar parts, stack slots
// turned from the CFA into SP offsets with the SP delta .gopclntab records at pc.
// `at_line`: the value of a local at a source-line probe's PC (reasons then say "this PC").
// Pieces whose sizes do not add up to the value's are refused with how much they cover.
NamedValue inlined_value(const InlinedCopyLocations::Param &param, TypeId type, const TypeTable &types,
                         const BinaryImage &image, int64_t sp_delta, bool at_line = false);

// Where `value` is read from, for listings: "RBX", "SP+40", "RAX,SP+16", or "unavailable: why".
std::string describe_inlined_value(const NamedValue &value);

// when: on an event read where DWARF may not locate every value (an inlined copy's first
// instruction, a source line's PC): false, and nothing attached, when the condition reads a value
// that is unavailable there and so cannot be decided; else the condition is resolved against the
// event's captures and attached.
bool attach_located_filter(EventPlan &event, const PredicateNode &filter, const ProbeSpec &spec);

// One probe per copy (entry events only), ids from `first_id` on; `abi` is the ABI of Go code in
// this binary (where the copy finds g). More than `max_copies` copies (options.max_functions) is
// UserError [too-many-copies]: each is an uprobe of its own. `declared` is the function's
// parameter list from the spec or DWARF's abstract origin (names and types, no locations); empty
// when unknown (stripped: calls are counted, no values). Warnings say what copies cannot do.
std::vector<ProbePlan> plan_inlined_probes(const ProbeSpec &spec, const std::string &function,
                                           const InlinedCopies &copies, DebugInfo *debug,
                                           const BinaryImage &image, const Pclntab &pcln,
                                           const CaptureContext &context, const std::string &abi,
                                           int first_id, size_t max_copies, std::vector<std::string> &warnings);

} // namespace weave
