#include "debuginfo/descriptor_types.h"

#include "common/diag.h"

#include <algorithm>

namespace weave {

TypeId DescriptorTypes::convert(uint64_t address, TypeTable &table) {
  if (table_ != &table) {
    memo_.clear();
    table_ = &table;
  }
  if (auto it = memo_.find(address); it != memo_.end())
    return it->second;
  const TypeDescriptor *d = descriptors_.at(address);
  GoType type;
  // Every level is a C++ frame: a crafted chain of thousands of distinct descriptors must end in an
  // unsupported type, not a stack overflow (Go's own types nest a few dozen deep).
  if (!d || depth_ >= kMaxDepth) {
    type.name = d ? d->name + " (nested too deep)" : "<no type descriptor at " + std::to_string(address) + ">";
    TypeId id = table.add(type);
    if (!d) // too deep here may be shallow elsewhere: not remembered
      memo_[address] = id;
    return id;
  }
  // The id first, so that a type reached again through its own fields (a linked list) refers to it.
  const TypeId id = table.add(GoType{});
  memo_[address] = id;
  ++depth_;
  struct Leave {
    int &depth;
    ~Leave() { --depth; }
  } leave{depth_};
  // Copies: converting an element adds types and may move the descriptor map's nodes (it does not:
  // std::map nodes are stable), but the table's storage does move.
  const TypeDescriptor desc = *d;
  type.name = go_shape_spelling(desc.name); // as the DWARF reader spells shapes: the type they stand for
  type.size = desc.size;
  type.align = std::clamp<uint64_t>(desc.field_align, 1, ptr_);
  auto scalar = [&](TypeKind kind) { type.kind = kind; };
  switch (desc.kind) {
  case GoKind::Bool:
    scalar(TypeKind::Bool);
    break;
  case GoKind::Int:
  case GoKind::Int8:
  case GoKind::Int16:
  case GoKind::Int32:
  case GoKind::Int64:
    scalar(TypeKind::Int);
    break;
  case GoKind::Uint:
  case GoKind::Uint8:
  case GoKind::Uint16:
  case GoKind::Uint32:
  case GoKind::Uint64:
    scalar(TypeKind::Uint);
    break;
  case GoKind::Uintptr:
    scalar(TypeKind::Uintptr);
    break;
  case GoKind::Float32:
  case GoKind::Float64:
    scalar(TypeKind::Float);
    break;
  case GoKind::Complex64:
  case GoKind::Complex128:
    scalar(TypeKind::Complex);
    break;
  case GoKind::String:
    type.kind = TypeKind::String;
    break;
  case GoKind::UnsafePointer:
    type.kind = TypeKind::UnsafePointer;
    break;
  case GoKind::Pointer:
    type.kind = TypeKind::Pointer;
    type.elem = convert(desc.elem, table);
    break;
  case GoKind::Slice:
    type.kind = TypeKind::Slice;
    type.elem = convert(desc.elem, table);
    break;
  case GoKind::Array:
    type.kind = TypeKind::Array;
    type.elem = convert(desc.elem, table);
    type.count = desc.len;
    break;
  case GoKind::Chan:
    type.kind = TypeKind::Chan;
    type.elem = convert(desc.elem, table);
    break;
  case GoKind::Map:
    type.kind = TypeKind::Map;
    type.key = convert(desc.key, table);
    type.elem = convert(desc.elem, table);
    break;
  case GoKind::Func:
    type.kind = TypeKind::Func;
    break;
  case GoKind::Interface:
    type.kind = TypeKind::Interface;
    type.empty_interface = desc.interface_methods == 0;
    break;
  case GoKind::Struct:
    type.kind = TypeKind::Struct;
    for (const TypeDescriptor::Field &f : desc.fields)
      type.fields.push_back({f.name, f.offset, convert(f.type, table), f.embedded});
    break;
  case GoKind::Invalid:
    break;
  }
  table.at(id) = std::move(type);
  return id;
}

std::optional<TypeId> DescriptorTypes::find(const std::string &name, TypeTable &table, std::string &why) {
  if (const TypeDescriptor *d = descriptors_.find(name))
    return convert(d->address, table);
  // The linker's spelling of a path element with dots ("v1%2e0%2e0", as symbol and DWARF names
  // write it) is the runtime's "v1.0.0".
  if (name.find("%2e") != std::string::npos) {
    std::string plain = name;
    for (size_t at; (at = plain.find("%2e")) != std::string::npos;)
      plain.replace(at, 3, ".");
    if (const TypeDescriptor *d = descriptors_.find(plain))
      return convert(d->address, table);
  }
  if (descriptors_.ambiguous(name)) {
    why = "several types are named " + name + " (types local to different functions): declare its layout";
    return std::nullopt;
  }
  if (!descriptors_.census().located) {
    why = "the binary's type descriptors were not found (moduledata.typelinks), so weave cannot know its layout";
    return std::nullopt;
  }
  why = "the binary has no type descriptor named " + name +
        " (the compiler writes one only for types the program converts to an interface, or reaches from one), "
        "so without DWARF weave cannot know its layout";
  std::string hint = did_you_mean(name, descriptors_.names());
  if (!hint.empty())
    why += " (" + hint + ")";
  return std::nullopt;
}

} // namespace weave
