#include "plan/captures.h"

#include "plan/expr.h"
#include "plan/signature.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

namespace weave {

namespace {

constexpr size_t kMaxCaptures = 64; // one fault bit each in the header's `faults`
constexpr size_t kMaxFieldsPerCapture = 64;

uint32_t round8(uint64_t n) { return static_cast<uint32_t>((n + 7) / 8 * 8); }

std::string join_name(const std::string &prefix, const std::string &name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Place is where the value being resolved lives at the probe: either spread over registers, or in
// memory at (base register, followed through `loads`) + offset.
struct Place {
  struct Piece {
    std::string reg;  // pt_regs field
    std::string name; // assembler name
    uint64_t offset = 0;
    uint64_t size = 0;
    bool is_float = false;
    bool memory = false;   // an inlined copy's stack piece: at SP + sp_offset, not in `reg`
    int64_t sp_offset = 0;
  };
  bool in_regs = false;
  std::vector<Piece> pieces;
  std::string base_reg;
  std::string base_comment;
  std::vector<LoadStep> loads;
  int64_t offset = 0;
  int base_field = -1; // memory found through an earlier field of the capture (ValueRead::base_field)
};

// Buckets (hmap, overflow buckets included) or groups (swiss tables) a map walk reads at most, so
// that the verifier sees a bounded loop it can afford: it checks every iteration, and a walk of 16
// for 15 pairs costs it about 22,000 instructions of its 1,000,000 (64 cost 120,000). A full bucket or group holds 8 pairs and Go keeps them at least
// about half full as they grow, so 16 reach the first pairs of any map that is not mostly empty
// space left by deletions; such a map shows fewer pairs than it could, and its len says how many
// it has.
constexpr uint32_t kMapMaxVisits = 16;
// Keys and values larger than this are stored through a pointer in the bucket or slot
// (runtime/map.go maxKeySize/maxElemSize, abi.MapMaxKeyBytes/MapMaxElemBytes).
constexpr uint64_t kMapMaxInlineSize = 128;

// Resolver turns one probe's capture expressions into event fields.
class Resolver {
public:
  Resolver(TypeTable &types, const ArchRegisters &regs, int ptr_size, int string_max, int slice_max,
           RuntimeLayout runtime)
      : types_(types), regs_(regs), ptr_size_(ptr_size), string_max_(string_max),
        slice_max_(slice_max), runtime_(runtime) {}

  // Where DWARF puts a value at an inlined copy (see NamedValue::inlined).
  Place inlined_place(const NamedValue &value) {
    Place place;
    if (value.whole_in_memory) {
      place.base_reg = regs_.sp;
      place.base_comment = "stack pointer at the inlined copy";
      place.offset = value.whole_sp_offset;
      return place;
    }
    place.in_regs = true;
    for (const auto &piece : value.pieces) {
      Place::Piece p;
      p.offset = piece.offset;
      p.size = piece.size;
      p.memory = piece.memory;
      p.sp_offset = piece.sp_offset;
      p.reg = piece.memory ? regs_.sp : piece.reg;
      p.name = piece.memory ? fmt::format("the stack at SP{:+}", piece.sp_offset) : piece.reg_name;
      place.pieces.push_back(p);
    }
    return place;
  }

  Place root_place(const std::string &name, TypeId type, const ParamLocation &loc) {
    Place place;
    const std::string type_name = types_.at(type).name;
    if (loc.on_stack) {
      place.base_reg = regs_.sp;
      place.base_comment = "stack pointer at entry";
      place.offset = static_cast<int64_t>(regs_.stack_args_offset + loc.stack_offset);
      return place;
    }
    place.in_regs = true;
    for (const RegPiece &piece : loc.pieces) {
      Place::Piece p;
      p.offset = piece.offset;
      p.size = piece.size;
      p.is_float = piece.cls == RegClass::Float;
      if (p.is_float) {
        p.name = regs_.float_arg_prefix + std::to_string(piece.index);
      } else {
        p.reg = regs_.int_args.at(static_cast<size_t>(piece.index));
        p.name = regs_.int_arg_names.at(static_cast<size_t>(piece.index));
      }
      place.pieces.push_back(p);
    }
    return place;
  }

  // The part of `place` holding a member `size` bytes long at `offset` inside the value.
  Place member(const Place &place, uint64_t offset, uint64_t size) {
    Place sub = place;
    if (place.in_regs) {
      sub.pieces.clear();
      for (const auto &p : place.pieces)
        if (p.offset >= offset && p.offset < offset + size) {
          auto q = p;
          q.offset -= offset;
          sub.pieces.push_back(q);
        }
    } else {
      sub.offset += static_cast<int64_t>(offset);
    }
    return sub;
  }

  // The place a pointer value at `place` points to.
  Place deref(const Place &place, const std::string &path, const std::string &type_name,
              const SourceLoc &loc) {
    Place target;
    if (place.in_regs) {
      if (place.pieces.size() != 1 || place.pieces[0].is_float)
        throw std::logic_error("pointer " + path + " is not in one integer register");
      if (place.pieces[0].memory) {
        target.base_reg = regs_.sp;
        target.base_comment = "stack pointer at the inlined copy";
        target.loads.push_back({place.pieces[0].sp_offset, static_cast<uint32_t>(ptr_size_),
                                fmt::format("{}: {} in {}", path, type_name, place.pieces[0].name)});
        return target;
      }
      target.base_reg = place.pieces[0].reg;
      target.base_comment = path + ": " + type_name + " in " + place.pieces[0].name;
      return target;
    }
    target = place;
    target.loads.push_back({place.offset, static_cast<uint32_t>(ptr_size_),
                            fmt::format("{}: {} at {}", path, type_name, offset_text(place))});
    target.offset = 0;
    return target;
  }

  ValueRead scalar(const Place &place, uint64_t size, const std::string &path,
                   const std::string &type_name, const SourceLoc &loc) {
    ValueRead read;
    read.size = static_cast<uint32_t>(size);
    if (place.in_regs) {
      if (place.pieces.size() == 1 && place.pieces[0].is_float)
        throw UserError("float-in-register",
                        fmt::format("{} ({}) is passed in floating-point register {}, which a uprobe "
                                    "cannot read (pt_regs holds only integer registers)",
                                    path, type_name, place.pieces[0].name),
                        loc, "capture it where it is stored in memory, or leave it out");
      if (place.pieces.size() != 1)
        throw UserError("unsupported-type",
                        fmt::format("{} ({}) spans {} registers; not yet supported", path, type_name,
                                    place.pieces.size()),
                        loc);
      if (place.pieces[0].memory) {
        read.base_reg = regs_.sp;
        read.base_comment = "stack pointer at the inlined copy";
        read.loads.push_back({place.pieces[0].sp_offset, static_cast<uint32_t>(size),
                              fmt::format("{}: {} in {}", path, type_name, place.pieces[0].name)});
        return read;
      }
      read.base_reg = place.pieces[0].reg;
      read.base_comment = fmt::format("{}: {} in {}", path, type_name, place.pieces[0].name);
      return read;
    }
    read.base_reg = place.base_reg;
    read.base_field = place.base_field;
    read.base_comment = place.base_comment;
    read.loads = place.loads;
    read.loads.push_back({place.offset, static_cast<uint32_t>(size),
                          fmt::format("{}: {} at {}", path, type_name, offset_text(place))});
    return read;
  }

  // Appends the event fields of a value of type `type` at `place`.
  void emit(const Place &place, TypeId type_id, const std::string &field_name,
            const std::string &path, const SourceLoc &loc, CapturePlan &capture, int depth) {
    const GoType &type = types_.at(type_id);
    if (capture.fields.size() >= kMaxFieldsPerCapture)
      throw UserError("capture-too-large",
                      fmt::format("{} has more than {} fields to capture", capture.expr,
                                  kMaxFieldsPerCapture),
                      loc, "capture the fields you need one by one");
    EventField field;
    field.name = field_name;
    field.go_type = type.name;
    field.size = static_cast<uint32_t>(type.size);
    switch (type.kind) {
    case TypeKind::Bool:
    case TypeKind::Int:
    case TypeKind::Uint:
    case TypeKind::Uintptr:
    case TypeKind::Pointer:
    case TypeKind::UnsafePointer:
      field.kind = type.kind == TypeKind::Bool                                         ? "bool"
                   : type.kind == TypeKind::Int                                        ? "int"
                   : type.kind == TypeKind::Uint || type.kind == TypeKind::Uintptr     ? "uint"
                                                                                       : "pointer";
      field.value = scalar(place, type.size, path, type.name, loc);
      capture.fields.push_back(field);
      return;
    case TypeKind::String: {
      field.kind = "string";
      uint64_t word = static_cast<uint64_t>(ptr_size_);
      field.value = scalar(member(place, 0, word), word, path + ".ptr", "*uint8", loc);
      field.length = scalar(member(place, word, word), word, path + ".len", "int", loc);
      field.max_len = static_cast<uint32_t>(string_max_);
      capture.fields.push_back(field);
      return;
    }
    case TypeKind::Struct:
      if (type.fields.empty()) { // struct{}: a value with nothing to read
        field.kind = "empty";
        capture.fields.push_back(field);
        return;
      }
      if (depth >= 4)
        throw UserError("capture-too-large", fmt::format("{} nests structs too deeply", path), loc,
                        "capture the inner fields by path");
      for (const GoField &f : type.fields) {
        const GoType &ft = types_.at(f.type);
        emit(member(place, f.offset, ft.size), f.type,
             field_name.empty() ? f.name : field_name + "." + f.name, path + "." + f.name, loc,
             capture, depth + 1);
      }
      return;
    case TypeKind::Float:
      // In memory (ABI0, the stack, behind a pointer) a float is readable; in an XMM/V register
      // scalar() refuses it.
      field.kind = "float";
      field.value = scalar(place, type.size, path, type.name, loc);
      capture.fields.push_back(field);
      return;
    case TypeKind::Complex: {
      uint64_t half = type.size / 2;
      const char *part_type = half == 4 ? "float32" : "float64";
      for (int part = 0; part < 2; ++part) {
        EventField f;
        f.name = join_name(field_name, part == 0 ? "real" : "imag");
        f.kind = "float";
        f.go_type = part_type;
        f.size = static_cast<uint32_t>(half);
        f.value = scalar(member(place, part * half, half), half, path + (part == 0 ? ".real" : ".imag"),
                         part_type, loc);
        capture.fields.push_back(f);
      }
      return;
    }
    case TypeKind::Slice: {
      uint64_t word = static_cast<uint64_t>(ptr_size_);
      const GoType &elem = types_.at(type.elem);
      if (elem.kind == TypeKind::Uint && elem.size == 1) {
        // []byte reads like a string: its bytes, up to string_max.
        field.kind = "string";
        field.value = scalar(member(place, 0, word), word, path + ".array", "*uint8", loc);
        field.length = scalar(member(place, word, word), word, path + ".len", "int", loc);
        field.max_len = static_cast<uint32_t>(string_max_);
        capture.fields.push_back(field);
        return;
      }
      EventField len, cap;
      len.name = join_name(field_name, "len");
      cap.name = join_name(field_name, "cap");
      len.kind = cap.kind = "int";
      len.go_type = cap.go_type = "int";
      len.size = cap.size = static_cast<uint32_t>(word);
      len.value = scalar(member(place, word, word), word, path + ".len", "int", loc);
      cap.value = scalar(member(place, 2 * word, word), word, path + ".cap", "int", loc);
      int len_index = static_cast<int>(capture.fields.size());
      capture.fields.push_back(len);
      capture.fields.push_back(cap);
      std::string items = join_name(field_name, "items");
      capture.lists.push_back({items, len.name});
      Place data = deref(member(place, 0, word), path + ".array", "*" + elem.name, loc);
      bool was_in_list = in_list_;
      in_list_ = true;
      for (int i = 0; i < slice_max_; ++i) {
        size_t first = capture.fields.size();
        emit(member(data, static_cast<uint64_t>(i) * elem.size, elem.size), type.elem,
             items + "." + std::to_string(i), fmt::format("{}[{}]", path, i), loc, capture, depth + 1);
        for (size_t f = first; f < capture.fields.size(); ++f) {
          capture.fields[f].guard_field = len_index;
          capture.fields[f].guard_index = static_cast<uint64_t>(i);
        }
      }
      in_list_ = was_in_list;
      return;
    }
    case TypeKind::Array: {
      if (type.count == 0) { // [0]T: a value with nothing to read
        field.kind = "empty";
        field.empty_array = true; // its name may be a named type's ("main.A"): say it is an array
        capture.fields.push_back(field);
        return;
      }
      const GoType &elem = types_.at(type.elem);
      capture.lists.push_back({field_name, ""});
      uint64_t shown = std::min<uint64_t>(type.count, static_cast<uint64_t>(slice_max_));
      bool was_in_list = in_list_;
      in_list_ = true;
      for (uint64_t i = 0; i < shown; ++i)
        emit(member(place, i * elem.size, elem.size), type.elem, join_name(field_name, std::to_string(i)),
             fmt::format("{}[{}]", path, i), loc, capture, depth + 1);
      in_list_ = was_in_list;
      return;
    }
    case TypeKind::Interface: {
      // {tab or type, data}: the dynamic type's descriptor (through the itab for a non-empty
      // interface), the data word, and speculative reads of what data points to, which the tracer
      // shows only when the dynamic type says they mean something (a string, an error's message,
      // a small scalar).
      uint64_t word = static_cast<uint64_t>(ptr_size_);
      capture.interfaces.push_back(field_name);
      EventField t;
      t.name = join_name(field_name, "type");
      t.kind = "uint";
      t.go_type = "*runtime._type";
      t.size = static_cast<uint32_t>(word);
      t.value = scalar(member(place, 0, word), word, path + ".tab", "uintptr", loc);
      if (!type.empty_interface)
        t.value.loads.push_back({static_cast<int64_t>(runtime_.itab_type), static_cast<uint32_t>(word),
                                 fmt::format("{}: itab._type at +{}", path, runtime_.itab_type), true});
      capture.fields.push_back(t);
      EventField data;
      data.name = join_name(field_name, "data");
      data.kind = "pointer";
      data.go_type = "unsafe.Pointer";
      data.size = static_cast<uint32_t>(word);
      data.value = scalar(member(place, word, word), word, path + ".data", "unsafe.Pointer", loc);
      capture.fields.push_back(data);
      EventField value = data;
      value.name = join_name(field_name, "value");
      value.kind = "uint";
      value.go_type = "uint64";
      value.size = 8;
      value.optional = true;
      value.value.loads.push_back({0, 8, fmt::format("*{}.data: a scalar value, if that is its type", path), true});
      capture.fields.push_back(value);
      EventField text;
      text.name = join_name(field_name, "text");
      text.kind = "string";
      text.go_type = "string";
      text.size = static_cast<uint32_t>(2 * word);
      text.optional = true;
      text.max_len = static_cast<uint32_t>(string_max_);
      text.value = data.value;
      text.value.loads.push_back({0, static_cast<uint32_t>(word),
                                  fmt::format("*{}.data: a string's bytes, or an error's message", path), true});
      text.length = data.value;
      text.length.loads.push_back({static_cast<int64_t>(word), static_cast<uint32_t>(word),
                                   fmt::format("*{}.data: that string's length", path), true});
      capture.fields.push_back(text);
      if (contents && !in_list_ && !in_contents_)
        emit_contents(place, type, field_name, path, loc, capture, static_cast<int>(capture.fields.size()) - 4,
                      static_cast<int>(capture.fields.size()) - 3);
      return;
    }
    case TypeKind::Func: {
      // A func value points to a funcval whose first word is the code's address; the tracer names
      // the function from .gopclntab. nil stays 0.
      uint64_t word = static_cast<uint64_t>(ptr_size_);
      field.kind = "func";
      field.size = static_cast<uint32_t>(word);
      field.value = scalar(place, word, path, type.name, loc);
      field.value.loads.push_back({0, static_cast<uint32_t>(word),
                                   fmt::format("{}: the code pointer of its funcval", path), true});
      capture.fields.push_back(field);
      return;
    }
    case TypeKind::Map:
    case TypeKind::Chan: {
      // Both are pointers to a runtime header; a nil one has length 0. The header layout comes
      // from the binary's DWARF (runtime.hmap, runtime.hchan), so it follows the Go version.
      bool is_map = type.kind == TypeKind::Map;
      std::optional<uint64_t> len_off = is_map ? runtime_.map_count : runtime_.chan_len;
      if (!len_off)
        throw UserError("unsupported-type",
                        fmt::format("{} is a {}, but this binary's DWARF has no {} layout to read its "
                                    "length from",
                                    path, type.name, is_map ? "runtime.hmap" : "runtime.hchan"),
                        loc);
      auto header_field = [&](const char *name, uint64_t offset) {
        EventField f;
        f.name = join_name(field_name, name);
        f.kind = "int";
        f.go_type = "int";
        f.size = static_cast<uint32_t>(ptr_size_);
        f.value = scalar(place, static_cast<uint64_t>(ptr_size_), path, type.name, loc);
        f.value.size = static_cast<uint32_t>(ptr_size_);
        f.value.loads.push_back({static_cast<int64_t>(offset), static_cast<uint32_t>(ptr_size_),
                                 fmt::format("{}({}): {} header +{}", name, path, is_map ? "map" : "chan", offset),
                                 true});
        capture.fields.push_back(f);
      };
      header_field("len", *len_off);
      if (!is_map && runtime_.chan_cap)
        header_field("cap", *runtime_.chan_cap);
      if (is_map && !contents_off_)
        emit_map_pairs(place, type, field_name, path, loc, capture, depth);
      return;
    }
    default:
      throw UserError("unsupported-type",
                      fmt::format("{} has type {} ({}), which weave cannot capture yet", path,
                                  type.name, kind_name(type.kind)),
                      loc,
                      "supported: integers, bool, uintptr, pointers, strings, and structs of those; "
                      "capture a field of it instead");
    }
  }

  // The pairs of a map after its len: a hidden count that the walk fills in, each pair's hidden
  // key and value addresses, and the pairs as the list `items` of {key, value}, read through those
  // addresses below the count. The map the capture names is refused when its pairs cannot be read
  // (a key or value type weave does not copy, a layout unlike the runtime's, too many fields); a
  // map inside a struct keeps its len alone then, and so does a map inside a slice or array,
  // always (a walk per element would not fit a record), and a map without a header (a stripped
  // binary's whose release or descriptors weave cannot vouch for: DescriptorTypes::map_header).
  void emit_map_pairs(const Place &place, const GoType &type, const std::string &field_name,
                      const std::string &path, const SourceLoc &loc, CapturePlan &capture, int depth) {
    const bool named = depth == 0 && field_name.empty();
    // No header (a stripped binary's map whose layout DescriptorTypes::map_header refused, or a
    // declared map type the binary has no descriptor of): the map keeps its len alone.
    if (in_list_ || type.header == kNoType)
      return;
    std::string why;
    std::optional<MapWalk> walk = map_layout(type, why);
    size_t needed = walk ? 1 + static_cast<size_t>(slice_max_) * (2 + flat_fields(type.key) + flat_fields(type.elem)) : 0;
    if (walk && capture.fields.size() + needed > kMaxFieldsPerCapture)
      why = fmt::format("its {} pairs take {} fields, past the {} of a capture", slice_max_, needed,
                        kMaxFieldsPerCapture);
    if (!walk || !why.empty()) {
      if (!named)
        return;
      if (implicit_notes_) { // args: all, return: true: the len alone, said in the warnings
        implicit_notes_->push_back(
            fmt::format("{}: its len alone, not its pairs ({}): {}", path, type.name, why));
        return;
      }
      throw UserError("unsupported-map",
                      fmt::format("{} is a {}: weave cannot capture its pairs: {}", path, type.name, why), loc,
                      fmt::format("capture len({}) for its length alone, or lower options.slice_max", path));
    }
    uint64_t word = static_cast<uint64_t>(ptr_size_);
    walk->map = scalar(place, word, path, type.name, loc);
    walk->pairs = static_cast<uint32_t>(slice_max_);
    walk->max_visits = kMapMaxVisits;
    EventField count;
    count.name = join_name(field_name, "#pairs");
    count.kind = "int";
    count.go_type = "int";
    count.size = 8;
    count.hidden = true;
    int count_index = static_cast<int>(capture.fields.size());
    walk->first_slot_field = count_index + 1;
    count.value = walk->map; // what the walk starts from, for --dump=plan and probes.json
    count.map_walk = std::move(walk);
    capture.fields.push_back(count);
    for (int i = 0; i < slice_max_; ++i)
      for (const char *part : {"key", "value"}) {
        EventField slot;
        slot.name = join_name(field_name, fmt::format("#slot.{}.{}", i, part));
        slot.kind = "pointer";
        slot.go_type = "uintptr";
        slot.size = static_cast<uint32_t>(word);
        slot.hidden = true;
        slot.by_walk = true; // no read of its own
        capture.fields.push_back(slot);
      }
    std::string items = join_name(field_name, "items");
    capture.lists.push_back({items, count.name, true});
    for (int i = 0; i < slice_max_; ++i) {
      size_t first = capture.fields.size();
      for (int part = 0; part < 2; ++part) {
        Place at;
        at.base_field = count_index + 1 + 2 * i + part;
        at.base_comment = fmt::format("the address of pair {}'s {} (found by the walk)", i, part ? "value" : "key");
        TypeId t = part ? type.elem : type.key;
        emit(at, t, fmt::format("{}.{}.{}", items, i, part ? "value" : "key"),
             fmt::format("{}[pair {}].{}", path, i, part ? "value" : "key"), loc, capture, depth + 1);
      }
      for (size_t f = first; f < capture.fields.size(); ++f) {
        capture.fields[f].guard_field = count_index;
        capture.fields[f].guard_index = static_cast<uint64_t>(i);
      }
    }
  }

  // How many fields a key or value of this type takes, or a large number for a type whose pairs
  // weave does not copy (map_layout says which).
  size_t flat_fields(TypeId id, int depth = 0) const {
    const GoType &t = types_.at(id);
    switch (t.kind) {
    case TypeKind::Bool:
    case TypeKind::Int:
    case TypeKind::Uint:
    case TypeKind::Uintptr:
    case TypeKind::Float:
    case TypeKind::Pointer:
    case TypeKind::UnsafePointer:
    case TypeKind::String:
      return 1;
    case TypeKind::Complex:
      return 2;
    case TypeKind::Struct: {
      if (depth >= 3)
        return 1000;
      size_t n = t.fields.empty() ? 1 : 0;
      for (const GoField &f : t.fields)
        n += flat_fields(f.type, depth + 1);
      return n;
    }
    default:
      return 1000;
    }
  }

  // The walk's layout for this map type, from the header DWARF synthesizes for it; nullopt with
  // `why` set when there is none or the pairs are not copied.
  std::optional<MapWalk> map_layout(const GoType &type, std::string &why) const {
    if (type.key == kNoType || type.elem == kNoType || type.header == kNoType) {
      why = "neither DWARF nor the type descriptors give its buckets or tables a known layout";
      return std::nullopt;
    }
    for (TypeId t : {type.key, type.elem})
      if (flat_fields(t) >= 1000) {
        why = fmt::format("its {} type {} is not a scalar, string, pointer or a struct of those",
                          t == type.key ? "key" : "value", types_.at(t).name);
        return std::nullopt;
      }
    const GoType &key = types_.at(type.key);
    const GoType &value = types_.at(type.elem);
    if (key.size > kMapMaxInlineSize || value.size > kMapMaxInlineSize) {
      why = fmt::format("its {} ({}, {} bytes) is stored through a pointer", key.size > kMapMaxInlineSize ? "key" : "value",
                        key.size > kMapMaxInlineSize ? key.name : value.name,
                        key.size > kMapMaxInlineSize ? key.size : value.size);
      return std::nullopt;
    }
    const GoType &header = types_.at(type.header);
    auto field = [&](const GoType &t, const char *name) -> const GoField * {
      for (const GoField &f : t.fields)
        if (f.name == name)
          return &f;
      return nullptr;
    };
    auto pointee = [&](const GoField *f) -> const GoType * {
      if (!f || f->type == kNoType)
        return nullptr;
      const GoType &p = types_.at(f->type);
      return p.kind == TypeKind::Pointer && p.elem != kNoType ? &types_.at(p.elem) : nullptr;
    };
    auto unexpected = [&](const std::string &what) {
      why = fmt::format("its DWARF header {} {}", header.name, what);
      return std::nullopt;
    };
    MapWalk walk;
    if (field(header, "buckets")) {
      // Go <= 1.23: hash<K,V> {count, flags, B, ..., buckets, oldbuckets, ...}, buckets of
      // bucket<K,V> {tophash [8]uint8, keys [8]K, values [8]V, overflow *bucket<K,V>}.
      const GoField *flags = field(header, "flags"), *b = field(header, "B"),
                    *buckets = field(header, "buckets"), *old = field(header, "oldbuckets"),
                    *nevacuate = field(header, "nevacuate");
      const GoType *bucket = pointee(buckets);
      if (!flags || !b || !old || !nevacuate || !bucket)
        return unexpected("lacks flags, B, buckets, oldbuckets or nevacuate");
      const GoField *tophash = field(*bucket, "tophash"), *keys = field(*bucket, "keys"),
                    *values = field(*bucket, "values"), *overflow = field(*bucket, "overflow");
      if (!tophash || !keys || !values || !overflow)
        return unexpected("has buckets without tophash, keys, values or overflow");
      // The slots are where runtime/map.go computes them: keys after the 8 tophash bytes, values
      // after the 8 keys, the overflow pointer after the 8 values.
      if (values->offset != keys->offset + 8 * key.size || overflow->offset != values->offset + 8 * value.size)
        return unexpected(fmt::format("has buckets laid out unlike 8 {} keys and 8 {} values", key.name, value.name));
      walk.layout = "hmap";
      walk.flags = flags->offset;
      walk.log2_buckets = b->offset;
      walk.buckets = buckets->offset;
      walk.oldbuckets = old->offset;
      walk.nevacuate = nevacuate->offset;
      walk.bucket_size = bucket->size;
      walk.tophash = tophash->offset;
      walk.keys = keys->offset;
      walk.key_size = key.size;
      walk.values = values->offset;
      walk.value_size = value.size;
      walk.overflow = overflow->offset;
      return walk;
    }
    if (field(header, "dirPtr")) {
      // Go 1.24+: map<K,V> {used, seed, dirPtr, dirLen, globalDepth, globalShift, writing, ...};
      // dirPtr is one group when dirLen is 0, else dirLen *table<K,V> (internal/runtime/maps).
      const GoField *dir_ptr = field(header, "dirPtr"), *dir_len = field(header, "dirLen"),
                    *writing = field(header, "writing");
      const GoType *entry = pointee(dir_ptr);
      const GoType *table = entry && entry->kind == TypeKind::Pointer && entry->elem != kNoType
                                ? &types_.at(entry->elem)
                                : nullptr;
      if (!dir_len || !writing || !table)
        return unexpected("lacks dirPtr **table, dirLen or writing");
      const GoField *groups = field(*table, "groups");
      if (!groups)
        return unexpected("has tables without groups");
      const GoType &groups_ref = types_.at(groups->type);
      const GoField *data = field(groups_ref, "data"), *mask = field(groups_ref, "lengthMask");
      const GoType *group = pointee(data);
      if (!mask || !group)
        return unexpected("has groups without data or lengthMask");
      const GoField *ctrl = field(*group, "ctrl"), *slots = field(*group, "slots");
      if (!ctrl || !slots || types_.at(slots->type).kind != TypeKind::Array || types_.at(slots->type).count != 8 ||
          types_.at(slots->type).elem == kNoType)
        return unexpected("has groups without ctrl and 8 slots");
      const GoType &slot = types_.at(types_.at(slots->type).elem);
      const GoField *slot_key = field(slot, "key"), *slot_elem = field(slot, "elem");
      if (!slot_key || !slot_elem || types_.at(slot_key->type).size != key.size ||
          types_.at(slot_elem->type).size != value.size)
        return unexpected(fmt::format("has slots unlike {{key {}; elem {}}}", key.name, value.name));
      walk.layout = "swiss";
      walk.dir_ptr = dir_ptr->offset;
      walk.dir_len = dir_len->offset;
      walk.writing = writing->offset;
      walk.groups_data = groups->offset + data->offset;
      walk.groups_mask = groups->offset + mask->offset;
      walk.group_size = group->size;
      walk.ctrl = ctrl->offset;
      walk.slots = slots->offset;
      walk.slot_size = slot.size;
      walk.slot_key = slot_key->offset;
      walk.slot_elem = slot_elem->offset;
      return walk;
    }
    return unexpected("is neither buckets (hmap) nor tables (swiss)");
  }

  // "contents: true": the value behind an interface as each candidate type would have it (the
  // binary's concrete types for the interface, plan.cpp), each read only when the type word proves
  // it is that type. Generated branches rather than a table of read recipes interpreted in BPF:
  // each candidate is the same guarded reads a type assertion x.(T) makes, so the C stays the
  // C the rest of the generator writes (readable, one comment per read), the verifier sees straight
  // code, and a call pays one comparison per candidate plus the reads of the type it holds.
  // Within one interface, candidates' fields are laid out one after another (a record holds them
  // all); a nested interface shows its type and message (no contents of its own), a slice or an
  // interface inside a slice no contents either, so a record grows by at most kMaxContentsTypes
  // types' fields per interface. A type that cannot be captured (too deep, too many fields) is
  // left out and prints as <contents not known for T>, as does one past the bound.
  static constexpr size_t kMaxContentsTypes = 16;
  void emit_contents(const Place &place, const GoType &iface, const std::string &field_name, const std::string &path,
                     const SourceLoc &loc, CapturePlan &capture, int type_field, int data_field) {
    uint64_t word = static_cast<uint64_t>(ptr_size_);
    std::vector<AssertedType> candidates =
        contents(iface.empty_interface ? "interface {}" : iface.name, kMaxContentsTypes);
    Place data_word = member(place, word, word);
    // A map the candidate is, or holds in a field, is walked like a captured one (emit_map_pairs):
    // its walk runs only when the type word is the candidate's descriptor, so it never walks a
    // guess. One that does not fit the capture's fields any more keeps its len, as in a struct.
    in_contents_ = true;
    CapturePlan::Contents contents_plan{field_name, type_field, data_field, {}};
    size_t numbered = 0;
    for (const CapturePlan::Contents &k : capture.contents)
      numbered += k.types.size();
    for (const AssertedType &c : candidates) {
      size_t fields0 = capture.fields.size(), lists0 = capture.lists.size(), ifaces0 = capture.interfaces.size();
      std::string prefix = join_name(field_name, "#" + std::to_string(numbered + contents_plan.types.size()));
      std::string asserted = fmt::format("{}.({})", path, c.name);
      const GoType &t = types_.at(c.type);
      TypeId read = c.type;
      bool pointer = false;
      Place at;
      if (!c.direct_iface.value_or(direct_iface(types_, c.type))) {
        at = deref(data_word, asserted, "*" + t.name, loc); // the data word points to a copy
      } else if (t.kind == TypeKind::Pointer && t.elem != kNoType && types_.at(t.elem).size > 0) {
        at = deref(data_word, asserted, t.name, loc); // *T: T, one level down
        read = t.elem;
        pointer = true;
      } else {
        at = data_word; // a map, chan, func or one-pointer struct is the data word itself
      }
      try {
        emit(at, read, prefix, asserted, loc, capture, 1);
      } catch (const UserError &) {
        // A candidate refused inside a slice or array (too many fields) left its walk's state
        // behind: restore it, or every interface after it, in this capture and the next ones of
        // the event, would be taken for one inside a list and shown without contents.
        in_list_ = false;
        capture.fields.resize(fields0);
        capture.lists.resize(lists0);
        capture.interfaces.resize(ifaces0);
        continue;
      }
      for (size_t f = fields0; f < capture.fields.size(); ++f) {
        EventField &field = capture.fields[f];
        field.hidden = true;
        field.optional = true; // a fault (a nil *T) marks nothing: the tracer checks the data word
        field.assert_field = type_field;
        field.assert_type = c.descriptor;
      }
      contents_plan.types.push_back({c.name, c.descriptor, static_cast<uint32_t>(fields0),
                                     static_cast<uint32_t>(capture.fields.size()), pointer});
    }
    capture.contents.push_back(std::move(contents_plan));
    in_contents_ = false;
  }

  static std::string offset_text(const Place &place) {
    return place.offset >= 0 ? fmt::format("+{}", place.offset) : fmt::format("{}", place.offset);
  }

  TypeTable &types() { return types_; }
  int ptr_size() const { return ptr_size_; }

private:
  TypeTable &types_;
  const ArchRegisters &regs_;
  int ptr_size_;
  int string_max_;
  int slice_max_;
  RuntimeLayout runtime_;
  bool in_list_ = false;     // emitting the elements of a slice or array
  bool contents_off_ = false; // len(m): the header's length alone
  bool in_contents_ = false;  // emitting an interface's candidate types (emit_contents)
  // Resolving an implicit capture (args: all, return: true): a map whose pairs cannot be read
  // keeps its len, with a note here, instead of being left out.
  std::vector<std::string> *implicit_notes_ = nullptr;
public:
  AssertedTypeResolver asserted_type; // CaptureContext::asserted_type
  ContentsCandidates contents;        // CaptureContext::contents: null unless "contents: true"
  const RuntimeLayout &runtime() const { return runtime_; }
  void set_contents_off(bool off) { contents_off_ = off; }
  void set_implicit_notes(std::vector<std::string> *notes) { implicit_notes_ = notes; }
};

std::vector<std::string> field_names(const GoType &type) {
  std::vector<std::string> names;
  for (const auto &f : type.fields)
    names.push_back(f.name);
  return names;
}

std::string join(const std::vector<std::string> &items) {
  std::string out;
  for (const auto &item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

// What a selector x.name picks in the struct `type` (GoType::fields, with their `embedded` flags):
// the fields leading to it, embedded ones first. More than one path: the name is ambiguous at the
// shallowest depth it occurs (the first two are kept, to name them); none: no such field.
struct FieldSelection {
  std::vector<std::vector<const GoField *>> paths;
};

// An embedded field's struct: the field's type, or what its pointer points to.
TypeId embedded_struct(const TypeTable &types, const GoField &f) {
  TypeId t = f.type;
  if (t != kNoType && types.at(t).kind == TypeKind::Pointer)
    t = types.at(t).elem;
  return t != kNoType && types.at(t).kind == TypeKind::Struct ? t : kNoType;
}

// The Go spec's selector rule (and go/types' lookupFieldOrMethod): look at depth 0, then at the
// fields of the embedded structs, and so on; the first depth holding the name decides, and it must
// hold it once. A struct met at a shallower depth is not searched again (it shadows itself, and
// recursive embedding through pointers ends).
FieldSelection select_field(const TypeTable &types, TypeId struct_type, const std::string &name) {
  constexpr int kMaxDepth = 32;
  struct Candidate {
    TypeId type;
    std::vector<const GoField *> path;
  };
  FieldSelection out;
  std::vector<Candidate> level{{struct_type, {}}};
  std::set<TypeId> seen;
  for (int depth = 0; depth < kMaxDepth && !level.empty(); ++depth) {
    for (const Candidate &c : level)
      seen.insert(c.type);
    std::vector<Candidate> next;
    for (const Candidate &c : level)
      for (const GoField &f : types.at(c.type).fields) {
        std::vector<const GoField *> path = c.path;
        path.push_back(&f);
        if (f.name == name) {
          if (out.paths.size() < 2)
            out.paths.push_back(path);
          else
            out.paths.resize(2);
        } else if (TypeId inner = f.embedded ? embedded_struct(types, f) : kNoType;
                   inner != kNoType && !seen.count(inner)) {
          next.push_back({inner, std::move(path)});
        }
      }
    if (!out.paths.empty())
      return out;
    level = std::move(next);
  }
  return out;
}

// For a hint: the shortest path ("parseState.pa.subject") to a field called `name` through any
// fields, embedded or not, when exactly one is shortest; a bounded search.
std::optional<std::string> path_to_field(const TypeTable &types, TypeId struct_type, const std::string &name) {
  constexpr int kMaxDepth = 4;
  constexpr size_t kMaxVisits = 4096;
  std::vector<std::pair<TypeId, std::string>> level{{struct_type, ""}};
  std::set<TypeId> seen{struct_type};
  size_t visits = 0;
  for (int depth = 0; depth < kMaxDepth && !level.empty(); ++depth) {
    std::vector<std::string> found;
    std::vector<std::pair<TypeId, std::string>> next;
    for (const auto &[type, prefix] : level)
      for (const GoField &f : types.at(type).fields) {
        if (++visits > kMaxVisits)
          return std::nullopt;
        std::string here = prefix.empty() ? f.name : prefix + "." + f.name;
        if (f.name == name)
          found.push_back(here);
        else if (TypeId inner = embedded_struct(types, f); inner != kNoType && seen.insert(inner).second)
          next.emplace_back(inner, here);
      }
    if (!found.empty())
      return found.size() == 1 ? std::optional<std::string>(found[0]) : std::nullopt;
    level = std::move(next);
  }
  return std::nullopt;
}

uint32_t layout_fields(CapturePlan &capture, uint32_t offset) {
  for (EventField &field : capture.fields) {
    field.offset = offset;
    offset += field.kind == "string" ? 8 + round8(field.max_len) : field.kind == "empty" ? 0 : 8;
  }
  return offset;
}


// Resolves one capture expression against the values available at the probe point.
CapturePlan resolve_capture(const CaptureSpec &cs, const std::vector<NamedValue> &values,
                            const std::string &function, const char *what, Resolver &resolver) {
  TypeTable &types = resolver.types();
  CaptureExpr expr = parse_capture_expr(cs.expr, cs.loc);
  const NamedValue *root = nullptr;
  for (const auto &v : values)
    if (v.name == expr.root)
      root = &v;
  if (!root) {
    std::vector<std::string> names;
    for (const auto &v : values)
      names.push_back(v.name);
    std::string hint = did_you_mean(expr.root, names);
    throw UserError(std::string("unknown-") + what,
                    fmt::format("{} has no {} {}", function, what, expr.root),
                    advance(cs.loc, expr.root_column),
                    (hint.empty() ? "" : hint + " ") + what + "s: " +
                        (names.empty() ? "(none)" : join(names)));
  }
  CapturePlan capture;
  capture.expr = cs.expr;
  capture.loc = cs.loc;
  TypeId type = root->type;
  std::string path = expr.root;
  if (root->inlined && !root->unavailable.empty()) {
    capture.unavailable = root->unavailable;
    capture.go_type = resolver.types().at(type).name;
    return capture; // nothing is read: the tracer shows it as unavailable
  }
  Place place = root->inlined ? resolver.inlined_place(*root) : resolver.root_place(expr.root, type, root->location);
  // xs[i] on a slice is read only when i < len(xs): the length goes first, as a hidden field.
  int slice_guard = -1;
  uint64_t slice_guard_index = 0;
  for (const ExprStep &step : expr.steps) {
    const GoType *t = &types.at(type);
    SourceLoc step_loc = advance(cs.loc, step.column);
    if (step.kind == ExprStep::Kind::Index) {
      std::string indexed = fmt::format("{}[{}]", path, step.index);
      if (t->kind == TypeKind::Array) {
        if (step.index >= t->count)
          throw UserError("index-out-of-range",
                          fmt::format("{}: index {} is out of range for {} ({} element{})", indexed, step.index,
                                      t->name, t->count, t->count == 1 ? "" : "s"),
                          step_loc);
        const GoType &elem = types.at(t->elem);
        place = resolver.member(place, step.index * elem.size, elem.size);
        type = t->elem;
      } else if (t->kind == TypeKind::Slice) {
        if (slice_guard >= 0)
          throw UserError("unsupported-expression",
                          fmt::format("{}: one slice index per capture for now", cs.expr), step_loc,
                          "capture the outer slice with its elements instead");
        uint64_t word = static_cast<uint64_t>(resolver.ptr_size());
        EventField len;
        len.name = "#len";
        len.kind = "int";
        len.go_type = "int";
        len.size = static_cast<uint32_t>(word);
        len.hidden = true;
        len.value = resolver.scalar(resolver.member(place, word, word), word, path + ".len", "int", step_loc);
        slice_guard = static_cast<int>(capture.fields.size());
        slice_guard_index = step.index;
        capture.fields.push_back(len);
        const GoType &elem = types.at(t->elem);
        Place data = resolver.deref(resolver.member(place, 0, word), path + ".array", "*" + elem.name, step_loc);
        place = resolver.member(data, step.index * elem.size, elem.size);
        type = t->elem;
      } else {
        throw UserError("not-indexable", fmt::format("{} is {} ({}), which cannot be indexed", path, t->name,
                                                     kind_name(t->kind)),
                        step_loc, "index arrays and slices");
      }
      path = indexed;
      continue;
    }
    if (step.kind == ExprStep::Kind::Assert) {
      std::string asserted = fmt::format("{}.({})", path, step.name);
      if (t->kind != TypeKind::Interface)
        throw UserError("not-an-interface",
                        fmt::format("{}: {} is {} ({}), not an interface", asserted, path, t->name, kind_name(t->kind)),
                        step_loc, "a type assertion .(T) applies to an interface or error value");
      if (capture.assertion)
        throw UserError("unsupported-expression", fmt::format("{}: one type assertion per capture for now", asserted),
                        step_loc, "capture the inner interface with its own assertion");
      std::string why = "the binary has no DWARF to find the type's layout in";
      std::optional<AssertedType> target =
          resolver.asserted_type ? resolver.asserted_type(step.name, why) : std::nullopt;
      if (!target)
        throw UserError("unknown-type", fmt::format("{}: {}", asserted, why), step_loc);
      // The dynamic type word: the interface's first word (interface{}), or the itab's _type.
      uint64_t word = static_cast<uint64_t>(resolver.ptr_size());
      const GoType &iface = *t;
      EventField tw;
      tw.name = "#type";
      tw.kind = "uint";
      tw.go_type = "*runtime._type";
      tw.size = static_cast<uint32_t>(word);
      tw.hidden = true;
      tw.value = resolver.scalar(resolver.member(place, 0, word), word, path + ".tab", "uintptr", step_loc);
      if (!iface.empty_interface)
        tw.value.loads.push_back({static_cast<int64_t>(resolver.runtime().itab_type), static_cast<uint32_t>(word),
                                  fmt::format("{}: itab._type at +{}", path, resolver.runtime().itab_type), true});
      capture.assertion = CapturePlan::Assertion{static_cast<int>(capture.fields.size()), target->name,
                                                 target->descriptor};
      capture.fields.push_back(tw);
      // The value: the data word itself for a pointer-shaped type, else what it points to.
      Place data_word = resolver.member(place, word, word);
      path = fmt::format("{}.({})", path, target->name);
      if (target->direct_iface.value_or(direct_iface(types, target->type)))
        place = data_word;
      else
        place = resolver.deref(data_word, path, "*" + types.at(target->type).name, step_loc);
      type = target->type;
      continue;
    }
    if (step.kind == ExprStep::Kind::Deref) {
      if (t->kind != TypeKind::Pointer || t->elem == kNoType)
        throw UserError("not-a-pointer", fmt::format("*{}: {} is {}, not a pointer", path, path, t->name),
                        advance(cs.loc, 0));
      place = resolver.deref(place, path, t->name, step_loc);
      path = "*" + path;
      type = t->elem;
      continue;
    }
    // A selector on a pointer to a struct follows the pointer first, as Go does.
    if (t->kind == TypeKind::Pointer && t->elem != kNoType &&
        types.at(t->elem).kind == TypeKind::Struct) {
      place = resolver.deref(place, path, t->name, step_loc);
      type = t->elem;
      t = &types.at(type);
    }
    if (t->kind != TypeKind::Struct)
      throw UserError("not-a-struct",
                      fmt::format("{} is {} ({}), which has no field {}", path, t->name,
                                  kind_name(t->kind), step.name),
                      step_loc);
    // Go's selector rule: the field at the shallowest depth through embedded structs and
    // pointers to structs (c.pa is c.parseState.pa), and two at that depth are ambiguous.
    FieldSelection selection = select_field(types, type, step.name);
    if (selection.paths.size() > 1) {
      auto spelled = [&](const std::vector<const GoField *> &p) {
        std::string out = path;
        for (const GoField *f : p)
          out += "." + f->name;
        return out;
      };
      throw UserError("ambiguous-selector",
                      fmt::format("{}.{} is ambiguous: {} ({}) has {} at depth {} through {} and {}", path, step.name,
                                  path, t->name, step.name, selection.paths[0].size() - 1,
                                  spelled(selection.paths[0]), spelled(selection.paths[1])),
                      step_loc, "name the one you mean by its full path, as Go requires");
    }
    if (selection.paths.empty()) {
      std::string hint;
      if (std::optional<std::string> deeper = path_to_field(types, type, step.name))
        hint = fmt::format("did you mean {}.{}? ", path, *deeper);
      else if (std::string close = did_you_mean(step.name, field_names(*t)); !close.empty())
        hint = close + " ";
      throw UserError("unknown-field", fmt::format("{} ({}) has no field {}", path, t->name, step.name),
                      step_loc, hint + "fields: " + join(field_names(*t)));
    }
    // Each embedded field on the way is a selector of its own: a pointer among them is followed.
    const std::vector<const GoField *> &fields_on_way = selection.paths[0];
    for (size_t k = 0; k < fields_on_way.size(); ++k) {
      const GoField *field = fields_on_way[k];
      if (k > 0 && t->kind == TypeKind::Pointer) {
        place = resolver.deref(place, path, t->name, step_loc);
        type = t->elem;
        t = &types.at(type);
      }
      place = resolver.member(place, field->offset, types.at(field->type).size);
      path += "." + field->name;
      type = field->type;
      t = &types.at(type);
    }
  }
  size_t first_value_field = capture.fields.size();
  if (!expr.builtin.empty()) {
    // len(x) / cap(x): one integer, from the header the value already has.
    const GoType &t = types.at(type);
    uint64_t word = static_cast<uint64_t>(resolver.ptr_size());
    std::string call = expr.builtin + "(" + path + ")";
    bool is_cap = expr.builtin == "cap";
    if (t.kind == TypeKind::Array)
      throw UserError("constant-length",
                      fmt::format("{} is the constant {}: {} is {}", call, t.count, path, t.name), cs.loc,
                      "nothing to capture");
    if ((t.kind == TypeKind::String && !is_cap) || t.kind == TypeKind::Slice) {
      EventField f;
      f.kind = "int";
      f.go_type = "int";
      f.size = static_cast<uint32_t>(word);
      f.value = resolver.scalar(resolver.member(place, is_cap ? 2 * word : word, word), word, call, "int", cs.loc);
      capture.fields.push_back(f);
    } else if (t.kind == TypeKind::Map || t.kind == TypeKind::Chan) {
      resolver.set_contents_off(true);
      resolver.emit(place, type, "", path, cs.loc, capture, 0); // {len} or {len, cap}
      resolver.set_contents_off(false);
      std::string keep = is_cap ? "cap" : "len";
      auto it = std::find_if(capture.fields.begin() + static_cast<long>(first_value_field), capture.fields.end(),
                             [&](const EventField &f) { return f.name == keep; });
      if (it == capture.fields.end())
        throw UserError("unsupported-expression", fmt::format("{}: {} has no capacity", call, t.name), cs.loc);
      EventField chosen = *it;
      chosen.name = "";
      capture.fields.resize(first_value_field);
      capture.fields.push_back(chosen);
    } else {
      throw UserError("unsupported-expression",
                      fmt::format("{} needs a string, slice, map or channel; {} is {}", call, path, t.name),
                      cs.loc);
    }
    capture.go_type = "int";
  } else {
    capture.go_type = types.at(type).name;
    resolver.emit(place, type, "", path, cs.loc, capture, 0);
    // `m == nil`: the map or chan pointer, or the slice's array pointer (a nil slice has none; an
    // empty one made by make or [:0] has one), read as it is, hidden.
    const GoType &t = types.at(type);
    if (cs.nil_word && (t.kind == TypeKind::Map || t.kind == TypeKind::Chan || t.kind == TypeKind::Slice)) {
      uint64_t word = static_cast<uint64_t>(resolver.ptr_size());
      EventField nil;
      nil.name = "#nil";
      nil.kind = "pointer";
      nil.go_type = "unsafe.Pointer";
      nil.size = static_cast<uint32_t>(word);
      nil.hidden = true;
      nil.value = resolver.scalar(resolver.member(place, 0, word), word,
                                  t.kind == TypeKind::Slice ? path + ".array" : path, t.name, cs.loc);
      capture.fields.push_back(nil);
    }
  }
  // Behind a type assertion, every read waits for the dynamic type to be the asserted one.
  if (capture.assertion)
    for (size_t f = static_cast<size_t>(capture.assertion->type_field) + 1; f < capture.fields.size(); ++f) {
      // An interface's candidate types (contents) keep their own guard: their type word is read
      // only behind this one, so it stays zero, which is no descriptor, when this one fails.
      if (capture.fields[f].assert_field >= 0)
        continue;
      capture.fields[f].assert_field = capture.assertion->type_field;
      capture.fields[f].assert_type = capture.assertion->descriptor;
    }
  for (size_t f = static_cast<size_t>(slice_guard) + 1; slice_guard >= 0 && f < capture.fields.size(); ++f) {
    // A map's pairs keep their own guard: their count is 0 unless the walk (guarded) ran.
    if (capture.fields[f].guard_field >= 0)
      continue;
    capture.fields[f].guard_field = slice_guard;
    capture.fields[f].guard_index = slice_guard_index;
    capture.fields[f].guard_faults = true;
  }
  return capture;
}

} // namespace

// The layout's rule, cmd/compile's types.IsDirectIface before Go 1.26 (pointer-shaped types): the
// descriptor's KindDirectIface, where it is known, decides (AssertedType::direct_iface).
bool direct_iface(const TypeTable &types, TypeId id, int depth) {
  const GoType &t = types.at(id);
  switch (t.kind) {
  case TypeKind::Pointer:
  case TypeKind::UnsafePointer:
  case TypeKind::Map:
  case TypeKind::Chan:
  case TypeKind::Func:
    return true;
  case TypeKind::Array:
    return depth < 8 && t.count == 1 && t.elem != kNoType && direct_iface(types, t.elem, depth + 1);
  case TypeKind::Struct:
    return depth < 8 && t.fields.size() == 1 && direct_iface(types, t.fields[0].type, depth + 1);
  default:
    return false;
  }
}

EventPlan make_event(const std::string &kind, int probe_id, const std::vector<CaptureSpec> &explicit_captures,
                     const std::vector<CaptureSpec> &implicit_captures, const std::vector<NamedValue> &values,
                     const std::string &function, const char *what, const CaptureContext &context,
                     std::vector<std::string> &skipped) {
  Resolver resolver(context.types, context.regs, context.ptr_size, context.string_max, context.slice_max,
                    context.runtime);
  resolver.asserted_type = context.asserted_type;
  resolver.contents = context.contents;
  EventPlan event;
  event.kind = kind;
  event.program = fmt::format("probe_{}_{}", probe_id, kind);
  event.struct_name = fmt::format("probe_{}_{}_event", probe_id, kind);
  std::vector<CapturePlan> captures;
  auto captured = [&captures](const std::string &expr) {
    return std::any_of(captures.begin(), captures.end(), [&](const CapturePlan &c) { return c.expr == expr; });
  };
  // A value a condition compares with nil reads its header word too, however else it is listed.
  std::set<std::string> nil_words;
  for (const auto &cs : explicit_captures)
    if (cs.nil_word)
      nil_words.insert(cs.expr);
  auto with_nil = [&nil_words](CaptureSpec cs) {
    cs.nil_word = cs.nil_word || nil_words.count(cs.expr) > 0;
    return cs;
  };
  for (const auto &listed : implicit_captures) {
    const CaptureSpec cs = with_nil(listed);
    // Every output key must be unique (the tracer refuses a manifest that repeats one); DWARF can
    // list a name twice with different types, which the reader keeps.
    if (captured(cs.expr)) {
      skipped.push_back(fmt::format("{} {}: listed twice in DWARF; the first one is captured", what, cs.expr));
      continue;
    }
    std::vector<std::string> notes;
    resolver.set_implicit_notes(&notes);
    try {
      captures.push_back(resolve_capture(cs, values, function, what, resolver));
      for (const std::string &note : notes)
        skipped.push_back(fmt::format("{} {} [unsupported-map]", what, note));
    } catch (const UserError &e) {
      skipped.push_back(fmt::format("{} {}: {} [{}]", what, cs.expr, e.what(), e.id));
    }
    resolver.set_implicit_notes(nullptr);
  }
  // Every capture is resolved on its own, so one run reports each one that cannot be.
  std::vector<UserError> errors;
  for (const auto &cs : explicit_captures)
    if (!captured(cs.expr)) {
      try {
        captures.push_back(resolve_capture(with_nil(cs), values, function, what, resolver));
      } catch (const UserError &e) {
        errors.push_back(e);
      }
    }
  if (!errors.empty())
    throw combine_errors(std::move(errors));
  if (captures.size() > kMaxCaptures)
    throw UserError("too-many-captures",
                    fmt::format("{} captures {} values at its {}; at most {}", function,
                                captures.size(), kind, kMaxCaptures),
                    explicit_captures.empty() ? SourceLoc{} : explicit_captures.back().loc);
  uint32_t offset = kEventHeaderSize;
  if (kind == "return") {
    event.duration_offset = offset;
    offset += 8;
  }
  for (size_t i = 0; i < captures.size(); ++i) {
    captures[i].fault_bit = static_cast<int>(i);
    offset = layout_fields(captures[i], offset);
  }
  event.captures = std::move(captures);
  event.event_size = offset;
  return event;
}

} // namespace weave

namespace weave {

void add_at_return_captures(EventPlan &entry, EventPlan &ret, const std::vector<CaptureSpec> &captures,
                            const std::vector<NamedValue> &inputs, const std::vector<NamedValue> &results,
                            const std::string &function, const CaptureContext &context) {
  constexpr size_t kMaxSaved = 8; // values saved per call in flight (on the BPF stack without min_duration)
  Resolver resolver(context.types, context.regs, context.ptr_size, context.string_max, context.slice_max,
                    context.runtime);
  resolver.asserted_type = context.asserted_type;
  resolver.contents = context.contents;
  uint32_t offset = ret.event_size;
  for (const CaptureSpec &cs : captures) {
    std::string key = cs.expr + "@return";
    for (const CapturePlan &c : ret.captures)
      if (c.expr == key)
        throw UserError("duplicate-capture", fmt::format("{} is listed twice in capture_at_return", cs.expr), cs.loc);
    // A result ("~r0.Header.Revision", a named result) is where the ABI puts it at the RET, and is
    // read there like the results of return: true.
    CaptureExpr parsed = parse_capture_expr(cs.expr, cs.loc);
    auto names = [&parsed](const std::vector<NamedValue> &values) {
      return std::any_of(values.begin(), values.end(), [&](const NamedValue &v) { return v.name == parsed.root; });
    };
    if (!names(inputs) && !names(results)) {
      std::vector<std::string> params, outs, all;
      for (const NamedValue &v : inputs)
        if (v.name != kDictionaryParam)
          params.push_back(v.name);
      for (const NamedValue &v : results)
        outs.push_back(v.name);
      all = params;
      all.insert(all.end(), outs.begin(), outs.end());
      std::string hint = did_you_mean(parsed.root, all);
      throw UserError("unknown-parameter",
                      fmt::format("{} has no parameter or result {}", function, parsed.root),
                      advance(cs.loc, parsed.root_column),
                      (hint.empty() ? "" : hint + " ") + "parameters: " + (params.empty() ? "(none)" : join(params)) +
                          "; results: " + (outs.empty() ? "(none)" : join(outs)));
    }
    if (!names(inputs)) {
      CapturePlan capture = resolve_capture(cs, results, function, "result", resolver);
      capture.expr = key;
      capture.fault_bit = static_cast<int>(ret.captures.size());
      if (ret.captures.size() >= kMaxCaptures)
        throw UserError("too-many-captures",
                        fmt::format("{} captures more than {} values at its return", function, kMaxCaptures), cs.loc);
      offset = layout_fields(capture, offset);
      ret.captures.push_back(std::move(capture));
      continue;
    }
    CapturePlan capture = resolve_capture(cs, inputs, function, "parameter", resolver);
    // Each read becomes: the value it starts from, saved at the entry, then the loads after it,
    // made at the return. What is saved must be a pointer: at least one load must follow it.
    auto convert = [&](ValueRead &read, const std::string &what) {
      bool on_stack = read.base_reg == context.regs.sp;
      size_t saved_loads = on_stack ? 1 : 0;
      if (read.loads.size() <= saved_loads)
        throw UserError(
            "no-pointer-at-return",
            fmt::format("capture_at_return: {} has no pointer to follow: {} is read from the argument itself ({}), "
                        "not through a pointer, so at the return there is nothing to read it from (the argument "
                        "{} is reused by then) and the call could not have changed the caller's copy",
                        cs.expr, what, read.loads.empty() ? read.base_comment : read.loads.back().comment,
                        on_stack ? "stack slot" : "register"),
            cs.loc,
            "capture it at the entry with capture:, or name a value behind a pointer argument "
            "(a field of *T, an element of a slice)");
      ValueRead base;
      base.base_reg = read.base_reg;
      base.base_comment = read.base_comment;
      base.loads.assign(read.loads.begin(), read.loads.begin() + static_cast<long>(saved_loads));
      base.size = static_cast<uint32_t>(context.ptr_size);
      auto same = [&](const ValueRead &s) {
        if (s.base_reg != base.base_reg || s.loads.size() != base.loads.size())
          return false;
        return base.loads.empty() || (s.loads[0].offset == base.loads[0].offset && s.loads[0].size == base.loads[0].size);
      };
      auto it = std::find_if(entry.saved.begin(), entry.saved.end(), same);
      if (it == entry.saved.end()) {
        if (entry.saved.size() >= kMaxSaved)
          throw UserError("capture-too-large",
                          fmt::format("capture_at_return reads through more than {} different pointers", kMaxSaved),
                          cs.loc, "capture fewer values at the return");
        entry.saved.push_back(base);
        it = entry.saved.end() - 1;
      }
      read.saved = static_cast<int>(it - entry.saved.begin());
      read.base_comment = fmt::format("saved at the entry: {}", read.base_comment);
      read.base_reg.clear();
      read.loads.erase(read.loads.begin(), read.loads.begin() + static_cast<long>(saved_loads));
    };
    for (EventField &f : capture.fields) {
      if (f.kind == "empty")
        continue;
      std::string what = f.name.empty() ? cs.expr : cs.expr + " ." + f.name;
      convert(f.value, what);
      if (f.kind == "string")
        convert(f.length, what);
    }
    capture.expr = key;
    capture.fault_bit = static_cast<int>(ret.captures.size());
    if (ret.captures.size() >= kMaxCaptures)
      throw UserError("too-many-captures",
                      fmt::format("{} captures more than {} values at its return", function, kMaxCaptures), cs.loc);
    ret.at_return_faults |= 1ULL << capture.fault_bit;
    offset = layout_fields(capture, offset);
    ret.captures.push_back(std::move(capture));
  }
  ret.event_size = offset;
}

// Strings read together. net/http cuts a request's Method, RequestURI and Proto from one buffer
// (the request line) and URL.Path and RawQuery from RequestURI, so the bytes of an event's strings
// often lie within a few hundred bytes of each other, and on a kernel where every helper call costs
// 60-190 ns (bench/run.sh, step 6) one read of the span they cover is cheaper than one read each.
// So an event with two or more strings that can take part gets a string area, the record's last
// member: each such string's slot holds its length and the position of its bytes in the area. The
// area starts with a span of kStringSpan bytes, then a slot of its own for each string. The program
// takes the strings in capture order into one span [lowest pointer, highest pointer + copied
// length) as long as it stays within kStringSpan bytes (a string too far from the others keeps out,
// so one stray string, say a header's or the remote address, does not cost the others their
// shared read), reads the span once, and reads each string left out, or every one when that read
// faults, into its own slot: a fault marks exactly the captures it affects
// (templates/strings.bpf.c.mustache). A string never gets fewer bytes than string_max gives it.
//
// Left out: strings a when: or when_return: condition reads (compared at fixed offsets, before the
// others are read), speculative ones (an interface's text), slice elements and values behind a type
// assertion (read only when a guard holds), and captures with a map walk (which fills consecutive
// slots). This is the one place that lays a record out again, so the other record members keep
// their order: captures, then the stack (and the thread's stack window), then the area.
void place_strings(EventPlan &event, uint64_t conditioned) {
  auto capture_takes_part = [&](const CapturePlan &c) {
    if (c.fault_bit < 64 && (conditioned >> c.fault_bit & 1))
      return false;
    return std::none_of(c.fields.begin(), c.fields.end(),
                        [](const EventField &f) { return f.map_walk || f.by_walk; });
  };
  auto takes_part = [](const EventField &f) {
    return f.kind == "string" && !f.optional && f.guard_field < 0 && f.assert_field < 0 && f.max_len > 0;
  };
  size_t count = 0;
  for (const CapturePlan &c : event.captures)
    if (capture_takes_part(c))
      count += size_t(std::count_if(c.fields.begin(), c.fields.end(), takes_part));
  if (count < 2) // one string: one read either way
    return;
  uint32_t slots = 0;
  for (const CapturePlan &c : event.captures)
    if (capture_takes_part(c))
      for (const EventField &f : c.fields)
        if (takes_part(f))
          slots += round8(f.max_len);
  // The span: what a request line's strings need (net/http's are a few dozen bytes apart), and no
  // more than the slots would hold.
  constexpr uint32_t kStringSpan = 256;
  uint32_t offset = kEventHeaderSize + (event.duration_offset ? 8 : 0);
  event.strings_span = std::min(kStringSpan, slots);
  uint32_t area = event.strings_span;
  for (CapturePlan &c : event.captures) {
    bool part = capture_takes_part(c);
    for (EventField &f : c.fields) {
      f.offset = offset;
      if (part && takes_part(f)) {
        f.in_area = true;
        f.area_slot = area;
        area += round8(f.max_len);
        offset += 16; // length, position in the area
      } else {
        offset += f.kind == "string" ? 8 + round8(f.max_len) : f.kind == "empty" ? 0 : 8;
      }
    }
  }
  if (event.stack_depth) {
    offset = round8(offset);
    event.stack_offset = offset;
    offset += event.stack_window ? kStackWindowHeader + event.stack_window : 8 * event.stack_depth;
    if (event.thread_window) { // the thread's own stack, after the goroutine's (plan.cpp)
      event.thread_offset = offset;
      offset += kStackWindowHeader + event.thread_window;
    }
  }
  event.strings_offset = offset;
  event.strings_size = area;
  event.event_size = offset + 8 + area;
}

} // namespace weave
