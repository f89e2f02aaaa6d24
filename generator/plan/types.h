// Go types a spec declares (for binaries without DWARF), turned into the GoType model with Go's
// sizes and alignments for the binary's pointer size.
#pragma once

#include "debuginfo/gotypes.h"
#include "spec/spec.h"

namespace weave {

// Adds `type` (and what it refers to) to `table`. Throws UserError [unknown-type] at the type's
// location for a name that is not a builtin (named types need DWARF or a spelled-out struct).
TypeId build_declared_type(const TypeSpec &type, TypeTable &table, int ptr_size);

} // namespace weave
