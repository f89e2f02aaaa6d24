// Go types a spec declares (for binaries without DWARF), turned into the GoType model with Go's
// sizes and alignments for the binary's pointer size.
#pragma once

#include "debuginfo/gotypes.h"
#include "spec/spec.h"

namespace weave {

class DebugInfo;

// Adds `type` (and what it refers to) to `table`. A named type ("*net/url.URL",
// "github.com/org/pkg.T", "main.Pair[string,int64]") is looked up in `debug`, whose type table
// `table` must then be. Throws UserError [unknown-type] at the type's location for a name that is
// neither a builtin nor, with DWARF, one of the binary's types.
TypeId build_declared_type(const TypeSpec &type, TypeTable &table, int ptr_size, DebugInfo *debug = nullptr);

} // namespace weave
