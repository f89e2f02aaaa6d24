#include "plan/plan.h"

#include "abi/abi.h"
#include "binary/binary.h"
#include "debuginfo/debuginfo.h"
#include "disasm/disasm.h"
#include "plan/expr.h"
#include "plan/types.h"
#include "binary/pclntab.h"
#include "spec/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <fnmatch.h>
#include <functional>
#include <map>
#include <sstream>

namespace weave {

namespace {

constexpr uint32_t kEventHeaderSize = 48; // sizeof(struct weave_event_header), templates/weave_event.h
constexpr size_t kMaxCaptures = 64;       // one fault bit each in the header's `faults`
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
  };
  bool in_regs = false;
  std::vector<Piece> pieces;
  std::string base_reg;
  std::string base_comment;
  std::vector<LoadStep> loads;
  int64_t offset = 0;
};

// Resolver turns one probe's capture expressions into event fields.
class Resolver {
public:
  // Offsets inside runtime structures that a capture reads through (from DWARF).
  struct RuntimeLayout {
    std::optional<uint64_t> map_count;  // runtime.hmap.count (swiss maps: maps.Map.used)
    std::optional<uint64_t> chan_len;   // runtime.hchan.qcount
    std::optional<uint64_t> chan_cap;   // runtime.hchan.dataqsiz
    uint64_t itab_type = 8;             // runtime.itab._type: an iface's dynamic type
  };

  Resolver(TypeTable &types, const ArchRegisters &regs, int ptr_size, int string_max, int slice_max,
           RuntimeLayout runtime)
      : types_(types), regs_(regs), ptr_size_(ptr_size), string_max_(string_max),
        slice_max_(slice_max), runtime_(runtime) {}

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
      read.base_reg = place.pieces[0].reg;
      read.base_comment = fmt::format("{}: {} in {}", path, type_name, place.pieces[0].name);
      return read;
    }
    read.base_reg = place.base_reg;
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
      for (int i = 0; i < slice_max_; ++i) {
        size_t first = capture.fields.size();
        emit(member(data, static_cast<uint64_t>(i) * elem.size, elem.size), type.elem,
             items + "." + std::to_string(i), fmt::format("{}[{}]", path, i), loc, capture, depth + 1);
        for (size_t f = first; f < capture.fields.size(); ++f) {
          capture.fields[f].guard_field = len_index;
          capture.fields[f].guard_index = static_cast<uint64_t>(i);
        }
      }
      return;
    }
    case TypeKind::Array: {
      const GoType &elem = types_.at(type.elem);
      capture.lists.push_back({field_name, ""});
      uint64_t shown = std::min<uint64_t>(type.count, static_cast<uint64_t>(slice_max_));
      for (uint64_t i = 0; i < shown; ++i)
        emit(member(place, i * elem.size, elem.size), type.elem, join_name(field_name, std::to_string(i)),
             fmt::format("{}[{}]", path, i), loc, capture, depth + 1);
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

uint32_t layout_fields(CapturePlan &capture, uint32_t offset) {
  for (EventField &field : capture.fields) {
    field.offset = offset;
    offset += field.kind == "string" ? 8 + round8(field.max_len) : 8;
  }
  return offset;
}

// goid's offset in runtime.g when there is no DWARF for it: GO-ABI.md §5 (152 up to 1.22, 160 in
// 1.23 and 1.24 with g.syscallbp, 152 again from 1.25 when gobuf.ret went away).
uint64_t goid_offset_for(GoVersion v) {
  if (v.major == 1 && (v.minor == 23 || v.minor == 24))
    return 160;
  return 152;
}

} // namespace

namespace {

// A value the probe can name: a parameter at entry, or a result at a RET.
struct NamedValue {
  std::string name;
  TypeId type = kNoType;
  ParamLocation location;
};

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
  Place place = resolver.root_place(expr.root, type, root->location);
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
                          fmt::format("{}: index {} is out of range for {} ({} elements)", indexed, step.index,
                                      t->name, t->count),
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
    const GoField *field = nullptr;
    for (const GoField &f : t->fields)
      if (f.name == step.name)
        field = &f;
    if (!field) {
      auto names = field_names(*t);
      std::string hint = did_you_mean(step.name, names);
      throw UserError("unknown-field", fmt::format("{} ({}) has no field {}", path, t->name, step.name),
                      step_loc, (hint.empty() ? "" : hint + " ") + "fields: " + join(names));
    }
    place = resolver.member(place, field->offset, types.at(field->type).size);
    path += "." + step.name;
    type = field->type;
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
      resolver.emit(place, type, "", path, cs.loc, capture, 0); // {len} or {len, cap}
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
  }
  for (size_t f = first_value_field; slice_guard >= 0 && f < capture.fields.size(); ++f) {
    capture.fields[f].guard_field = slice_guard;
    capture.fields[f].guard_index = slice_guard_index;
    capture.fields[f].guard_faults = true;
  }
  return capture;
}

// Resolves the captures of one event and lays out its record. `implicit` captures (args: all,
// return: true) that cannot be captured are skipped with a note instead of failing the build.
EventPlan make_event(const std::string &kind, int probe_id, const std::vector<CaptureSpec> &explicit_captures,
                     const std::vector<CaptureSpec> &implicit_captures, const std::vector<NamedValue> &values,
                     const std::string &function, const char *what, Resolver &resolver,
                     std::vector<std::string> &skipped) {
  EventPlan event;
  event.kind = kind;
  event.program = fmt::format("probe_{}_{}", probe_id, kind);
  event.struct_name = fmt::format("probe_{}_{}_event", probe_id, kind);
  std::vector<CapturePlan> captures;
  auto captured = [&captures](const std::string &expr) {
    return std::any_of(captures.begin(), captures.end(), [&](const CapturePlan &c) { return c.expr == expr; });
  };
  for (const auto &cs : implicit_captures) {
    // Every output key must be unique (the tracer refuses a manifest that repeats one); DWARF can
    // list a name twice with different types, which the reader keeps.
    if (captured(cs.expr)) {
      skipped.push_back(fmt::format("{} {}: listed twice in DWARF; the first one is captured", what, cs.expr));
      continue;
    }
    try {
      captures.push_back(resolve_capture(cs, values, function, what, resolver));
    } catch (const UserError &e) {
      skipped.push_back(fmt::format("{} {}: {} [{}]", what, cs.expr, e.what(), e.id));
    }
  }
  for (const auto &cs : explicit_captures)
    if (!captured(cs.expr))
      captures.push_back(resolve_capture(cs, values, function, what, resolver));
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

} // namespace

namespace {

struct ExpandedProbe {
  ProbeSpec spec;          // with a concrete function name
  bool from_wildcard = false;
  std::string pattern;     // the wildcard that matched
};

// A Go method name has a literal '*' in its pointer receiver, "(*Server)": that one is not a
// wildcard, so it is escaped for fnmatch and does not make a name a pattern.
std::string receiver_escaped(const std::string &pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '*' && i > 0 && pattern[i - 1] == '(')
      out += '\\';
    out += pattern[i];
  }
  return out;
}

bool is_glob(const std::string &text) {
  std::string escaped = receiver_escaped(text);
  for (size_t i = 0; i < escaped.size(); ++i) {
    if (escaped[i] == '\\') {
      ++i;
      continue;
    }
    if (escaped[i] == '*' || escaped[i] == '?' || escaped[i] == '[')
      return true;
  }
  return false;
}

// Functions a wildcard leaves out unless the pattern names them itself: the runtime and internal
// packages (tracing them traces the tracer's own effect on every goroutine) and compiler-generated
// code by name (type equality/hash functions, method-value wrappers). The other generated wrappers
// (pointer-receiver and interface wrappers of methods, ABI wrappers) are told by their source file,
// "<autogenerated>": see expand_wildcards.
bool excluded_by_default(const std::string &name) {
  static const char *prefixes[] = {"runtime.", "runtime/", "internal/", "type..", "type:", "go.", "sync/atomic."};
  for (const char *prefix : prefixes)
    if (name.rfind(prefix, 0) == 0)
      return true;
  return name.size() > 3 && name.compare(name.size() - 3, 3, "-fm") == 0;
}

// `generated(name)`: the compiler wrote the function ("<autogenerated>"), so users did not; a
// wildcard never matches it (an exact name still can). Asked only of names a pattern matched.
std::vector<ExpandedProbe> expand_wildcards(const Spec &spec, const std::vector<std::string> &names,
                                            const std::function<bool(const std::string &)> &generated,
                                            std::vector<std::string> &warnings) {
  std::vector<ExpandedProbe> out;
  for (const ProbeSpec &probe : spec.probes) {
    if (!is_glob(probe.function)) {
      out.push_back({probe, false, ""});
      continue;
    }
    std::vector<std::string> matched;
    std::string pattern = receiver_escaped(probe.function);
    for (const std::string &name : names) {
      if (fnmatch(pattern.c_str(), name.c_str(), 0) != 0)
        continue;
      bool excluded = false;
      for (const auto &ex : probe.exclude)
        excluded = excluded || fnmatch(receiver_escaped(ex).c_str(), name.c_str(), 0) == 0;
      // A pattern that spells out an excluded prefix (runtime.*) opts in to it.
      if (excluded_by_default(name) && !excluded_by_default(probe.function))
        excluded = true;
      if (!excluded && generated(name))
        excluded = true;
      if (!excluded)
        matched.push_back(name);
    }
    if (matched.empty())
      throw UserError("no-match", fmt::format("no function matches {}", probe.function), probe.loc,
                      "patterns are shell globs over Go symbol names, e.g. 'main.*'; runtime and internal "
                      "functions match only a pattern that names them, compiler-generated ones only their "
                      "exact name");
    if (matched.size() > static_cast<size_t>(spec.options.max_functions))
      throw UserError("too-many-functions",
                      fmt::format("{} matches {} functions; the limit is {}", probe.function, matched.size(),
                                  spec.options.max_functions),
                      probe.loc, "narrow the pattern, add exclude: [...], or raise options.max_functions");
    for (const std::string &name : matched) {
      ExpandedProbe e{probe, true, probe.function};
      e.spec.function = name;
      e.spec.name = name;
      out.push_back(std::move(e));
    }
    if (!probe.captures.empty())
      warnings.push_back(fmt::format("{}: capture expressions apply to every matched function; those "
                                     "without such parameters are left out",
                                     probe.function));
  }
  return out;
}

// The function a probe names, from DWARF or, in a stripped binary, from .gopclntab.
struct ResolvedFunction {
  std::string name;
  uint64_t low_pc = 0, high_pc = 0;
  bool regabi = false;
  std::vector<GoParam> params; // from DWARF; empty without it
  int32_t pcln_args = -1;      // the compiler's argument-area size, when .gopclntab has it
};

std::string describe_params(const std::vector<GoParam> &params, const TypeTable &types) {
  std::string out;
  for (const auto &p : params)
    out += (out.empty() ? "" : ", ") + p.name + " " + types.at(p.type).name + (p.is_result ? " (result)" : "");
  return out.empty() ? "(none)" : out;
}

// Declared params must describe what DWARF says: same names, same kinds and sizes, in order.
void check_declared_against_dwarf(const std::vector<GoParam> &declared, const std::vector<GoParam> &dwarf,
                                  const TypeTable &types, const ProbeSpec &spec) {
  bool same = declared.size() == dwarf.size();
  for (size_t i = 0; same && i < declared.size(); ++i) {
    const GoType &a = types.at(declared[i].type), &b = types.at(dwarf[i].type);
    same = declared[i].name == dwarf[i].name && declared[i].is_result == dwarf[i].is_result &&
           a.kind == b.kind && a.size == b.size;
  }
  if (!same)
    throw UserError("params-mismatch",
                    fmt::format("the declared params of {} differ from its DWARF: declared {}; DWARF {}",
                                spec.function, describe_params(declared, types), describe_params(dwarf, types)),
                    spec.loc,
                    "DWARF leaves out blank (_) and unnamed parameters; otherwise fix the declaration or "
                    "drop it and let DWARF speak");
}

// The shape of an event's BPF program: everything the generated code depends on, and nothing it
// only mentions in comments (names, Go types, addresses). Equal shapes render equal code, which
// is what lets events share a program. Keep in step with codegen's program view: a value the
// template prints into code must be part of the key.
std::string program_shape(const ProbePlan &probe, const EventPlan &event) {
  std::string key = fmt::format("{} {} pairs={} size={} duration={} stack={}@{}\n", event.kind, probe.abi,
                                event.pairs_calls, event.event_size, event.duration_offset,
                                event.stack_depth, event.stack_offset);
  auto read_key = [&key](const ValueRead &read) {
    key += read.base_reg;
    for (const LoadStep &l : read.loads)
      key += fmt::format(" {}:{}{}", l.offset, l.size, l.skip_if_null ? "?" : "");
    key += fmt::format(" /{}", read.size);
  };
  for (const CapturePlan &c : event.captures) {
    key += fmt::format("capture bit={}\n", c.fault_bit);
    for (const EventField &f : c.fields) {
      key += fmt::format(" {} size={} at={} max={} guard={}>{}{} opt={} value=", f.kind, f.size, f.offset,
                         f.max_len, f.guard_field, f.guard_index, f.guard_faults ? "!" : "", f.optional);
      read_key(f.value);
      if (f.kind == "string") {
        key += " length=";
        read_key(f.length);
      }
      key += "\n";
    }
  }
  return key;
}

// Gives events of the same shape one program: named after, and declared with the record struct
// of, the first of them.
void share_programs(Plan &plan) {
  std::map<std::string, size_t> by_shape; // shape -> index into plan.programs
  for (ProbePlan &probe : plan.probes) {
    std::vector<EventPlan *> events = {&probe.entry};
    if (probe.ret)
      events.push_back(&*probe.ret);
    for (EventPlan *event : events) {
      auto [it, added] = by_shape.try_emplace(program_shape(probe, *event), plan.programs.size());
      if (added)
        plan.programs.push_back({event->program, event->struct_name, {}});
      ProgramPlan &program = plan.programs[it->second];
      program.events.push_back(event->id);
      event->program = program.name;
      event->struct_name = program.struct_name;
    }
  }
}

} // namespace

Plan make_plan(const Spec &spec, const BinaryImage &image, DebugInfo *debug, const Pclntab *pcln) {
  Plan plan;
  plan.target.path = image.path;
  plan.target.build_id = image.build_id;
  plan.target.go_version = image.buildinfo ? image.buildinfo->go_version : "unknown";
  plan.target.arch = arch_name(image.arch);
  plan.target.ptr_size = image.ptr_size;
  plan.string_max = spec.options.string_max;
  plan.header_size = kEventHeaderSize;

  GoVersion version = parse_go_version(plan.target.go_version);
  TargetAbi target = target_abi(plan.target.arch, version.major, version.minor);
  const ArchRegisters &regs = target.regs;
  CodeFacts (*analyze)(const std::vector<uint8_t> &, uint64_t) =
      image.arch == Arch::X86_64 ? analyze_x86_64 : image.arch == Arch::Arm64 ? analyze_arm64 : analyze_i386;
  // On an x86-64 kernel a 386 process's uprobe context is the 64-bit pt_regs as well.
  plan.ctx_type = image.arch == Arch::Arm64 ? "struct weave_pt_regs_arm64" : "struct weave_pt_regs_x86_64";

  // Without DWARF, types come from the spec and live here for the length of the plan.
  TypeTable declared_types;
  TypeTable &types = debug ? debug->types() : declared_types;
  auto member = [&](const char *type, const char *field) -> std::optional<uint64_t> {
    return debug ? debug->member_offset(type, field) : std::nullopt;
  };

  std::optional<uint64_t> dwarf_goid = member("runtime.g", "goid");
  if (dwarf_goid) {
    plan.goid_offset = *dwarf_goid;
    plan.goid_source = "DWARF runtime.g.goid";
  } else {
    plan.goid_offset = goid_offset_for(version);
    plan.goid_source = "table for " + plan.target.go_version;
  }
  plan.g_register = regs.g;
  plan.g_register_name = regs.g_name;
  plan.sp_register = regs.sp;
  plan.ip_register = image.arch == Arch::Arm64 ? "pc" : "ip";
  // ABI0 code finds g in thread-local storage (GO-ABI.md §5). x86 TLS is variant II: the static TLS
  // block ends at the segment base, and g is runtime.tlsg's slot in it. Without PT_TLS (the
  // internal linker, no cgo) the runtime uses the word just below the base: -8(FS) on amd64
  // (sys_linux_amd64.s), -4(GS) on 386 (setldt points GS 4 bytes past m.tls).
  auto g_in_tls = [&](int64_t internal_linker_offset, const char *segment) {
    plan.has_tls_g = true;
    if (image.tls_memsz) {
      uint64_t align = image.tls_align ? image.tls_align : 1;
      uint64_t block = (image.tls_memsz + align - 1) / align * align;
      plan.g_tls_offset = -static_cast<int64_t>(block) + static_cast<int64_t>(image.tlsg.value_or(0));
      plan.g_tls_source = fmt::format("PT_TLS block of {} bytes, runtime.tlsg at +{}", block, image.tlsg.value_or(0));
    } else {
      plan.g_tls_offset = internal_linker_offset;
      plan.g_tls_source = fmt::format("no PT_TLS: the runtime's {}({})", internal_linker_offset, segment);
    }
  };
  if (image.arch == Arch::X86_64)
    g_in_tls(-8, "FS");
  else if (image.arch == Arch::I386 && dwarf_goid)
    g_in_tls(-4, "GS"); // the version table's goid offsets are 64-bit ones: without DWARF, goid stays 0

  // Map and channel headers: from DWARF when present; without it, the layout every Go version
  // since 1.0 has kept (hmap.count and swiss Map.used first; hchan {qcount, dataqsiz, ...}).
  Resolver::RuntimeLayout runtime_layout;
  runtime_layout.map_count = member("runtime.hmap", "count");
  if (!runtime_layout.map_count) // Go 1.24+ swiss-table maps
    runtime_layout.map_count = member("internal/runtime/maps.Map", "used");
  runtime_layout.chan_len = member("runtime.hchan", "qcount");
  runtime_layout.chan_cap = member("runtime.hchan", "dataqsiz");
  if (auto off = member("runtime.itab", "_type"))
    runtime_layout.itab_type = *off;
  else if (auto abi_off = member("internal/abi.ITab", "Type")) // Go 1.21+
    runtime_layout.itab_type = *abi_off;
  else
    runtime_layout.itab_type = static_cast<uint64_t>(image.ptr_size);
  if (!debug) {
    runtime_layout.map_count = 0;
    runtime_layout.chan_len = 0;
    runtime_layout.chan_cap = static_cast<uint64_t>(image.ptr_size);
  }
  plan.slice_max = spec.options.slice_max;

  uint64_t cookie = 0;
  auto plan_probe = [&](const ProbeSpec &probe_spec, size_t index) -> ProbePlan {
    ResolvedFunction fn_info;
    const PclnFunction *pfn = pcln ? pcln->find(probe_spec.function) : nullptr;
    if (const GoFunction *dwarf_fn = debug ? debug->find_function(probe_spec.function) : nullptr) {
      fn_info = {dwarf_fn->name, dwarf_fn->low_pc, dwarf_fn->high_pc, dwarf_fn->regabi, dwarf_fn->params};
    } else if (pfn) {
      // No DWARF: Go code is ABIInternal wherever the version has it, assembly always ABI0.
      constexpr uint8_t kFuncFlagAsm = 4; // runtime/symtab.go funcFlag_ASM
      fn_info = {pfn->name, pfn->entry, pfn->end, !(pfn->flag & kFuncFlagAsm), {}};
    } else {
      std::vector<std::string> names;
      if (debug)
        names = debug->function_names();
      else if (pcln)
        for (const auto &f : pcln->functions())
          names.push_back(f.name);
      std::string hint = did_you_mean(probe_spec.function, names);
      throw UserError("unknown-function",
                      fmt::format("no function {} in {}", probe_spec.function, image.path),
                      probe_spec.loc,
                      hint.empty() ? "list the functions with: weave funcs " + image.path + " 'main.*'"
                                   : hint);
    }
    if (pfn && pfn->entry == fn_info.low_pc)
      fn_info.pcln_args = pfn->args;
    const ResolvedFunction *fn = &fn_info;

    // The parameters: declared in the spec (required without DWARF), else DWARF's.
    std::vector<GoParam> params = fn->params;
    if (probe_spec.has_params || probe_spec.has_results) {
      std::vector<GoParam> declared;
      for (const auto &p : probe_spec.params)
        declared.push_back({p.name, build_declared_type(p.type, types, image.ptr_size), false});
      for (const auto &r : probe_spec.results)
        declared.push_back({r.name, build_declared_type(r.type, types, image.ptr_size), true});
      if (!fn->params.empty() || debug) {
        std::vector<GoParam> dwarf_side;
        for (const auto &p : fn->params)
          if (probe_spec.has_results || !p.is_result)
            dwarf_side.push_back(p);
        if (probe_spec.has_params && !probe_spec.has_results)
          std::erase_if(declared, [](auto &p) { return p.is_result; });
        check_declared_against_dwarf(declared, dwarf_side, types, probe_spec);
      }
      if (!probe_spec.has_results)
        for (const auto &p : fn->params)
          if (p.is_result)
            declared.push_back(p);
      params = declared;
    } else if (!debug && (!probe_spec.captures.empty() || probe_spec.all_args || probe_spec.capture_return)) {
      throw UserError("no-dwarf-params",
                      fmt::format("{} has no DWARF, so weave cannot know the parameters of {}", image.path,
                                  probe_spec.function),
                      probe_spec.loc,
                      "declare them in order, receiver first: params: [{name: s, type: unsafe.Pointer}, "
                      "{name: path, type: string}] (and results: [...] with return: true)");
    }

    ProbePlan probe;
    probe.id = static_cast<int>(index);
    probe.name = probe_spec.name;
    probe.function = fn->name;
    probe.function_entry = fn->low_pc;
    probe.function_end = fn->high_pc;

    AbiConfig config = function_abi(target, fn->regabi);
    probe.abi = config.name;

    std::vector<NamedValue> inputs, results;
    std::vector<TypeId> input_types, result_types;
    for (const GoParam &p : params)
      (p.is_result ? result_types : input_types).push_back(p.type);
    FunctionLayout layout;
    try {
      layout = assign_locations(types, input_types, result_types, config);
    } catch (const std::invalid_argument &e) {
      throw UserError("unsupported-type", fmt::format("{}: {}", fn->name, e.what()), probe_spec.loc);
    }
    // The compiler recorded the size of the whole argument area: a signature that does not add up
    // to it is missing a parameter (DWARF omits blank and unnamed ones) and would read wrong values.
    // (Results take argument space too, so the check needs them: from DWARF, or declared.)
    bool know_signature = debug != nullptr || (probe_spec.has_params && probe_spec.has_results);
    if (fn->pcln_args >= 0 && know_signature && layout.arg_width != static_cast<uint64_t>(fn->pcln_args))
      throw UserError("signature-mismatch",
                      fmt::format("{}: the parameters ({}) take {} bytes of argument space, but the compiler "
                                  "recorded {} in .gopclntab: a parameter is missing or mistyped",
                                  fn->name, describe_params(params, types), layout.arg_width, fn->pcln_args),
                      probe_spec.loc,
                      "declare the full signature with params: [...] and results: [...], blank (_) and "
                      "unnamed parameters included");
    for (const GoParam &p : params) {
      auto &list = p.is_result ? results : inputs;
      const auto &locs = p.is_result ? layout.results : layout.inputs;
      list.push_back({p.name, p.type, locs.at(list.size())});
    }

    // Where to attach: the decoded body says where the stack-growth check ends (so the entry probe
    // fires once per call) and where every RET is.
    std::vector<uint8_t> code = read_bytes(image, fn->low_pc, fn->high_pc - fn->low_pc);
    CodeFacts facts = analyze(code, fn->low_pc);
    if (!facts.error.empty())
      throw UserError("undecodable-function", fmt::format("{}: {}", fn->name, facts.error), probe_spec.loc);
    auto add_attach = [&](const std::string &kind, uint64_t vaddr, const std::string &note) {
      auto offset = file_offset(image, vaddr);
      if (!offset)
        throw UserError("bad-address",
                        fmt::format("{} at {:#x} is outside every loadable segment of {}", fn->name,
                                    vaddr, image.path),
                        probe_spec.loc);
      probe.attach.push_back({kind, vaddr, *offset, cookie++, note});
    };
    if (facts.after_stack_check)
      add_attach("entry", *facts.after_stack_check,
                 fmt::format("after the stack-growth check (function starts at {:#x}): a call that "
                             "grows its stack re-runs the entry, and this point sees it once",
                             fn->low_pc));
    else
      add_attach("entry", fn->low_pc, "function entry (no stack-growth check: a small leaf)");

    Resolver resolver(types, regs, image.ptr_size, spec.options.string_max,
                      spec.options.slice_max, runtime_layout);
    std::vector<CaptureSpec> all_args;
    if (probe_spec.all_args)
      for (const auto &in : inputs)
        all_args.push_back({in.name, probe_spec.all_args_loc});
    probe.entry = make_event("entry", probe.id, probe_spec.captures, all_args, inputs, fn->name,
                             "parameter", resolver, probe.skipped);
    if (probe_spec.stack > 0) {
      // Go keeps frame pointers on amd64 and arm64; the walk starts from the return address (at SP,
      // or in LR) and the caller's frame pointer, since the entry probe runs before the function
      // saves its own. 386 has no frame pointers.
      if (image.arch != Arch::X86_64 && image.arch != Arch::Arm64)
        throw UserError("unsupported-stack",
                        fmt::format("stack: traces are walked through frame pointers, which Go keeps on amd64 "
                                    "and arm64 only, and {} is {}",
                                    image.path, arch_name(image.arch)),
                        probe_spec.loc);
      probe.entry.stack_depth = static_cast<uint32_t>(probe_spec.stack);
      probe.entry.stack_offset = probe.entry.event_size;
      probe.entry.event_size += 8 * probe.entry.stack_depth;
    }

    if (probe_spec.capture_return) {
      if (facts.returns.empty())
        throw UserError("no-return", fmt::format("{} has no RET instruction to probe (it never returns, "
                                                 "or only tail-calls)", fn->name),
                        probe_spec.loc);
      for (uint64_t ret : facts.returns)
        add_attach("return", ret, "RET");
      std::vector<CaptureSpec> all_results;
      for (const auto &r : results)
        all_results.push_back({r.name, probe_spec.loc});
      probe.ret = make_event("return", probe.id, {}, all_results, results, fn->name, "result",
                             resolver, probe.skipped);
      // Pairing needs g: in a register in ABIInternal code, in TLS for amd64 ABI0 code.
      probe.entry.pairs_calls = probe.ret->pairs_calls = config.name == "ABIInternal" || plan.has_tls_g;
    }
    return probe;
  };

  // Wildcards expand to one probe per matching function; a function a wildcard picked that cannot
  // be probed is left out with a warning, while a function named exactly must work or stop the build.
  std::vector<std::string> names;
  if (debug)
    names = debug->function_names();
  else if (pcln)
    for (const auto &f : pcln->functions())
      names.push_back(f.name);
  auto generated = [pcln](const std::string &name) {
    const PclnFunction *fn = pcln ? pcln->find(name) : nullptr;
    if (!fn)
      return false;
    std::vector<Pclntab::Frame> frames = pcln->symbolize(fn->entry, true);
    return !frames.empty() && frames.back().file == "<autogenerated>";
  };
  for (const ExpandedProbe &expanded : expand_wildcards(spec, names, generated, plan.warnings)) {
    try {
      plan.probes.push_back(plan_probe(expanded.spec, plan.probes.size()));
    } catch (const UserError &e) {
      if (!expanded.from_wildcard)
        throw;
      plan.warnings.push_back(fmt::format("{} (matched by {}) left out: {} [{}]", expanded.spec.function,
                                          expanded.pattern, e.what(), e.id));
    }
  }
  bool has_interface = false;
  for (const auto &probe : plan.probes) {
    for (const auto &c : probe.entry.captures)
      has_interface = has_interface || !c.interfaces.empty();
    if (probe.ret)
      for (const auto &c : probe.ret->captures)
        has_interface = has_interface || !c.interfaces.empty();
  }
  if (has_interface && debug && image.types_base) {
    static const char *kinds[] = {"invalid", "bool",      "int",        "int8",      "int16",  "int32",
                                  "int64",   "uint",      "uint8",      "uint16",    "uint32", "uint64",
                                  "uintptr", "float32",   "float64",    "complex64", "complex128",
                                  "array",   "chan",      "func",       "interface", "map",    "ptr",
                                  "slice",   "string",    "struct",     "unsafe.Pointer"};
    // DWARF's go_runtime_type is an offset from runtime.types (cmd/link dwarf.go, dwarfaddr).
    for (const RuntimeType &t : debug->runtime_types())
      plan.runtime_types.push_back({*image.types_base + t.address, t.name,
                                    t.kind < 27 ? kinds[t.kind] : "invalid", t.size});
  }
  if (plan.probes.empty())
    throw UserError("no-probes", "every function the spec's wildcards matched was left out", SourceLoc{spec.path},
                    plan.warnings.empty() ? "" : plan.warnings.front());
  // Every event is its own entry in the manifest, and its index there is the probe_id its BPF
  // program writes into the event header (from the attach point's cookie).
  int next_id = 0;
  for (size_t p = 0; p < plan.probes.size(); ++p) {
    ProbePlan &probe = plan.probes[p];
    probe.entry.id = next_id++;
    plan.event_probe.push_back(p);
    if (probe.ret) {
      probe.ret->id = next_id++;
      plan.event_probe.push_back(p);
    }
    size_t entries = 0, returns = 0;
    for (AttachPoint &a : probe.attach)
      a.cookie = a.kind == "entry" ? attach_cookie(probe.entry.id, probe.entry.id, entries++)
                                   : attach_cookie(probe.ret->id, probe.entry.id, returns++);
    if (returns > kMaxPointsPerEvent)
      throw UserError("too-many-returns",
                      fmt::format("{} has {} RET instructions; weave probes at most {} per function",
                                  probe.function, returns, kMaxPointsPerEvent));
  }
  if (next_id > kMaxEvents)
    throw UserError("too-many-events",
                    fmt::format("the spec makes {} events; weave supports at most {}", next_id, kMaxEvents),
                    SourceLoc{spec.path}, "narrow the wildcards, or split the spec");
  share_programs(plan);
  return plan;
}

uint64_t attach_cookie(int event_id, int pair_id, size_t point) {
  return static_cast<uint64_t>(point) << 48 | static_cast<uint64_t>(pair_id) << 24 | static_cast<uint64_t>(event_id);
}

const EventPlan &Plan::event(int id) const {
  const ProbePlan &probe = probe_of_event(id);
  return probe.entry.id == id ? probe.entry : *probe.ret;
}

const ProbePlan &Plan::probe_of_event(int id) const {
  return probes.at(event_probe.at(static_cast<size_t>(id)));
}

size_t Plan::event_count() const {
  size_t n = 0;
  for (const auto &probe : probes)
    n += probe.ret ? 2 : 1;
  return n;
}

std::string dump_plan(const Plan &plan) {
  std::ostringstream out;
  out << fmt::format("target {} build_id={} go={} arch={} ptr_size={}\n", plan.target.path,
                     plan.target.build_id, plan.target.go_version, plan.target.arch,
                     plan.target.ptr_size);
  out << fmt::format("goid *({} + {}) from {}\n", plan.g_register_name, plan.goid_offset,
                     plan.goid_source);
  if (plan.has_tls_g)
    out << fmt::format("g in ABI0 code at {}{:+#x} ({})\n", plan.target.arch == "386" ? "GS" : "FS",
                       plan.g_tls_offset, plan.g_tls_source);
  auto read_text = [](const ValueRead &r) {
    std::string text = r.base_reg;
    for (const auto &l : r.loads)
      text = fmt::format("*{}({} + {})", l.size, text, l.offset);
    return text;
  };
  for (const auto &probe : plan.probes) {
    out << fmt::format("probe {} {} {} function=[{:#x}, {:#x})\n", probe.id, probe.name, probe.abi,
                       probe.function_entry, probe.function_end);
    for (const auto &a : probe.attach)
      out << fmt::format("  attach {} vaddr={:#x} file_offset={:#x} cookie={} ({})\n", a.kind,
                         a.vaddr, a.file_offset, a.cookie, a.note);
    for (const auto &skip : probe.skipped)
      out << "  skipped " << skip << "\n";
    std::vector<const EventPlan *> events = {&probe.entry};
    if (probe.ret)
      events.push_back(&*probe.ret);
    for (const EventPlan *event : events) {
      out << fmt::format("  event {} program={} event_size={}\n", event->kind, event->program,
                         event->event_size);
      for (const auto &c : event->captures) {
        out << fmt::format("    capture {} : {} fault_bit={}\n", c.expr, c.go_type, c.fault_bit);
        for (const auto &f : c.fields) {
          out << fmt::format("      field '{}' {} {} size={} offset={}", f.name, f.kind, f.go_type,
                             f.size, f.offset);
          out << " value=" << read_text(f.value);
          if (f.kind == "string")
            out << fmt::format(" length={} max_len={}", read_text(f.length), f.max_len);
          out << "\n";
        }
      }
    }
  }
  for (const auto &program : plan.programs) {
    out << fmt::format("program {} events", program.name);
    for (int id : program.events)
      out << " " << id;
    out << "\n";
  }
  return out.str();
}

} // namespace weave
