// Stage 3 — debuginfo without DWARF: the Go type model built from the runtime's type descriptors
// (gobinary/typedesc.h), for binaries whose DWARF was stripped. The same GoType the DWARF reader
// builds, but for what descriptors do not record: a map has no header type (its len alone is read,
// as for any map without DWARF).
#pragma once

#include "debuginfo/gotypes.h"
#include "gobinary/typedesc.h"

#include <map>
#include <optional>
#include <string>

namespace weave {

class DescriptorTypes {
public:
  explicit DescriptorTypes(const Pclntab &pcln) : descriptors_(pcln), ptr_(static_cast<uint64_t>(pcln.ptr_size())) {}

  // The type named `name` (package paths in full: "net/http.Request", "main.Order",
  // "*net/url.URL"), converted into `table` with everything it refers to; nullopt when no
  // descriptor has that name. `why` then says so in words (and names a near miss when there is one).
  std::optional<TypeId> find(const std::string &name, TypeTable &table, std::string &why);

  // The descriptor at `address`, converted (for tests).
  TypeId convert(uint64_t address, TypeTable &table);

  TypeDescriptors &descriptors() { return descriptors_; }

private:
  TypeDescriptors descriptors_;
  uint64_t ptr_;
  const TypeTable *table_ = nullptr;
  std::map<uint64_t, TypeId> memo_; // descriptor -> its GoType in table_
  static constexpr int kMaxDepth = 1000;
  int depth_ = 0;
};

} // namespace weave
