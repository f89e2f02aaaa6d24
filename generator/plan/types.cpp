#include "plan/types.h"

#include "debuginfo/debuginfo.h"
#include "debuginfo/typename.h"
#include "plan/stripped_types.h"

#include <fmt/format.h>

#include <cctype>
#include <map>

namespace weave {

namespace {

// The size of [count]elem, or a located error when no Go value can be that large: the compiler
// refuses types past the address space (cmd/compile types.MaxWidth), and a product that wrapped
// around would place every later parameter in the wrong register.
uint64_t array_size(uint64_t count, uint64_t elem_size, uint64_t ptr_size, const SourceLoc &loc) {
  const uint64_t limit = ptr_size == 8 ? uint64_t(1) << 50 : (uint64_t(1) << 31) - 1;
  if (elem_size != 0 && count > limit / elem_size)
    throw UserError("type-too-large",
                    fmt::format("an array of {} elements of {} bytes is larger than any Go value can be ({} bytes "
                                "at most with {}-byte pointers)",
                                count, elem_size, limit, ptr_size),
                    loc);
  if (elem_size == 0 && count > limit)
    throw UserError("type-too-large", fmt::format("an array of {} elements is longer than Go allows", count), loc);
  return count * elem_size;
}

uint64_t align_up(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

// TypeParser reads a Go type expression: *T, []T, [N]T, map[K]V, chan T, func(...) ..., and the
// builtin names. It is the small part of Go's type grammar a parameter list needs.
class TypeParser {
public:
  TypeParser(const std::string &text, TypeTable &table, int ptr_size, SourceLoc loc,
             const NamedTypeResolver &resolve)
      : text_(text), table_(table), ptr_(static_cast<uint64_t>(ptr_size)), loc_(std::move(loc)), resolve_(resolve) {}

  TypeId parse_all() {
    TypeId id = parse();
    skip_spaces();
    if (pos_ != text_.size())
      fail(fmt::format("unexpected \"{}\"", text_.substr(pos_)));
    return id;
  }

private:
  [[noreturn]] void fail(const std::string &what) {
    std::string shown = text_.size() > 80 ? text_.substr(0, 60) + "..." : text_;
    throw UserError("unknown-type", fmt::format("type \"{}\": {}", shown, what), loc_,
                    "builtin types (int64, string, bool, float64, uintptr, unsafe.Pointer, ...), "
                    "*T, []T, [N]T, map[K]V, chan T, any and error can be named; spell a struct as "
                    "{struct: [{name: X, type: T}, ...]}");
  }
  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ')
      ++pos_;
  }
  bool take(const std::string &token) {
    skip_spaces();
    if (text_.compare(pos_, token.size(), token) != 0)
      return false;
    pos_ += token.size();
    return true;
  }
  TypeId add(TypeKind kind, std::string name, uint64_t size, uint64_t align, TypeId elem = kNoType) {
    GoType t{kind, std::move(name), size, align};
    t.elem = elem;
    return table_.add(t);
  }

  TypeId parse() {
    // Every level is a C++ frame: a pasted "****...int" thousands deep must be an error, not a
    // stack overflow. Go's own types in practice nest a handful deep.
    if (++depth_ > kMaxDepth)
      fail(fmt::format("the type nests more than {} levels deep", kMaxDepth));
    struct Leave {
      int &depth;
      ~Leave() { --depth; }
    } leave{depth_};
    skip_spaces();
    if (take("*")) {
      TypeId elem = parse();
      return add(TypeKind::Pointer, "*" + table_.at(elem).name, ptr_, ptr_, elem);
    }
    if (take("[]")) {
      TypeId elem = parse();
      return add(TypeKind::Slice, "[]" + table_.at(elem).name, 3 * ptr_, ptr_, elem);
    }
    if (take("[")) {
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        ++pos_;
      if (start == pos_ || !take("]"))
        fail("expected [N]T with a length N");
      std::string digits = text_.substr(start, pos_ - start - 1);
      uint64_t count = digits.size() > 19 ? UINT64_MAX : std::stoull(digits);
      TypeId elem = parse();
      const GoType &e = table_.at(elem);
      GoType t{TypeKind::Array, fmt::format("[{}]{}", count, e.name), array_size(count, e.size, ptr_, loc_), e.align};
      t.elem = elem;
      t.count = count;
      return table_.add(t);
    }
    if (take("map[")) {
      TypeId key = parse();
      if (!take("]"))
        fail("expected ] after the map's key type");
      TypeId value = parse();
      GoType t{TypeKind::Map, fmt::format("map[{}]{}", table_.at(key).name, table_.at(value).name), ptr_, ptr_};
      t.key = key;
      t.elem = value;
      // The binary's own map type of that name, when the resolver knows one (its descriptor, in a
      // binary without DWARF), brings the header its pairs are walked through; its key and value
      // must be laid out as declared. Else the map is what was declared: its len alone.
      if (resolve_) {
        std::string why;
        if (auto id = resolve_(t.name, why)) {
          const GoType &found = table_.at(*id);
          if (found.kind == TypeKind::Map && found.header != kNoType && found.key != kNoType &&
              found.elem != kNoType && table_.at(found.key).size == table_.at(key).size &&
              table_.at(found.elem).size == table_.at(value).size)
            return *id;
        }
      }
      return table_.add(t);
    }
    for (const char *prefix : {"chan<- ", "<-chan ", "chan "})
      if (take(prefix)) {
        TypeId elem = parse();
        return add(TypeKind::Chan, prefix + table_.at(elem).name, ptr_, ptr_, elem);
      }
    if (text_.compare(pos_, 5, "func(") == 0) {
      std::string name = text_.substr(pos_); // a func value is one pointer, whatever its signature
      pos_ = text_.size();
      return add(TypeKind::Func, name, ptr_, ptr_);
    }
    if (take("interface {}") || take("interface{}") || take("any")) {
      GoType t{TypeKind::Interface, "interface {}", 2 * ptr_, ptr_};
      t.empty_interface = true;
      return table_.add(t);
    }
    size_t start = pos_;
    // A name runs on through its package path ("github.com/org/pkg.T"), whether or not a resolver
    // can look it up: an error names it whole.
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.' ||
                                   text_[pos_] == '_' || text_[pos_] == '/' || text_[pos_] == '-' || text_[pos_] == '%'))
      ++pos_;
    if (pos_ < text_.size() && pos_ > start && text_[pos_] == '[')
      skip_type_arguments(); // an instantiation: "main.Pair[int,string]"
    std::string name = text_.substr(start, pos_ - start);
    if (name.empty())
      fail("expected a type");
    struct Builtin {
      TypeKind kind;
      uint64_t size; // 0: pointer-sized
    };
    static const std::map<std::string, Builtin> builtins = {
        {"bool", {TypeKind::Bool, 1}},          {"int", {TypeKind::Int, 0}},
        {"int8", {TypeKind::Int, 1}},           {"int16", {TypeKind::Int, 2}},
        {"int32", {TypeKind::Int, 4}},          {"rune", {TypeKind::Int, 4}},
        {"int64", {TypeKind::Int, 8}},          {"uint", {TypeKind::Uint, 0}},
        {"uint8", {TypeKind::Uint, 1}},         {"byte", {TypeKind::Uint, 1}},
        {"uint16", {TypeKind::Uint, 2}},        {"uint32", {TypeKind::Uint, 4}},
        {"uint64", {TypeKind::Uint, 8}},        {"uintptr", {TypeKind::Uintptr, 0}},
        {"float32", {TypeKind::Float, 4}},      {"float64", {TypeKind::Float, 8}},
        {"complex64", {TypeKind::Complex, 8}},  {"complex128", {TypeKind::Complex, 16}},
        {"string", {TypeKind::String, 0}},      {"unsafe.Pointer", {TypeKind::UnsafePointer, 0}},
        {"error", {TypeKind::Interface, 0}},
    };
    auto it = builtins.find(name);
    if (it == builtins.end() && resolve_) {
      std::string why;
      if (auto id = resolve_(name, why))
        return *id;
      fail(why);
    }
    if (it == builtins.end())
      fail(fmt::format("{} is not a builtin type, and without DWARF weave cannot know its layout", name));
    Builtin b = it->second;
    std::string go_name = name == "byte" ? "uint8" : name == "rune" ? "int32" : name;
    switch (b.kind) {
    case TypeKind::String:
    case TypeKind::Interface:
      return add(b.kind, go_name, 2 * ptr_, ptr_);
    case TypeKind::Complex:
      return add(b.kind, go_name, b.size, std::min(b.size / 2, ptr_));
    default: {
      uint64_t size = b.size ? b.size : ptr_;
      return add(b.kind, go_name, size, std::min(size, ptr_));
    }
    }
  }

  // Past the balanced [...] after a generic type's name.
  void skip_type_arguments() {
    int depth = 0;
    for (; pos_ < text_.size(); ++pos_) {
      if (text_[pos_] == '[')
        ++depth;
      else if (text_[pos_] == ']' && --depth == 0) {
        ++pos_;
        return;
      }
    }
    fail("unbalanced [ in the type arguments");
  }

  const std::string &text_;
  TypeTable &table_;
  uint64_t ptr_;
  SourceLoc loc_;
  const NamedTypeResolver &resolve_;
  size_t pos_ = 0;
  static constexpr int kMaxDepth = 100;
  int depth_ = 0;
};

} // namespace

NamedTypeResolver dwarf_type_resolver(DebugInfo &debug) {
  return [&debug](const std::string &written, std::string &why) -> std::optional<TypeId> {
    std::optional<GoTypeName> name = split_go_type_name(written, &why);
    if (!name)
      return std::nullopt;
    std::string spelled = name->base();
    if (std::optional<TypeId> found = debug.find_type(spelled))
      return found;
    GoTypeName escaped = *name;
    escaped.package = escape_package_path(name->package);
    if (std::optional<TypeId> found = debug.find_type(escaped.base()))
      return found;
    // The usual slip: the package's last element alone ("url.URL" for "net/url.URL").
    std::vector<std::string> candidates;
    const std::vector<std::string> known_names = debug.type_names();
    std::string tail = "/" + spelled;
    for (const std::string &known : known_names)
      if (known.size() > tail.size() && known.compare(known.size() - tail.size(), tail.size(), tail) == 0)
        if (std::optional<GoTypeName> k = split_go_type_name(known); k && k->ops.empty())
          candidates.push_back(known);
    std::string hint = candidates.size() == 1 ? "did you mean " + candidates[0] + "?" : did_you_mean(spelled, known_names);
    why = fmt::format("the binary's DWARF has no type {} ({}name a type by its full package path, as the binary "
                      "does: *net/url.URL, github.com/org/pkg.T, main.Pair[string,int64])",
                      spelled, hint.empty() ? "" : hint + " ");
    return std::nullopt;
  };
}

TypeId build_declared_type(const TypeSpec &type, TypeTable &table, int ptr_size, const NamedTypeResolver &resolve) {
  uint64_t ptr = static_cast<uint64_t>(ptr_size);
  if (type.form.empty())
    return TypeParser(type.expr, table, ptr_size, type.loc, resolve).parse_all();
  if (type.form == "struct") {
    GoType t{TypeKind::Struct, "struct {", 0, 1};
    uint64_t offset = 0;
    for (const ParamSpec &field : type.fields) {
      TypeId id = build_declared_type(field.type, table, ptr_size, resolve);
      const GoType &f = table.at(id);
      offset = align_up(offset, f.align);
      t.fields.push_back({field.name, offset, id, false});
      t.name += fmt::format("{} {} {}", t.fields.size() > 1 ? ";" : "", field.name, f.name);
      offset += f.size;
      if (offset > (uint64_t(1) << 50))
        throw UserError("type-too-large", fmt::format("struct field {} ends past any Go value's size", field.name),
                        field.type.loc);
      t.align = std::max(t.align, f.align);
    }
    // A final zero-sized field gets a byte of padding, so a pointer to it stays inside the struct.
    if (!type.fields.empty() && table.at(t.fields.back().type).size == 0 && offset > 0)
      offset += 1;
    t.size = align_up(offset, t.align);
    t.name += " }";
    if (!type.name.empty() && resolve)
      check_declared_layout(type, t, table, resolve);
    return table.add(t);
  }
  TypeId elem = build_declared_type(type.elem.at(0), table, ptr_size, resolve);
  const GoType &e = table.at(elem);
  if (type.form == "pointer") {
    GoType t{TypeKind::Pointer, "*" + e.name, ptr, ptr};
    t.elem = elem;
    return table.add(t);
  }
  if (type.form == "slice") {
    GoType t{TypeKind::Slice, "[]" + e.name, 3 * ptr, ptr};
    t.elem = elem;
    return table.add(t);
  }
  GoType t{TypeKind::Array, fmt::format("[{}]{}", type.len, e.name), array_size(type.len, e.size, ptr, type.loc),
           e.align};
  t.elem = elem;
  t.count = type.len;
  return table.add(t);
}

} // namespace weave
