// Program sharing, one room of the plan stage: events whose BPF programs would be the same code
// share one program (and one uprobe_multi link), told apart at run time by their attach points'
// cookies.
#pragma once

#include "plan/plan.h"

namespace weave {

// Fills plan.programs and points every event at its program and record struct.
void share_programs(Plan &plan);

} // namespace weave
