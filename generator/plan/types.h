// Go types a spec declares (for binaries without DWARF), turned into the GoType model with Go's
// sizes and alignments for the binary's pointer size.
#pragma once

#include "debuginfo/gotypes.h"
#include "spec/spec.h"

#include <functional>
#include <optional>
#include <string>

namespace weave {

// Resolves a name that is not a builtin ("net/http.Request", "main.Order") to a type of the binary,
// or says why it cannot (the reason ends the [unknown-type] error). Without one, such names are
// refused: named types need DWARF, type descriptors or a spelled-out struct.
using NamedTypeResolver = std::function<std::optional<TypeId>(const std::string &name, std::string &why)>;

// Adds `type` (and what it refers to) to `table`. Throws UserError [unknown-type] at the type's
// location for a name that is not a builtin and that `resolve` (when given) does not know.
TypeId build_declared_type(const TypeSpec &type, TypeTable &table, int ptr_size,
                           const NamedTypeResolver &resolve = nullptr);

} // namespace weave
