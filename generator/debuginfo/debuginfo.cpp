// Stage 3 — debuginfo: Go functions, parameters and types from DWARF, read with libdw.
//
// What Go's linker writes is described in GO-ABI.md §4 (go1.19: cmd/link/internal/ld/dwarf.go,
// cmd/internal/dwarf/dwarf.go). libdw lifetime rules: a Dwarf_Die is a cursor into the mapped
// file, valid while the Dwarf handle lives; we keep only DIE offsets and re-fetch with
// dwarf_offdie.
#include "debuginfo/debuginfo.h"

#include "common/diag.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>
#include <unordered_map>

namespace weave {

namespace {

// Go's own DWARF attributes (go1.19: cmd/internal/dwarf/dwarf.go:311-324; GO-ABI.md §4.5).
constexpr unsigned kAttrGoKind = 0x2900;
constexpr unsigned kAttrGoKey = 0x2901;
constexpr unsigned kAttrGoElem = 0x2902;
constexpr unsigned kAttrGoEmbeddedField = 0x2903;
constexpr unsigned kAttrGoRuntimeType = 0x2904;

// reflect.Kind numbers, as DW_AT_go_kind carries them.
enum GoKind : uint64_t {
  kKindBool = 1,
  kKindInt = 2,
  kKindInt8 = 3,
  kKindInt16 = 4,
  kKindInt32 = 5,
  kKindInt64 = 6,
  kKindUint = 7,
  kKindUint8 = 8,
  kKindUint16 = 9,
  kKindUint32 = 10,
  kKindUint64 = 11,
  kKindUintptr = 12,
  kKindFloat32 = 13,
  kKindFloat64 = 14,
  kKindComplex64 = 15,
  kKindComplex128 = 16,
  kKindArray = 17,
  kKindChan = 18,
  kKindFunc = 19,
  kKindInterface = 20,
  kKindMap = 21,
  kKindPtr = 22,
  kKindSlice = 23,
  kKindString = 24,
  kKindStruct = 25,
  kKindUnsafePointer = 26,
};

// A typedef chain longer than this is a cycle in corrupt DWARF.
constexpr int kMaxTypedefHops = 64;

std::optional<uint64_t> attr_udata(Dwarf_Die *die, unsigned name) {
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (!dwarf_attr(die, name, &attr) || dwarf_formudata(&attr, &value) != 0)
    return std::nullopt;
  return value;
}

bool attr_ref(Dwarf_Die *die, unsigned name, Dwarf_Die *out) {
  Dwarf_Attribute attr;
  return dwarf_attr(die, name, &attr) && dwarf_formref_die(&attr, out);
}

bool attr_flag(Dwarf_Die *die, unsigned name, bool integrate) {
  Dwarf_Attribute attr;
  bool value = false;
  Dwarf_Attribute *found =
      integrate ? dwarf_attr_integrate(die, name, &attr) : dwarf_attr(die, name, &attr);
  return found && dwarf_formflag(found, &value) == 0 && value;
}

std::string die_name(Dwarf_Die *die) {
  Dwarf_Attribute attr;
  const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  return name ? name : "";
}

// DW_AT_data_member_location: a constant in Go's DWARF; DW_OP_plus_uconst from other producers.
std::optional<uint64_t> member_location(Dwarf_Die *member) {
  Dwarf_Attribute attr;
  if (!dwarf_attr(member, DW_AT_data_member_location, &attr))
    return 0; // DWARF: no location means offset 0
  switch (dwarf_whatform(&attr)) {
  case DW_FORM_exprloc:
  case DW_FORM_block:
  case DW_FORM_block1:
  case DW_FORM_block2:
  case DW_FORM_block4: {
    Dwarf_Op *ops = nullptr;
    size_t count = 0;
    if (dwarf_getlocation(&attr, &ops, &count) == 0 && count == 1 &&
        ops[0].atom == DW_OP_plus_uconst)
      return ops[0].number;
    return std::nullopt;
  }
  default: {
    Dwarf_Word value = 0;
    if (dwarf_formudata(&attr, &value) != 0)
      return std::nullopt;
    return value;
  }
  }
}

bool is_type_tag(int tag) {
  switch (tag) {
  case DW_TAG_base_type:
  case DW_TAG_typedef:
  case DW_TAG_structure_type:
  case DW_TAG_pointer_type:
  case DW_TAG_array_type:
  case DW_TAG_subroutine_type:
  case DW_TAG_union_type:
  case DW_TAG_enumeration_type:
  case DW_TAG_unspecified_type:
    return true;
  default:
    return false;
  }
}

std::string hex(uint64_t value) {
  char buffer[24];
  snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// DwarfDebugInfo implements DebugInfo over one file, keeping the descriptor, the libelf handle
// and the libdw handle open for its lifetime (libdw reads lazily from the mapping).
class DwarfDebugInfo final : public DebugInfo {
public:
  DwarfDebugInfo(std::string path, int ptr_size, int fd, Elf *elf, Dwarf *dwarf)
      : path_(std::move(path)), ptr_size_(static_cast<uint64_t>(ptr_size)), fd_(fd), elf_(elf),
        dwarf_(dwarf) {}
  ~DwarfDebugInfo() override {
    dwarf_end(dwarf_);
    elf_end(elf_);
    close(fd_);
  }

  const GoFunction *find_function(const std::string &name) override;
  const std::vector<std::string> &function_names() override;
  std::optional<uint64_t> member_offset(const std::string &type_name,
                                        const std::string &member) override;
  std::optional<TypeId> find_type(const std::string &type_name) override;
  std::vector<std::string> type_names() override;
  TypeTable &types() override { return types_; }
  std::vector<RuntimeType> runtime_types() override;

private:
  struct FunctionEntry {
    Dwarf_Off die = 0;
    size_t cu = 0; // index into producers_
  };
  struct TypeEntry {
    Dwarf_Off die = 0;
    bool typedef_ = false;
  };

  [[noreturn]] void dwarf_fail(const std::string &what) const {
    throw UserError("bad-dwarf", path_ + ": " + what + ": " + dwarf_errmsg(-1),
                    SourceLoc{path_, 0, 0});
  }
  Dwarf_Die offdie(Dwarf_Off offset) const {
    Dwarf_Die die;
    if (!dwarf_offdie(dwarf_, offset, &die))
      dwarf_fail("cannot read DIE " + hex(offset));
    return die;
  }

  void ensure_index();
  TypeId convert(Dwarf_Die *die);
  GoType build(Dwarf_Die *die);
  uint64_t align_of(TypeId id, std::vector<uint8_t> &state);

  std::string path_;
  uint64_t ptr_size_;
  int fd_;
  Elf *elf_;
  Dwarf *dwarf_;

  bool indexed_ = false;
  std::vector<std::string> producers_;
  std::unordered_map<std::string, FunctionEntry> function_index_;
  std::vector<std::string> function_names_;
  std::unordered_map<std::string, TypeEntry> type_index_;
  std::unordered_map<std::string, Dwarf_Off> struct_index_;
  std::map<uint64_t, Dwarf_Off> runtime_type_index_; // descriptor address -> first DIE naming it
  std::unordered_map<std::string, std::unique_ptr<GoFunction>> functions_;

  TypeTable types_;
  std::unordered_map<Dwarf_Off, TypeId> type_memo_;
  std::deque<std::pair<TypeId, Dwarf_Off>> pending_;
  bool draining_ = false;
};

// One pass over the top level of every CU: Go puts functions and types there, never nested
// (closures are top-level subprograms named "pkg.outer.func1").
void DwarfDebugInfo::ensure_index() {
  if (indexed_)
    return;
  Dwarf_CU *cu = nullptr;
  Dwarf_Die cu_die, sub_die;
  uint8_t unit_type = 0;
  int status;
  while ((status = dwarf_get_units(dwarf_, cu, &cu, nullptr, &unit_type, &cu_die, &sub_die)) == 0) {
    Dwarf_Attribute attr;
    const char *producer = dwarf_formstring(dwarf_attr(&cu_die, DW_AT_producer, &attr));
    size_t cu_index = producers_.size();
    producers_.emplace_back(producer ? producer : "");

    Dwarf_Die child;
    int more = dwarf_child(&cu_die, &child);
    if (more < 0)
      dwarf_fail("cannot read the children of CU " + hex(dwarf_dieoffset(&cu_die)));
    for (; more == 0; more = dwarf_siblingof(&child, &child)) {
      int tag = dwarf_tag(&child);
      if (tag == DW_TAG_subprogram) {
        // Only concrete, out-of-line bodies can be probed: an abstract DIE (DW_AT_inline, no
        // low_pc) describes a function that was only inlined (GO-ABI.md §4.1). Concrete copies of
        // inlined functions carry DW_AT_abstract_origin instead of a name, hence the integrate.
        Dwarf_Addr low = 0;
        if (dwarf_lowpc(&child, &low) != 0)
          continue;
        std::string name = die_name(&child);
        if (!name.empty())
          function_index_.emplace(name, FunctionEntry{dwarf_dieoffset(&child), cu_index});
      } else if (is_type_tag(tag)) {
        const char *name = dwarf_diename(&child);
        if (!name)
          continue;
        // Named Go types appear as a typedef and a struct of the same name (GO-ABI.md §4.5):
        // find_type prefers the typedef, member_offset wants the struct.
        bool is_typedef = tag == DW_TAG_typedef;
        auto [it, inserted] =
            type_index_.emplace(name, TypeEntry{dwarf_dieoffset(&child), is_typedef});
        if (!inserted && is_typedef && !it->second.typedef_)
          it->second = TypeEntry{dwarf_dieoffset(&child), true};
        if (tag == DW_TAG_structure_type)
          struct_index_.emplace(name, dwarf_dieoffset(&child));
        // DW_FORM_addr, relative to runtime.types (the linker writes the type symbol's offset).
        Dwarf_Attribute rt;
        Dwarf_Addr address = 0;
        if (dwarf_attr(&child, kAttrGoRuntimeType, &rt) &&
            (dwarf_formaddr(&rt, &address) == 0 || dwarf_formudata(&rt, &address) == 0) && address)
          runtime_type_index_.emplace(address, dwarf_dieoffset(&child));
      }
    }
    if (more < 0)
      dwarf_fail("cannot walk CU " + hex(dwarf_dieoffset(&cu_die)));
  }
  if (status < 0)
    dwarf_fail("cannot read compile units");

  function_names_.reserve(function_index_.size());
  for (const auto &entry : function_index_)
    function_names_.push_back(entry.first);
  std::sort(function_names_.begin(), function_names_.end());
  indexed_ = true;
}

const GoFunction *DwarfDebugInfo::find_function(const std::string &name) {
  ensure_index();
  if (auto cached = functions_.find(name); cached != functions_.end())
    return cached->second.get();
  auto found = function_index_.find(name);
  if (found == function_index_.end())
    return nullptr;

  Dwarf_Die die = offdie(found->second.die);
  auto fn = std::make_unique<GoFunction>();
  fn->name = name;
  Dwarf_Addr low = 0, high = 0;
  if (dwarf_lowpc(&die, &low) != 0)
    dwarf_fail("no low_pc for " + name);
  // dwarf_highpc resolves both the DWARF 4 address form and the DWARF 5 offset form.
  if (dwarf_highpc(&die, &high) != 0)
    high = low;
  fn->low_pc = low;
  fn->high_pc = high;
  fn->producer = producers_[found->second.cu];
  // go1.19: cmd/compile/internal/dwarfgen/dwarf.go:555-561 appends "regabi" to the producer of
  // CUs compiled with register arguments (GO-ABI.md §2.2).
  static constexpr std::string_view kRegabi = "regabi";
  fn->regabi =
      fn->producer.size() >= kRegabi.size() &&
      fn->producer.compare(fn->producer.size() - kRegabi.size(), kRegabi.size(), kRegabi) == 0;

  Dwarf_Die child;
  int more = dwarf_child(&die, &child);
  for (; more == 0; more = dwarf_siblingof(&child, &child)) {
    if (dwarf_tag(&child) != DW_TAG_formal_parameter)
      continue;
    GoParam param;
    param.name = die_name(&child);
    // DW_AT_variable_parameter: 0 = input, 1 = result (GO-ABI.md §4.1).
    param.is_result = attr_flag(&child, DW_AT_variable_parameter, true);
    Dwarf_Attribute attr;
    Dwarf_Die type_die;
    if (dwarf_attr_integrate(&child, DW_AT_type, &attr) && dwarf_formref_die(&attr, &type_die))
      param.type = convert(&type_die);
    // go1.19 dwarfgen/dwarf.go:160-170 re-adds register results the frame pass pruned, and some
    // end up listed twice: the same name, the same type (cmd/compile's
    // ssa.(*expandState).newArgToMemOrRegs has two "~r0 *Value" for its one result). Taken as two
    // results, the second would be read from a register that holds no result: drop the copy.
    bool copy = false;
    for (const GoParam &seen : fn->params)
      copy = copy || (param.is_result && seen.is_result && seen.name == param.name && seen.type == param.type);
    if (copy)
      continue;
    fn->params.push_back(std::move(param));
  }
  if (more < 0)
    dwarf_fail("cannot read the parameters of " + name);

  const GoFunction *result = fn.get();
  functions_.emplace(name, std::move(fn));
  return result;
}

const std::vector<std::string> &DwarfDebugInfo::function_names() {
  ensure_index();
  return function_names_;
}

std::optional<uint64_t> DwarfDebugInfo::member_offset(const std::string &type_name,
                                                      const std::string &member) {
  ensure_index();
  Dwarf_Die type_die;
  if (auto it = struct_index_.find(type_name); it != struct_index_.end()) {
    type_die = offdie(it->second);
  } else if (auto named = type_index_.find(type_name); named != type_index_.end()) {
    Dwarf_Die die = offdie(named->second.die);
    if (dwarf_peel_type(&die, &type_die) != 0)
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (dwarf_tag(&type_die) != DW_TAG_structure_type)
    return std::nullopt;
  Dwarf_Die child;
  for (int more = dwarf_child(&type_die, &child); more == 0; more = dwarf_siblingof(&child, &child))
    if (dwarf_tag(&child) == DW_TAG_member && die_name(&child) == member)
      return member_location(&child);
  return std::nullopt;
}

std::vector<RuntimeType> DwarfDebugInfo::runtime_types() {
  ensure_index();
  std::vector<RuntimeType> out;
  for (const auto &[address, offset] : runtime_type_index_) {
    Dwarf_Die die = offdie(offset);
    RuntimeType t;
    t.address = address;
    t.name = dwarf_diename(&die) ? dwarf_diename(&die) : "";
    Dwarf_Attribute attr;
    Dwarf_Word value = 0;
    if (dwarf_attr(&die, kAttrGoKind, &attr) && dwarf_formudata(&attr, &value) == 0)
      t.kind = value;
    if (dwarf_attr(&die, DW_AT_byte_size, &attr) && dwarf_formudata(&attr, &value) == 0)
      t.size = value;
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> DwarfDebugInfo::type_names() {
  ensure_index();
  std::vector<std::string> names;
  names.reserve(type_index_.size());
  for (const auto &entry : type_index_)
    names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<TypeId> DwarfDebugInfo::find_type(const std::string &type_name) {
  ensure_index();
  auto it = type_index_.find(type_name);
  if (it == type_index_.end())
    return std::nullopt;
  Dwarf_Die die = offdie(it->second.die);
  return convert(&die);
}

// Types are converted breadth-first through a work queue rather than by recursion: a reference
// gets its TypeId (and memo entry) at once and is built later, so recursive types terminate and
// deep type graphs (runtime.g reaches most of the runtime) cannot exhaust the stack. Alignments
// depend on by-value members only and are computed once the queue is empty.
TypeId DwarfDebugInfo::convert(Dwarf_Die *die) {
  Dwarf_Off offset = dwarf_dieoffset(die);
  if (auto it = type_memo_.find(offset); it != type_memo_.end())
    return it->second;
  TypeId id = types_.add(GoType{});
  type_memo_.emplace(offset, id);
  pending_.emplace_back(id, offset);
  if (draining_)
    return id;

  draining_ = true;
  size_t first_new = static_cast<size_t>(id);
  try {
    while (!pending_.empty()) {
      auto [next_id, next_offset] = pending_.front();
      pending_.pop_front();
      Dwarf_Die next = offdie(next_offset);
      GoType built = build(&next);
      types_.at(next_id) = std::move(built);
    }
    // 0 = not computed, 1 = in progress (a by-value cycle only corrupt DWARF can make), 2 = done.
    std::vector<uint8_t> state(types_.size() - first_new, 0);
    for (size_t i = first_new; i < types_.size(); ++i)
      align_of(static_cast<TypeId>(i), state);
  } catch (...) {
    pending_.clear();
    draining_ = false;
    throw;
  }
  draining_ = false;
  return id;
}

// GO-ABI.md §1.3: arrays align like their element, structs like their widest field (1 if empty);
// everything else got its alignment in build().
uint64_t DwarfDebugInfo::align_of(TypeId id, std::vector<uint8_t> &state) {
  GoType &type = types_.at(id);
  if (type.kind != TypeKind::Array && type.kind != TypeKind::Struct)
    return type.align;
  size_t base = types_.size() - state.size();
  if (static_cast<size_t>(id) < base)
    return type.align; // converted by an earlier call: already final
  uint8_t &mark = state[static_cast<size_t>(id) - base];
  if (mark == 2)
    return type.align;
  if (mark == 1)
    return 1;
  mark = 1;
  uint64_t align = 1;
  if (type.kind == TypeKind::Array) {
    if (type.elem != kNoType)
      align = align_of(type.elem, state);
  } else {
    for (size_t f = 0; f < types_.at(id).fields.size(); ++f) {
      TypeId field_type = types_.at(id).fields[f].type;
      if (field_type != kNoType)
        align = std::max(align, align_of(field_type, state));
    }
  }
  state[static_cast<size_t>(id) - base] = 2;
  types_.at(id).align = align;
  return align;
}

// The shape of one type DIE. References to other types go through convert(), which only hands
// out ids here (we are inside the drain loop).
GoType DwarfDebugInfo::build(Dwarf_Die *die) {
  GoType type;
  std::string outer_name = die_name(die);

  // Peel typedefs. Go emits a typedef and a struct for every named type, and puts go_kind (and
  // go_key/go_elem) on the typedef for maps, chans and interfaces, whose underlying DIE is a
  // pointer or runtime struct (GO-ABI.md §4.5). The outermost go_kind wins; the name is the
  // outermost one ("main.Header", "error"); the shape comes from the underlying DIE.
  Dwarf_Die under = *die;
  Dwarf_Die kind_die = *die;
  uint64_t go_kind = 0;
  // A generic shape instance types its parameters with ".param0"-style typedefs (carrying
  // DW_AT_go_dict_index) of a shape ("go.shape.int_0"): the user sees the type the shape stands for.
  const bool dict_typedef = outer_name.starts_with(".param") && dwarf_tag(die) == DW_TAG_typedef;
  for (int hops = 0;; ++hops) {
    if (go_kind == 0) {
      if (auto kind = attr_udata(&under, kAttrGoKind); kind && *kind != 0) {
        go_kind = *kind;
        kind_die = under;
      }
    }
    if (dwarf_tag(&under) != DW_TAG_typedef)
      break;
    Dwarf_Die target;
    if (hops >= kMaxTypedefHops || !attr_ref(&under, DW_AT_type, &target)) {
      type.name = outer_name.empty() ? "<typedef without a target>" : outer_name;
      return type; // Unsupported
    }
    under = target;
    if (hops == 0 && dict_typedef)
      outer_name = die_name(&under);
  }
  outer_name = go_shape_spelling(outer_name);
  int tag = dwarf_tag(&under);
  std::string under_name = go_shape_spelling(die_name(&under));
  type.name = outer_name.empty() ? under_name : outer_name;
  uint64_t byte_size = attr_udata(&under, DW_AT_byte_size).value_or(0);

  // The kind: DW_AT_go_kind when present, else the DWARF tag and encoding (synthetic types such
  // as unsafe.Pointer or *runtime._type have no or a zero go_kind).
  if (go_kind == 0) {
    switch (tag) {
    case DW_TAG_base_type:
      switch (attr_udata(&under, DW_AT_encoding).value_or(0)) {
      case DW_ATE_boolean:
        go_kind = kKindBool;
        break;
      case DW_ATE_signed:
      case DW_ATE_signed_char:
        go_kind = kKindInt;
        break;
      case DW_ATE_unsigned:
      case DW_ATE_unsigned_char:
        go_kind = under_name == "uintptr" ? kKindUintptr : kKindUint;
        break;
      case DW_ATE_float:
        go_kind = kKindFloat64;
        break;
      case DW_ATE_complex_float:
        go_kind = kKindComplex128;
        break;
      }
      break;
    case DW_TAG_pointer_type:
      go_kind = dwarf_hasattr(&under, DW_AT_type) ? kKindPtr : kKindUnsafePointer;
      break;
    case DW_TAG_structure_type:
      go_kind = under_name == "string" ? kKindString : kKindStruct;
      break;
    case DW_TAG_array_type:
      go_kind = kKindArray;
      break;
    case DW_TAG_subroutine_type:
      go_kind = kKindFunc;
      break;
    }
  }

  // go_elem / go_key live on the DIE that carried go_kind; fall back to the underlying DIE.
  auto ref = [&](unsigned attr) -> TypeId {
    Dwarf_Die target;
    if (attr_ref(&kind_die, attr, &target) || attr_ref(&under, attr, &target))
      return convert(&target);
    return kNoType;
  };
  auto pointee = [&](Dwarf_Die *pointer) -> TypeId {
    Dwarf_Die target;
    return attr_ref(pointer, DW_AT_type, &target) ? convert(&target) : kNoType;
  };
  const uint64_t ptr = ptr_size_;
  auto scalar = [&](TypeKind kind) {
    type.kind = kind;
    type.size = byte_size;
    type.align = std::clamp<uint64_t>(byte_size, 1, ptr); // 386: int64/float64 align to 4
  };

  switch (go_kind) {
  case kKindBool:
    scalar(TypeKind::Bool);
    break;
  case kKindInt:
  case kKindInt8:
  case kKindInt16:
  case kKindInt32:
  case kKindInt64:
    scalar(TypeKind::Int);
    break;
  case kKindUint:
  case kKindUint8:
  case kKindUint16:
  case kKindUint32:
  case kKindUint64:
    scalar(TypeKind::Uint);
    break;
  case kKindUintptr:
    scalar(TypeKind::Uintptr);
    break;
  case kKindFloat32:
  case kKindFloat64:
    scalar(TypeKind::Float);
    break;
  case kKindComplex64:
  case kKindComplex128:
    // complex64 aligns to 4, complex128 to 8 capped at the pointer size (GO-ABI.md §1.3).
    type.kind = TypeKind::Complex;
    type.size = byte_size;
    type.align = std::clamp<uint64_t>(byte_size / 2, 1, ptr);
    break;
  case kKindString:
    type.kind = TypeKind::String;
    type.size = byte_size ? byte_size : 2 * ptr;
    type.align = ptr;
    break;
  case kKindSlice: {
    type.kind = TypeKind::Slice;
    type.size = byte_size ? byte_size : 3 * ptr;
    type.align = ptr;
    type.elem = ref(kAttrGoElem);
    if (type.elem == kNoType && tag == DW_TAG_structure_type) {
      // The "array" member is a *T.
      Dwarf_Die child;
      for (int more = dwarf_child(&under, &child); more == 0;
           more = dwarf_siblingof(&child, &child)) {
        Dwarf_Die array_type;
        if (die_name(&child) == "array" && attr_ref(&child, DW_AT_type, &array_type)) {
          Dwarf_Die pointer;
          if (dwarf_peel_type(&array_type, &pointer) == 0 &&
              dwarf_tag(&pointer) == DW_TAG_pointer_type)
            type.elem = pointee(&pointer);
          break;
        }
      }
    }
    break;
  }
  case kKindArray: {
    type.kind = TypeKind::Array;
    type.elem = tag == DW_TAG_array_type ? pointee(&under) : kNoType;
    if (type.elem == kNoType)
      type.elem = ref(kAttrGoElem);
    Dwarf_Die child;
    for (int more = dwarf_child(&under, &child); more == 0;
         more = dwarf_siblingof(&child, &child)) {
      if (dwarf_tag(&child) != DW_TAG_subrange_type)
        continue;
      if (auto count = attr_udata(&child, DW_AT_count)) {
        type.count = *count;
      } else if (auto upper = attr_udata(&child, DW_AT_upper_bound)) {
        type.count = *upper == UINT64_MAX ? 0 : *upper + 1;
      }
      break;
    }
    type.size = byte_size;
    if (type.size == 0 && type.elem != kNoType)
      type.size = type.count * types_.at(type.elem).size; // best effort when byte_size is absent
    break;                                                // align: align_of()
  }
  case kKindStruct: {
    type.kind = TypeKind::Struct;
    type.size = byte_size;
    Dwarf_Die child;
    int more = dwarf_child(&under, &child);
    for (; more == 0; more = dwarf_siblingof(&child, &child)) {
      if (dwarf_tag(&child) != DW_TAG_member)
        continue;
      GoField field;
      field.name = die_name(&child);
      field.offset = member_location(&child).value_or(0);
      field.type = pointee(&child);
      field.embedded = attr_flag(&child, kAttrGoEmbeddedField, false);
      type.fields.push_back(std::move(field));
    }
    if (more < 0)
      dwarf_fail("cannot read the members of " + type.name);
    break; // align: align_of()
  }
  case kKindPtr:
    type.kind = TypeKind::Pointer;
    type.size = ptr;
    type.align = ptr;
    type.elem = tag == DW_TAG_pointer_type ? pointee(&under) : kNoType;
    break;
  case kKindUnsafePointer:
    type.kind = TypeKind::UnsafePointer;
    type.size = ptr;
    type.align = ptr;
    break;
  case kKindMap:
    // One pointer to the runtime hash table (hmap in 1.19, swiss maps from 1.24).
    type.kind = TypeKind::Map;
    type.size = ptr;
    type.align = ptr;
    type.key = ref(kAttrGoKey);
    type.elem = ref(kAttrGoElem);
    // The typedef's DW_AT_type is a pointer to the header struct the linker synthesized for this
    // map type (synthesizemaptypes in cmd/link/internal/ld/dwarf.go): its buckets or tables are
    // typed with the key and value, which is where a walk of the contents takes its layout from.
    if (dwarf_tag(&under) == DW_TAG_pointer_type) {
      type.header = pointee(&under);
    } else {
      Dwarf_Die pointer;
      if (attr_ref(&under, DW_AT_type, &pointer) && dwarf_tag(&pointer) == DW_TAG_pointer_type)
        type.header = pointee(&pointer);
    }
    break;
  case kKindChan:
    type.kind = TypeKind::Chan;
    type.size = ptr;
    type.align = ptr;
    type.elem = ref(kAttrGoElem);
    break;
  case kKindFunc:
    type.kind = TypeKind::Func;
    type.size = ptr;
    type.align = ptr;
    break;
  case kKindInterface:
    // {tab|_type, data}: runtime.iface for non-empty interfaces, runtime.eface for interface{}.
    type.kind = TypeKind::Interface;
    type.size = 2 * ptr;
    type.align = ptr;
    type.empty_interface = under_name == "runtime.eface";
    break;
  default:
    type.kind = TypeKind::Unsupported;
    type.size = byte_size;
    if (type.name.empty())
      type.name = "<unnamed DWARF type, tag " + hex(static_cast<uint64_t>(tag)) + ">";
    break;
  }
  return type;
}

} // namespace

std::unique_ptr<DebugInfo> DebugInfo::open(const std::string &path, int ptr_size) {
  if (elf_version(EV_CURRENT) == EV_NONE)
    throw std::logic_error(std::string("libelf initialisation failed: ") + elf_errmsg(-1));
  SourceLoc loc{path, 0, 0};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw UserError("binary-unreadable", "cannot open " + path + ": " + std::strerror(errno), loc);
  Elf *elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    if (elf)
      elf_end(elf);
    close(fd);
    throw UserError("not-elf", path + ": not an ELF file", loc);
  }

  // libdw reports a file without DWARF as a generic error; look for the section ourselves so the
  // user gets the actionable message.
  bool has_dwarf = false;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
    for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      const char *name =
          gelf_getshdr(scn, &shdr) ? elf_strptr(elf, shstrndx, shdr.sh_name) : nullptr;
      if (name && (!std::strcmp(name, ".debug_info") || !std::strcmp(name, ".zdebug_info")))
        has_dwarf = true;
    }
  }
  if (!has_dwarf) {
    elf_end(elf);
    close(fd);
    throw UserError("no-dwarf",
                    path + " has no DWARF debug info (built with -ldflags=-w or stripped); weave "
                           "needs DWARF for parameter types",
                    loc,
                    "rebuild the program without -ldflags=-w (or -s) and without stripping it");
  }

  Dwarf *dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  if (!dwarf) {
    std::string message = path + ": cannot read DWARF: " + dwarf_errmsg(-1);
    elf_end(elf);
    close(fd);
    throw UserError("bad-dwarf", message, loc);
  }
  return std::make_unique<DwarfDebugInfo>(path, ptr_size, fd, elf, dwarf);
}

} // namespace weave
