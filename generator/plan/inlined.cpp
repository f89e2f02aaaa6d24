#include "plan/inlined.h"

#include "debuginfo/debuginfo.h"
#include "gobinary/binary.h"
#include "plan/expr.h"
#include "plan/predicate.h"

#include <fmt/format.h>

namespace weave {

namespace {

// The scalar parts of a value, in memory order: what Go's DWARF gives one piece each (one per SSA
// slot: cmd/compile/internal/ssa/debug.go). False for a type whose slots weave does not model.
bool scalar_parts(const TypeTable &types, TypeId id, uint64_t base, int ptr_size,
                  std::vector<std::pair<uint64_t, uint64_t>> &parts, int depth = 0) {
  if (depth > 8)
    return false;
  const GoType &t = types.at(id);
  uint64_t word = static_cast<uint64_t>(ptr_size);
  switch (t.kind) {
  case TypeKind::Bool:
  case TypeKind::Int:
  case TypeKind::Uint:
  case TypeKind::Uintptr:
  case TypeKind::Pointer:
  case TypeKind::UnsafePointer:
  case TypeKind::Map:
  case TypeKind::Chan:
  case TypeKind::Func:
    parts.push_back({base, t.size});
    return t.size <= word;
  case TypeKind::String:
    parts.push_back({base, word});
    parts.push_back({base + word, word});
    return true;
  case TypeKind::Slice:
    for (uint64_t i = 0; i < 3; ++i)
      parts.push_back({base + i * word, word});
    return true;
  case TypeKind::Interface:
    parts.push_back({base, word});
    parts.push_back({base + word, word});
    return true;
  case TypeKind::Struct:
    for (const GoField &f : t.fields)
      if (types.at(f.type).size > 0 && !scalar_parts(types, f.type, base + f.offset, ptr_size, parts, depth + 1))
        return false;
    return true;
  default:
    return false; // floats (which a uprobe cannot read from registers), arrays, complex
  }
}

// DWARF register number -> pt_regs field and assembler name (System V amd64 psABI numbering).
bool amd64_register(int dwarf, std::string &field, std::string &name) {
  static const char *fields[] = {"ax", "dx", "cx", "bx", "si", "di", "bp", "sp",
                                 "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"};
  static const char *names[] = {"RAX", "RDX", "RCX", "RBX", "RSI", "RDI", "RBP", "RSP",
                                "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15"};
  if (dwarf < 0 || dwarf > 15)
    return false;
  field = fields[dwarf];
  name = names[dwarf];
  return true;
}

// DWARF register number -> pt_regs field and assembler name on 386 (System V i386 psABI numbering;
// a 386 process's uprobe context is the 64-bit pt_regs, its registers in the low halves).
bool i386_register(int dwarf, std::string &field, std::string &name) {
  static const char *fields[] = {"ax", "cx", "dx", "bx", "sp", "bp", "si", "di"};
  static const char *names[] = {"EAX", "ECX", "EDX", "EBX", "ESP", "EBP", "ESI", "EDI"};
  if (dwarf < 0 || dwarf > 7)
    return false;
  field = fields[dwarf];
  name = names[dwarf];
  return true;
}

} // namespace

NamedValue inlined_value(const InlinedCopyLocations::Param &param, TypeId type, const TypeTable &types,
                         const BinaryImage &image, int64_t sp_delta, bool at_line) {
  const char *here = at_line ? "this PC" : "this copy";
  NamedValue value;
  value.name = param.name;
  value.type = type;
  value.inlined = true;
  const ParamEntryLocation &loc = param.location;
  using Status = ParamEntryLocation::Status;
  if (loc.status == Status::NoAttribute) {
    value.unavailable = fmt::format("DWARF records no location for it at {}", here);
    return value;
  }
  if (loc.status == Status::Empty) {
    value.unavailable = fmt::format("optimized out at {}", here);
    return value;
  }
  if (loc.status == Status::NotAtEntry) {
    value.unavailable = at_line ? "its location list does not cover this PC"
                                : "its location list does not cover the copy's first instruction";
    return value;
  }
  // Only amd64 was checked against real programs (frame base = CFA = SP + SP delta + 8, the
  // return address the call pushed; tests/e2e/test_inlined.cpp).
  // Line probes read 386 values too (tests/e2e/test_lines.cpp checks them on a real program).
  const bool i386 = at_line && image.arch == Arch::I386;
  auto machine_register = [&](int dwarf, std::string &field, std::string &name) {
    return i386 ? i386_register(dwarf, field, name) : amd64_register(dwarf, field, name);
  };
  if (image.arch != Arch::X86_64 && !i386) {
    value.unavailable = "values at inlined copies are read on amd64 only";
    return value;
  }
  const int ptr = image.ptr_size;
  const uint64_t size = types.at(type).size;
  auto sp_offset = [&](int64_t cfa_offset) { return cfa_offset + sp_delta + ptr; };
  // One location for the whole value.
  if (loc.pieces.size() == 1 && loc.pieces[0].size == 0) {
    const DwarfPiece &p = loc.pieces[0];
    if (p.kind == DwarfPiece::Kind::Memory) {
      value.whole_in_memory = true;
      value.whole_sp_offset = sp_offset(p.cfa_offset);
      return value;
    }
    NamedValue::InlinedPiece piece;
    if (p.kind == DwarfPiece::Kind::Register && size <= static_cast<uint64_t>(ptr) &&
        machine_register(p.reg, piece.reg, piece.reg_name)) {
      piece.size = size;
      value.pieces.push_back(piece);
      return value;
    }
    value.unavailable = "DWARF's location for it (" + loc.ops + ") is not one weave reads";
    return value;
  }
  // DWARF's own description is checked before it is believed: pieces that do not add up to the
  // value (Go 1.26 writes some struct locals as 24 of 32 bytes, golang/go#72053) say nothing
  // sound about which piece is which field.
  uint64_t covered = 0;
  for (const DwarfPiece &p : loc.pieces)
    covered += p.size;
  std::vector<std::pair<uint64_t, uint64_t>> parts;
  const bool modelled = scalar_parts(types, type, 0, ptr, parts);
  uint64_t scalar_bytes = 0;
  for (const auto &part : parts)
    scalar_bytes += part.second;
  if (loc.pieces.size() > 1 || (loc.pieces.size() == 1 && loc.pieces[0].size)) {
    uint64_t expected = modelled ? scalar_bytes : size;
    if (covered != expected) {
      value.unavailable = fmt::format("DWARF's pieces ({}) cover {} of its {} bytes", loc.ops, covered, expected);
      return value;
    }
  }
  if (!modelled) {
    value.unavailable = "weave does not read a " + types.at(type).name + " from DWARF pieces";
    return value;
  }
  if (parts.size() != loc.pieces.size()) {
    value.unavailable = fmt::format("DWARF gives {} pieces ({}) for its {} parts", loc.pieces.size(), loc.ops,
                                    parts.size());
    return value;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const DwarfPiece &p = loc.pieces[i];
    if (p.size != parts[i].second) {
      value.unavailable = fmt::format("DWARF's pieces ({}) do not match its parts", loc.ops);
      return value;
    }
    NamedValue::InlinedPiece piece;
    piece.offset = parts[i].first;
    piece.size = parts[i].second;
    if (p.kind == DwarfPiece::Kind::Memory) {
      piece.memory = true;
      piece.sp_offset = sp_offset(p.cfa_offset);
    } else if (p.kind != DwarfPiece::Kind::Register || !machine_register(p.reg, piece.reg, piece.reg_name)) {
      value.unavailable = p.kind == DwarfPiece::Kind::Absent
                              ? fmt::format("part of it is optimized out at {}", here)
                              : "DWARF's location for it (" + loc.ops + ") is not one weave reads";
      return value;
    }
    value.pieces.push_back(piece);
  }
  return value;
}

std::string describe_inlined_value(const NamedValue &value) {
  if (!value.unavailable.empty())
    return "unavailable: " + value.unavailable;
  if (value.whole_in_memory)
    return fmt::format("SP{:+}", value.whole_sp_offset);
  std::string text;
  for (const auto &piece : value.pieces)
    text += (text.empty() ? "" : ",") + (piece.memory ? fmt::format("SP{:+}", piece.sp_offset) : piece.reg_name);
  return text;
}

bool attach_located_filter(EventPlan &event, const PredicateNode &filter, const ProbeSpec &spec) {
  for (const PredicateOperand &value : predicate_values(filter))
    for (const CapturePlan &c : event.captures)
      if (c.expr == value.text && !c.unavailable.empty())
        return false;
  PredicateNode node = filter;
  event.filter_faults = resolve_predicate(node, event.captures, spec.when, spec.when_loc);
  event.filter = std::move(node);
  event.filter_text = spec.when;
  return true;
}

std::vector<ProbePlan> plan_inlined_probes(const ProbeSpec &spec, const std::string &function,
                                           const InlinedCopies &copies, DebugInfo *debug,
                                           const BinaryImage &image, const Pclntab &pcln,
                                           const CaptureContext &context, const std::string &abi,
                                           int first_id, size_t max_copies, std::vector<std::string> &warnings) {
  std::vector<ProbePlan> probes;
  if (copies.copies.empty())
    return probes;
  if (copies.copies.size() > max_copies)
    throw UserError("too-many-copies",
                    fmt::format("{} is inlined at {} call sites, each an uprobe of its own; the limit is {}", function,
                                copies.copies.size(), max_copies),
                    spec.loc, "set inlined: false to probe its own body only, or raise options.max_functions");
  // Only the slow calls: a copy's duration is not knowable, so none of its calls can qualify.
  if (spec.min_duration_ns > 0) {
    warnings.push_back(fmt::format("{}: its {} inlined cop{} left out: min_duration needs each call's "
                                   "duration, and a copy has no RET to time it by",
                                   function, copies.copies.size(), copies.copies.size() == 1 ? "y" : "ies"));
    return probes;
  }
  // Only the calls whose results pass when_return: a copy has no RET where they could be read.
  if (!spec.when_return.empty()) {
    warnings.push_back(fmt::format("{}: its {} inlined cop{} left out: when_return is decided at a call's "
                                   "return, and a copy has no RET to read the results at",
                                   function, copies.copies.size(), copies.copies.size() == 1 ? "y" : "ies"));
    return probes;
  }
  if (!spec.at_return.empty())
    warnings.push_back(fmt::format("{}: capture_at_return applies to its own body only: its inlined copies "
                                   "have no RET to read at",
                                   function));
  if (spec.capture_return)
    warnings.push_back(fmt::format(
        "{}: return: true applies to its own body only: its {} inlined cop{} have no RET of their own, so "
        "their results and durations are not knowable; they emit entry events only",
        function, copies.copies.size(), copies.copies.size() == 1 ? "y" : "ies"));
  // "when:" is evaluated at a copy only where every value it reads is located there: a condition
  // on a value the copy does not have cannot be decided, and such copies are left out.
  std::optional<PredicateNode> filter;
  if (!spec.when.empty())
    filter = parse_predicate(spec.when, spec.when_loc);
  size_t undecidable = 0;
  if (spec.stack > 0)
    warnings.push_back(fmt::format("{}: stack: is not captured at its inlined copies (the walk starts "
                                   "from a return address, which a copy does not have)",
                                   function));
  // The parameter list, from any DWARF copy (they share the abstract origin's).
  const InlinedCopyLocations *named = nullptr;
  for (const InlinedCopyLocations *d : copies.dwarf)
    if (d)
      named = d;
  size_t unlocated_copies = 0;
  for (size_t i = 0; i < copies.copies.size(); ++i) {
    const Pclntab::InlinedCopy &copy = copies.copies[i];
    const InlinedCopyLocations *dwarf = copies.dwarf[i];
    ProbePlan probe;
    probe.id = first_id + static_cast<int>(i);
    probe.name = spec.name;
    probe.function = function;
    probe.abi = abi; // the code it sits in: where g is
    probe.inlined_into = ProbePlan::InlinedInto{copy.caller, copy.file, copy.line, copy.physical};
    const PclnFunction *physical = pcln.find(copy.physical);
    probe.function_entry = copy.first_pc;
    probe.function_end = physical ? physical->end : copy.first_pc;
    auto offset = file_offset(image, copy.first_pc);
    if (!offset)
      throw UserError("bad-address",
                      fmt::format("{} inlined into {} at {:#x} is outside every loadable segment of {}",
                                  function, copy.physical, copy.first_pc, image.path),
                      spec.loc);
    probe.attach.push_back({"entry", copy.first_pc, *offset, 0,
                            fmt::format("first instruction of the copy inlined into {} at {}:{} (in {})",
                                        copy.caller, copy.file, copy.line, copy.physical)});
    std::vector<NamedValue> values;
    std::optional<int32_t> delta = physical ? pcln.sp_delta(*physical, copy.first_pc) : std::nullopt;
    if (named && debug) {
      for (size_t p = 0; p < named->params.size(); ++p) {
        const auto &param = named->params[p];
        std::optional<TypeId> type = param.type.empty() ? std::nullopt : debug->find_type(param.type);
        if (!type) {
          NamedValue v;
          v.name = param.name;
          v.inlined = true;
          v.type = context.types.add(GoType{TypeKind::Unsupported, param.type.empty() ? "?" : param.type});
          v.unavailable = "its type " + param.type + " is not in DWARF";
          values.push_back(v);
          continue;
        }
        if (!dwarf || p >= dwarf->params.size() || !delta) {
          NamedValue v;
          v.name = param.name;
          v.inlined = true;
          v.type = *type;
          v.unavailable = !dwarf ? "DWARF has no entry for this copy at its first instruction"
                                 : "the SP delta at the copy is not recorded";
          values.push_back(v);
          continue;
        }
        values.push_back(inlined_value(dwarf->params[p], *type, context.types, image, *delta));
      }
    }
    if (!dwarf)
      ++unlocated_copies;
    std::vector<CaptureSpec> all_args;
    if (spec.all_args)
      for (const NamedValue &v : values)
        all_args.push_back({v.name, spec.all_args_loc});
    // Without DWARF the copies' parameters have no names and no places: calls are counted only.
    std::vector<CaptureSpec> explicit_captures = values.empty() ? std::vector<CaptureSpec>{} : spec.captures;
    if (filter) {
      if (values.empty()) {
        ++undecidable;
        continue;
      }
      for (const PredicateOperand &value : predicate_values(*filter))
        explicit_captures.push_back({value.text, advance(spec.when_loc, value.column)});
    }
    probe.entry = make_event("entry", probe.id, explicit_captures, all_args, values, function, "parameter",
                             context, probe.skipped);
    if (filter && !attach_located_filter(probe.entry, *filter, spec)) {
      ++undecidable;
      continue;
    }
    probe.entry.events_per_second = spec.events_per_second;
    probes.push_back(std::move(probe));
  }
  if (undecidable)
    warnings.push_back(fmt::format("{}: {} of its {} inlined copies are left out: when: reads a value DWARF "
                                   "does not locate there, so the condition cannot be decided",
                                   function, undecidable, copies.copies.size()));
  // Ids run on from first_id without gaps: the caller numbers probes by their position.
  for (size_t i = 0; i < probes.size(); ++i) {
    probes[i].id = first_id + static_cast<int>(i);
    probes[i].entry.program = fmt::format("probe_{}_entry", probes[i].id);
    probes[i].entry.struct_name = fmt::format("probe_{}_entry_event", probes[i].id);
  }
  if (!debug && (spec.all_args || !spec.captures.empty()))
    warnings.push_back(fmt::format("{}: its {} inlined copies are counted without values: the binary has "
                                   "no DWARF to locate their parameters",
                                   function, copies.copies.size()));
  else if (debug && unlocated_copies)
    warnings.push_back(fmt::format("{}: {} of its inlined copies have no DWARF entry at their first "
                                   "instruction: their values are shown as unavailable",
                                   function, unlocated_copies));
  return probes;
}

} // namespace weave
