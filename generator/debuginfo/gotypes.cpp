#include "debuginfo/gotypes.h"

namespace weave {

const char *kind_name(TypeKind kind) {
  switch (kind) {
  case TypeKind::Bool:
    return "bool";
  case TypeKind::Int:
    return "int";
  case TypeKind::Uint:
    return "uint";
  case TypeKind::Uintptr:
    return "uintptr";
  case TypeKind::Float:
    return "float";
  case TypeKind::Complex:
    return "complex";
  case TypeKind::String:
    return "string";
  case TypeKind::Slice:
    return "slice";
  case TypeKind::Array:
    return "array";
  case TypeKind::Struct:
    return "struct";
  case TypeKind::Pointer:
    return "pointer";
  case TypeKind::UnsafePointer:
    return "unsafe.Pointer";
  case TypeKind::Map:
    return "map";
  case TypeKind::Chan:
    return "chan";
  case TypeKind::Func:
    return "func";
  case TypeKind::Interface:
    return "interface";
  case TypeKind::Unsupported:
    return "unsupported";
  }
  return "unknown";
}

} // namespace weave
