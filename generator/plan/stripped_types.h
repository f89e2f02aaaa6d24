// Named types in the declarations of a binary without DWARF: resolved from the runtime's type
// descriptors (debuginfo/descriptor_types.h), so a stripped binary's `*net/http.Request` needs no
// layout spelled out, and a name with no descriptor is refused by name.
#pragma once

#include "plan/signature.h"
#include "plan/types.h"

namespace weave {

// The resolver build_declared_type uses for `sources`: descriptors when the binary has no DWARF
// and sources.descriptors is set, else none (DWARF binaries resolve names from DWARF).
NamedTypeResolver descriptor_resolver(const SignatureSources &sources);

} // namespace weave

namespace weave {

// A struct layout the spec spells for a named type ({name: net/url.URL, struct: [...]}), checked
// field by field against the type `resolve` finds under that name: every declared field must exist
// there, at the declared offset, with the same kind and size (a prefix of the fields may be
// declared). Throws UserError [layout-mismatch] at the first field that differs, saying how in one
// line, and [unknown-type] when the name resolves to nothing.
void check_declared_layout(const TypeSpec &spec, const GoType &declared, const TypeTable &table,
                           const NamedTypeResolver &resolve);

} // namespace weave
