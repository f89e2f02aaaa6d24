// GoType — the Go type model every stage after the binary readers speaks.
//
// Types live in a TypeTable and refer to each other by TypeId, so recursive types (a struct with a
// pointer to itself) need no ownership cycles. Sizes and alignments follow the Go spec for the
// binary's pointer size (see GO-ABI.md §1.3: base types align to their size capped at the pointer
// size, structs to their widest field, arrays to their element).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weave {

enum class TypeKind {
  Bool,
  Int,     // signed integers of every width (size tells which)
  Uint,    // unsigned integers of every width
  Uintptr,
  Float,   // float32 / float64
  Complex, // complex64 / complex128
  String,
  Slice,
  Array,
  Struct,
  Pointer,       // *T (elem = T, or -1 when unknown)
  UnsafePointer,
  Map,
  Chan,
  Func,
  Interface,
  Unsupported, // anything the model cannot describe; `name` says what it was
};

const char *kind_name(TypeKind kind);

// A type name as the user writes it, with each generic shape ("go.shape.int_0", Go 1.20+
// "go.shape.int"; "go.shape.interface { Error() string }_0") spelled as the underlying type it
// stands for: "[]go.shape.int_0" -> "[]int". Other names are returned unchanged.
std::string go_shape_spelling(const std::string &name);

using TypeId = int32_t;
constexpr TypeId kNoType = -1;

struct GoField {
  std::string name;
  uint64_t offset = 0;
  TypeId type = kNoType;
  bool embedded = false;
};

struct GoType {
  TypeKind kind = TypeKind::Unsupported;
  std::string name; // Go spelling: "int32", "*main.Request", "main.Header", "[]uint8"
  uint64_t size = 0;
  uint64_t align = 1;
  TypeId elem = kNoType;        // Pointer target, Slice/Array/Chan element, Map value
  TypeId key = kNoType;         // Map key
  uint64_t count = 0;           // Array length
  std::vector<GoField> fields;  // Struct fields in memory order
  bool empty_interface = false; // Interface: eface (interface{}) rather than iface
  // Map: the runtime header the map value points to, as the linker's DWARF describes it for this
  // key and value type: hash<K,V> (buckets, Go <= 1.23) or map<K,V> (swiss tables, Go 1.24+).
  // kNoType without DWARF or when the linker synthesized none.
  TypeId header = kNoType;
};

class TypeTable {
public:
  TypeId add(GoType type) {
    types_.push_back(std::move(type));
    return static_cast<TypeId>(types_.size() - 1);
  }
  GoType &at(TypeId id) { return types_.at(static_cast<size_t>(id)); }
  const GoType &at(TypeId id) const { return types_.at(static_cast<size_t>(id)); }
  size_t size() const { return types_.size(); }

private:
  std::vector<GoType> types_;
};

} // namespace weave
