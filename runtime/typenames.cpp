#include "typenames.h"

#include "gobinary/elf_notes.h"

#include <fmt/format.h>

namespace weave {

TypeNames::TypeNames(std::string binary, std::string build_id, const std::string &go_version, int ptr_size,
                     uint64_t types, uint64_t etypes)
    : binary_(std::move(binary)), build_id_(std::move(build_id)) {
  layout_.types = types;
  layout_.etypes = etypes;
  layout_.ptr_size = ptr_size;
  layout_.version = parse_go_version(go_version);
}

TypeNames::~TypeNames() = default;

bool TypeNames::open() {
  opened_ = true;
  if (!try_open())
    fmt::print(stderr, "weave: interface values will show their type's address: {}\n", error_);
  return space_ != nullptr;
}

bool TypeNames::try_open() {
  if (!layout_.types || layout_.etypes <= layout_.types) {
    error_ = "the manifest does not say where the binary's type descriptors are";
    return false;
  }
  std::string error;
  space_ = FileDescriptorSpace::open(binary_, error);
  if (!space_) {
    error_ = error;
    return false;
  }
  // The build id of the very file this reads (through its descriptor: a path replaced since the
  // tracer attached names another file).
  std::string id = read_build_id_file(fmt::format("/proc/self/fd/{}", space_->fd()), error);
  if (id != build_id_) {
    error_ = fmt::format("{} has build id {}, not the manifest's {}: its type descriptors are not the ones the "
                         "probes were planned with",
                         binary_, id.empty() ? "(none: " + error + ")" : id, build_id_);
    space_.reset();
    return false;
  }
  if (space_->ptr_size() != layout_.ptr_size) {
    error_ = fmt::format("{} has {}-byte pointers, the manifest says {}", binary_, space_->ptr_size(),
                         layout_.ptr_size);
    space_.reset();
    return false;
  }
  return true;
}

const TypeName *TypeNames::at(uint64_t bias, uint64_t address) {
  if (address < bias)
    return nullptr;
  if (!opened_)
    open();
  if (!space_)
    return nullptr;
  uint64_t vaddr = address - bias;
  auto it = cache_.find(vaddr);
  if (it == cache_.end()) {
    std::optional<TypeName> named;
    if (auto d = name_descriptor(*space_, layout_, vaddr))
      named = TypeName{std::move(d->name), d->kind, d->size};
    // A damaged value can point anywhere: past this many distinct addresses, misses are not kept.
    if (!named && cache_.size() >= kMaxCached)
      return nullptr;
    it = cache_.emplace(vaddr, std::move(named)).first;
  }
  return it->second ? &*it->second : nullptr;
}

} // namespace weave
