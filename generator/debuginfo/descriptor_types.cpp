#include "debuginfo/descriptor_types.h"

#include "common/diag.h"

#include <fmt/format.h>

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
    type.header = map_header(desc, type.key, type.elem, table);
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

// The header a map value points to, as the DWARF of the same binary would describe it (the types
// debuginfo.cpp reads, named as the linker names them), for plan/captures.cpp's map_layout:
//  Go 1.16-1.23, runtime/map.go: hmap {count int; flags, B uint8; noverflow uint16; hash0 uint32;
//    buckets, oldbuckets unsafe.Pointer; nevacuate uintptr; extra *mapextra}, the same in every one
//    of these releases; its buckets are the maptype's bucket type.
//  Go 1.24-1.26, internal/runtime/maps: Map {used uint64; seed uintptr; dirPtr unsafe.Pointer;
//    dirLen int; globalDepth, globalShift, writing uint8; ...}, table {used, capacity, growthLeft
//    uint16; localDepth uint8; index int; groups groupsReference {data unsafe.Pointer; lengthMask
//    uint64}}, the same in the three releases; its groups are the maptype's group type.
// The offsets follow from the fields' sizes and alignments (a uint64 aligned to 4 on 386). The
// bucket or group type is the compiler's, read from its descriptor, and checked against the sizes
// the maptype records: a release outside these, a version not read from the build info, or any
// disagreement is no header (the map shows its len alone), never a guess.
TypeId DescriptorTypes::map_header(const TypeDescriptor &desc, TypeId key, TypeId elem, TypeTable &table) {
  map_refusal_.clear();
  auto refuse = [&](std::string why) {
    map_refusal_ = std::move(why);
    return kNoType;
  };
  const bool hmap = version_.major == 1 && version_.minor >= 16 && version_.minor <= 23;
  const bool swiss = version_.major == 1 && version_.minor >= 24 && version_.minor <= 26;
  if (!version_known_ || (!hmap && !swiss))
    return refuse(version_known_ ? fmt::format("no map layout is known for go{}.{}", version_.major, version_.minor)
                                 : "the binary's Go release is not in its build info");
  if (!desc.group)
    return refuse(fmt::format("the maptype of {} names no {} type", desc.name, hmap ? "bucket" : "group"));
  const uint64_t ps = ptr_;
  const TypeId group_id = convert(desc.group, table);
  const TypeId word = table.add(GoType{TypeKind::Uintptr, "uintptr", ps, ps});
  auto pointer_to = [&](TypeId to, const std::string &name) {
    GoType p{TypeKind::Pointer, name, ps, ps};
    p.elem = to;
    return table.add(p);
  };
  const GoType group = table.at(group_id); // a copy: the table grows below
  const GoType &k = table.at(key), &v = table.at(elem);
  auto field = [](const GoType &t, const char *name) -> const GoField * {
    for (const GoField &f : t.fields)
      if (f.name == name)
        return &f;
    return nullptr;
  };
  const std::string kv = fmt::format("{},{}", k.name, v.name);
  if (group.kind != TypeKind::Struct)
    return refuse(fmt::format("the {} type of {} is not a struct", hmap ? "bucket" : "group", desc.name));
  if (hmap) {
    // cmd/compile's bucket: {topbits [8]uint8; keys [8]K; elems [8]V; overflow}, bucketsize bytes.
    const GoField *top = field(group, "topbits"), *keys = field(group, "keys"), *elems = field(group, "elems"),
                  *overflow = field(group, "overflow");
    if (!top || !keys || !elems || !overflow || top->offset != 0 || keys->offset != 8 ||
        group.size != desc.group_size || desc.slot_key != k.size || desc.slot_value != v.size ||
        elems->offset != keys->offset + 8 * k.size || overflow->offset != elems->offset + 8 * v.size ||
        overflow->offset + ps != group.size)
      return refuse(fmt::format("the bucket type of {} is unlike its maptype's sizes (bucket {} bytes, "
                                "slots {} and {}) and 8 {} keys and 8 {} values",
                                desc.name, desc.group_size, desc.slot_key, desc.slot_value, k.name, v.name));
    GoType bucket{TypeKind::Struct, "bucket<" + kv + ">", group.size, ps};
    const TypeId bucket_id = table.add(bucket);
    const TypeId bucket_ptr = pointer_to(bucket_id, "*bucket<" + kv + ">");
    table.at(bucket_id).fields = {{"tophash", top->offset, top->type, false},
                                  {"keys", keys->offset, keys->type, false},
                                  {"values", elems->offset, elems->type, false},
                                  {"overflow", overflow->offset, bucket_ptr, false}};
    const TypeId byte = table.add(GoType{TypeKind::Uint, "uint8", 1, 1});
    const TypeId u16 = table.add(GoType{TypeKind::Uint, "uint16", 2, 2});
    const TypeId u32 = table.add(GoType{TypeKind::Uint, "uint32", 4, 4});
    const TypeId count = table.add(GoType{TypeKind::Int, "int", ps, ps});
    GoType header{TypeKind::Struct, "hash<" + kv + ">", ps + 8 + 4 * ps, ps};
    header.fields = {{"count", 0, count, false},
                     {"flags", ps, byte, false},
                     {"B", ps + 1, byte, false},
                     {"noverflow", ps + 2, u16, false},
                     {"hash0", ps + 4, u32, false},
                     {"buckets", ps + 8, bucket_ptr, false},
                     {"oldbuckets", 2 * ps + 8, bucket_ptr, false},
                     {"nevacuate", 3 * ps + 8, word, false},
                     {"extra", 4 * ps + 8, word, false}};
    return table.add(header);
  }
  // cmd/compile's group: {ctrl uint64; slots [8]struct {key K; elem V}}, GroupSize bytes, slots
  // of SlotSize bytes with elem at ElemOff.
  const GoField *ctrl = field(group, "ctrl"), *slots = field(group, "slots");
  const GoType *slot_array = slots ? &table.at(slots->type) : nullptr;
  const GoType *slot = slot_array && slot_array->kind == TypeKind::Array && slot_array->count == 8 &&
                               slot_array->elem != kNoType
                           ? &table.at(slot_array->elem)
                           : nullptr;
  const GoField *slot_key = slot ? field(*slot, "key") : nullptr, *slot_elem = slot ? field(*slot, "elem") : nullptr;
  if (!ctrl || ctrl->offset != 0 || !slot || !slot_key || !slot_elem || group.size != desc.group_size ||
      slot->size != desc.slot_size || slot_key->offset != 0 || slot_elem->offset != desc.elem_offset ||
      table.at(slot_key->type).size != k.size || table.at(slot_elem->type).size != v.size ||
      slots->offset + 8 * slot->size != group.size)
    return refuse(fmt::format("the group type of {} is unlike its maptype's sizes (group {} bytes, slot {} "
                              "with elem at {}) and 8 slots of {} key and {} elem",
                              desc.name, desc.group_size, desc.slot_size, desc.elem_offset, k.name, v.name));
  const TypeId group_ptr = pointer_to(group_id, "*group<" + kv + ">");
  const TypeId u64 = table.add(GoType{TypeKind::Uint, "uint64", 8, ps});
  GoType groups{TypeKind::Struct, "groupReference<" + kv + ">", ps + 8, ps};
  groups.fields = {{"data", 0, group_ptr, false}, {"lengthMask", ps, u64, false}};
  const TypeId groups_id = table.add(groups);
  const TypeId byte = table.add(GoType{TypeKind::Uint, "uint8", 1, 1});
  const TypeId u16 = table.add(GoType{TypeKind::Uint, "uint16", 2, 2});
  const TypeId count = table.add(GoType{TypeKind::Int, "int", ps, ps});
  GoType t{TypeKind::Struct, "table<" + kv + ">", 8 + ps + ps + 8, ps};
  t.fields = {{"used", 0, u16, false},
              {"capacity", 2, u16, false},
              {"growthLeft", 4, u16, false},
              {"localDepth", 6, byte, false},
              {"index", 8, count, false},
              {"groups", 8 + ps, groups_id, false}};
  const TypeId table_id = table.add(t);
  const TypeId table_ptr = pointer_to(table_id, "*table<" + kv + ">");
  const TypeId dir = pointer_to(table_ptr, "**table<" + kv + ">");
  GoType header{TypeKind::Struct, "map<" + kv + ">", 0, 8};
  header.fields = {{"used", 0, u64, false},
                   {"seed", 8, word, false},
                   {"dirPtr", 8 + ps, dir, false},
                   {"dirLen", 8 + 2 * ps, count, false},
                   {"globalDepth", 8 + 3 * ps, byte, false},
                   {"globalShift", 8 + 3 * ps + 1, byte, false},
                   {"writing", 8 + 3 * ps + 2, byte, false}};
  header.size = 8 + 3 * ps + 8;
  return table.add(header);
}

} // namespace weave
