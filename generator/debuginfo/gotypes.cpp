#include "debuginfo/gotypes.h"

#include <string>
#include <string_view>

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

namespace weave {

std::string go_shape_spelling(const std::string &name) {
  static constexpr std::string_view kShape = "go.shape.";
  if (name.find(kShape) == std::string::npos)
    return name;
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    size_t at = name.find(kShape, i);
    if (at == std::string::npos) {
      out.append(name, i, std::string::npos);
      break;
    }
    out.append(name, i, at - i);
    // The shape's type runs to the ',' or ']' that closes the list it sits in (or the end).
    size_t start = at + kShape.size(), end = start;
    int depth = 0;
    for (; end < name.size(); ++end) {
      char c = name[end];
      if (c == '[' || c == '(' || c == '{')
        ++depth;
      else if ((c == ']' || c == ')' || c == '}') && depth > 0)
        --depth;
      else if (depth == 0 && (c == ',' || c == ']' || c == ')'))
        break;
    }
    std::string_view type(name.data() + start, end - start);
    // Go 1.18-1.20 number the shapes of a function: "_0", "_1".
    size_t underscore = type.rfind('_');
    if (underscore != std::string_view::npos && underscore + 1 < type.size() &&
        type.find_first_not_of("0123456789", underscore + 1) == std::string_view::npos)
      type = type.substr(0, underscore);
    out.append(type);
    i = end;
  }
  return out;
}

} // namespace weave
