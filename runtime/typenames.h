// TypeNames names the dynamic type of a captured interface value from the traced binary's own
// runtime type descriptors (gobinary/descriptor_names.h), read from the file on demand.
//
// The manifest says only where the descriptors lie; the names are read when an event first shows
// a type and cached per address, so the tracer's memory and start-up time grow with the types the
// program actually shows, not with the binary's type table (a Caddy has 25,000). The file is opened
// once, on the first lookup, and kept open; its build id must be the manifest's, else no type is
// named (each is shown as an unknown type with its address) and error() says why.
#pragma once

#include "gobinary/descriptor_names.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace weave {

struct TypeName {
  std::string name; // package paths in full: "*io/fs.PathError"
  uint8_t kind = 0; // reflect.Kind: 1 bool ... 26 unsafe.Pointer
  uint64_t size = 0;
};

class TypeNames {
public:
  // `binary`: the file the tracer attached to; `build_id`, `go_version`, `ptr_size`: the
  // manifest's target; [types, etypes): the manifest's type_descriptors (0, 0: none, nothing is named).
  TypeNames(std::string binary, std::string build_id, const std::string &go_version, int ptr_size,
            uint64_t types, uint64_t etypes);
  ~TypeNames();

  // The type whose descriptor a process that loaded the binary `bias` bytes from its link
  // addresses (a PIE's load bias, else 0) has at `address`; nullptr when it is not a descriptor of
  // this binary (a type reflect built at run time, a damaged value) or the binary cannot be read.
  const TypeName *at(uint64_t bias, uint64_t address);

  // Why no type can be named ("" while none has been looked up, or when they can).
  const std::string &error() const { return error_; }
  // Descriptors looked up so far, and 4 KiB blocks of the file read for them (measurements).
  size_t looked_up() const { return cache_.size(); }
  size_t blocks_read() const { return space_ ? space_->cached_blocks() : 0; }

private:
  bool open();
  bool try_open();
  static constexpr size_t kMaxCached = 1 << 16;

  std::string binary_, build_id_;
  DescriptorLayout layout_;
  bool opened_ = false;
  std::unique_ptr<FileDescriptorSpace> space_;
  std::string error_;
  std::unordered_map<uint64_t, std::optional<TypeName>> cache_;
};

} // namespace weave
