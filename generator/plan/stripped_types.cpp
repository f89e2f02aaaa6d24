#include "plan/stripped_types.h"

#include "debuginfo/descriptor_types.h"

namespace weave {

NamedTypeResolver descriptor_resolver(const SignatureSources &sources) {
  if (sources.debug || !sources.descriptors)
    return nullptr;
  DescriptorTypes *descriptors = sources.descriptors;
  TypeTable *types = &sources.types;
  return [descriptors, types](const std::string &name, std::string &why) {
    return descriptors->find(name, *types, why);
  };
}

} // namespace weave

#include "common/diag.h"

#include <fmt/format.h>

namespace weave {

namespace {

std::string shape(const GoType &t) { return fmt::format("{} ({} bytes)", t.name, t.size); }

} // namespace

void check_declared_layout(const TypeSpec &spec, const GoType &declared, const TypeTable &table,
                           const NamedTypeResolver &resolve) {
  std::string why;
  // The resolver may add types to the table; `declared` is not in it yet, and `table` is only read.
  auto actual_id = resolve(spec.name, why);
  if (!actual_id)
    throw UserError("unknown-type", fmt::format("the layout declared for {}: {}", spec.name, why), spec.loc);
  const GoType &actual = table.at(*actual_id);
  if (actual.kind != TypeKind::Struct)
    throw UserError("layout-mismatch",
                    fmt::format("{} is a {} in {}, not a struct", spec.name, kind_name(actual.kind), "the binary"),
                    spec.loc);
  for (size_t i = 0; i < declared.fields.size(); ++i) {
    const GoField &d = declared.fields[i];
    const SourceLoc &loc = spec.fields[i].loc;
    const GoField *a = nullptr;
    for (const GoField &f : actual.fields)
      if (f.name == d.name)
        a = &f;
    if (!a) {
      std::vector<std::string> names;
      for (const GoField &f : actual.fields)
        names.push_back(f.name);
      throw UserError("layout-mismatch", fmt::format("{} has no field {} in the binary", spec.name, d.name), loc,
                      did_you_mean(d.name, names));
    }
    const GoType &dt = table.at(d.type), &at = table.at(a->type);
    if (a->offset != d.offset)
      throw UserError("layout-mismatch",
                      fmt::format("field {} of {} is at offset {} in the binary, at {} as declared", d.name,
                                  spec.name, a->offset, d.offset),
                      loc, "declare the fields in the binary's order, padding included");
    if (at.kind != dt.kind || at.size != dt.size)
      throw UserError("layout-mismatch",
                      fmt::format("field {} of {} is a {} in the binary, declared {}", d.name, spec.name, shape(at),
                                  shape(dt)),
                      loc);
  }
}

} // namespace weave
