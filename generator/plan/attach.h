// Attach points, one room of the plan stage: where in a function's code the probes go — the entry
// after the prologue's stack-growth check, and every RET (never a uretprobe) — as the file offsets
// the kernel attaches at, and the cookies that tell a shared program which event and point fired.
#pragma once

#include "common/diag.h"
#include "plan/plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weave {

struct BinaryImage;

// The entry point of `function` [low_pc, high_pc), then, with `returns`, every RET: none for a
// function that never returns (a loop with no way out) or only tail-calls, which the caller keeps
// with its entry alone. Cookies are left 0 until assign_event_ids. Throws UserError at `loc`:
// [undecodable-function], [bad-address].
std::vector<AttachPoint> function_attach_points(const BinaryImage &image, const std::string &function,
                                                uint64_t low_pc, uint64_t high_pc, bool returns,
                                                const SourceLoc &loc);

// Numbers every event (its index in the manifest is the probe_id its program writes) and gives each
// attach point its cookie. Throws UserError [too-many-returns] / [too-many-events].
void assign_event_ids(Plan &plan, const SourceLoc &spec_loc);

} // namespace weave
