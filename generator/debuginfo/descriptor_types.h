// Stage 3 — debuginfo without DWARF: the Go type model built from the runtime's type descriptors
// (gobinary/typedesc.h), for binaries whose DWARF was stripped. The same GoType the DWARF reader
// builds. A map's header, which DWARF describes in types the linker synthesizes, is synthesized here
// from the runtime's layout of each release and the bucket or group type its maptype names
// (map_header below), so that the same walk reads its pairs.
#pragma once

#include "debuginfo/gotypes.h"
#include "gobinary/typedesc.h"

#include <map>
#include <optional>
#include <string>

namespace weave {

class DescriptorTypes {
public:
  explicit DescriptorTypes(const Pclntab &pcln)
      : descriptors_(pcln), ptr_(static_cast<uint64_t>(pcln.ptr_size())), version_(pcln.go_version()),
        version_known_(pcln.go_version_known()) {}

  // The type named `name` (package paths in full: "net/http.Request", "main.Order",
  // "*net/url.URL"), converted into `table` with everything it refers to; nullopt when no
  // descriptor has that name. `why` then says so in words (and names a near miss when there is one).
  std::optional<TypeId> find(const std::string &name, TypeTable &table, std::string &why);

  // The descriptor at `address`, converted (for tests).
  TypeId convert(uint64_t address, TypeTable &table);

  TypeDescriptors &descriptors() { return descriptors_; }

  // Why the last map converted has no header (kNoType), in words; empty when it has one.
  const std::string &map_refusal() const { return map_refusal_; }

private:
  TypeId map_header(const TypeDescriptor &desc, TypeId key, TypeId elem, TypeTable &table);

  TypeDescriptors descriptors_;
  uint64_t ptr_;
  GoVersion version_;
  bool version_known_;
  std::string map_refusal_;
  const TypeTable *table_ = nullptr;
  std::map<uint64_t, TypeId> memo_; // descriptor -> its GoType in table_
  static constexpr int kMaxDepth = 1000;
  int depth_ = 0;
};

} // namespace weave
