// The runtime's view of templates/weave_event.h, the event layout shared with the BPF programs.
#pragma once

#include <cstdint>
#include <linux/types.h>

// weave_event.h is C and checks its layout with C11's _Static_assert, which is not C++.
#define _Static_assert static_assert
extern "C" {
#include "templates/weave_event.h"
}
#undef _Static_assert

namespace weave {

// The manifest format this tracer reads (probes.json "format").
inline constexpr uint64_t kManifestFormat = 1;

inline constexpr uint32_t kEventHeaderSize = sizeof(struct weave_event_header);
static_assert(kEventHeaderSize == 64, "weave_event_header layout changed");

} // namespace weave
