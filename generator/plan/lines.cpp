#include "plan/lines.h"

#include "debuginfo/debuginfo.h"
#include "disasm/disasm.h"
#include "gobinary/binary.h"
#include "gobinary/pclntab.h"
#include "plan/expr.h"
#include "plan/inlined.h"
#include "plan/predicate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace weave {

namespace {

// pt_regs field ("dx") -> DWARF register number (System V amd64 or i386 psABI), -1 when unknown.
int dwarf_register_number(const std::string &field, bool i386) {
  static const char *amd64[] = {"ax", "dx", "cx", "bx", "si", "di", "bp", "sp",
                                "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"};
  static const char *x86[] = {"ax", "cx", "dx", "bx", "sp", "bp", "si", "di"};
  for (int i = 0; i < (i386 ? 8 : 16); ++i)
    if (field == (i386 ? x86[i] : amd64[i]))
      return i;
  return -1;
}

bool is_identifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
  });
}

// Whether code entered at `from` reaches `to` by itself: no jump from elsewhere lands in (from, to],
// and none inside goes backward there. Then each time `to` runs, `from` ran just before in the same
// pass, and a run of the line at `to` continues the one at `from` (the compiler scheduled code of
// another line, or of a call the line makes that it inlined, in between): it is no start of the line.
bool continues(const Jumps &jumps, uint64_t from, uint64_t to) {
  if (!jumps.error.empty() || jumps.computed)
    return false;
  return std::none_of(jumps.jumps.begin(), jumps.jumps.end(), [&](const std::pair<uint64_t, uint64_t> &j) {
    return j.second > from && j.second <= to && (j.first < from || j.first >= to || j.second <= j.first);
  });
}

// A stripped binary's sites, from .gopclntab's pcfile/pcln tables: the first PC of each run of the
// line, no variables (nothing locates them), the block starting at the PC. The tables carry no
// statement marks: a run that only continues the previous run of the line in the same function
// (`continues`) is left out, as DWARF's line table leaves it without is_stmt.
LineSites read_pcln_sites(const Pclntab &pcln, const BinaryImage &image, const std::string &file, int line) {
  LineSites out;
  std::vector<Pclntab::LineStart> starts =
      pcln.line_starts([&](std::string_view name) { return path_suffix_matches(name, file); }, line, &out.files);
  std::sort(starts.begin(), starts.end(),
            [](const Pclntab::LineStart &a, const Pclntab::LineStart &b) { return a.pc < b.pc; });
  std::map<uint64_t, Jumps> jumps_of; // by function entry
  std::vector<Pclntab::LineStart> kept;
  for (size_t i = 0; i < starts.size(); ++i) {
    const Pclntab::LineStart &s = starts[i];
    // The previous run, kept or itself a continuation: this one continues it, or starts the line.
    const Pclntab::LineStart *previous = i ? &starts[i - 1] : nullptr;
    if (previous && previous->physical == s.physical && previous->function == s.function &&
        previous->file == s.file && (image.arch == Arch::X86_64 || image.arch == Arch::I386)) {
      if (const PclnFunction *fn = pcln.at_pc(s.pc); fn && previous->pc >= fn->entry) {
        auto it = jumps_of.find(fn->entry);
        if (it == jumps_of.end()) {
          std::vector<uint8_t> code = read_bytes(image, fn->entry, fn->end - fn->entry);
          it = jumps_of
                   .emplace(fn->entry, image.arch == Arch::X86_64 ? x86_64_jumps(code, fn->entry)
                                                                  : i386_jumps(code, fn->entry))
                   .first;
        }
        if (continues(it->second, previous->pc, s.pc))
          continue;
      }
    }
    kept.push_back(s);
  }
  for (Pclntab::LineStart &start : kept) {
    LineSite site;
    site.pc = start.pc;
    site.block_start = start.pc;
    site.file = std::move(start.file);
    site.line = line;
    site.function = std::move(start.function);
    site.physical = std::move(start.physical);
    site.inlined = start.inlined;
    out.sites.push_back(std::move(site));
  }
  std::sort(out.sites.begin(), out.sites.end(), [](const LineSite &a, const LineSite &b) { return a.pc < b.pc; });
  return out;
}

// The sites of the line, narrowed to `function`; refuses no match, several files, and no code.
std::vector<LineSite> resolve_sites(const std::string &file, int line, const std::string &function,
                                    const SourceLoc &loc, const std::string &dwarf_file, const BinaryImage &image,
                                    const Pclntab *stripped = nullptr) {
  LineSites all =
      stripped ? read_pcln_sites(*stripped, image, file, line) : read_line_sites(dwarf_file, file, line);
  if (all.files.empty())
    throw UserError("unknown-line-file",
                    fmt::format("no file of the binary's {} ends in {}", stripped ? ".gopclntab" : "DWARF", file), loc,
                    "FILE is a path suffix of a source file the binary was built from, e.g. main.go or "
                    "internal/fs/realfs.go");
  std::vector<LineSite> sites;
  for (LineSite &site : all.sites)
    if (function.empty() || site.function == function || site.physical == function)
      sites.push_back(std::move(site));
  std::set<std::string> files;
  for (const LineSite &site : sites)
    files.insert(site.file);
  // A suffix naming two files is ambiguous even when only one has code at the line.
  if (all.files.size() > 1 && (function.empty() || files.size() > 1)) {
    std::string list;
    for (const std::string &f : all.files)
      list += (list.empty() ? "" : ", ") + f;
    throw UserError("ambiguous-line-file",
                    fmt::format("{} matches {} files of the binary: {}", file, all.files.size(), list), loc,
                    "write more of the path, so that one file ends in it (or narrow with function:)");
  }
  if (sites.empty())
    throw UserError("no-code-at-line",
                    function.empty() ? fmt::format("{}:{} has no {} in the binary's line table", all.files.front(),
                                                   line, stripped ? "code" : "statement")
                                     : fmt::format("{}:{} has no statement in {}", all.files.front(), line, function),
                    loc, "pick a line holding a statement (not a comment, a declaration or a closing brace)");
  return sites;
}

// The values in scope at a site, located at its PC; `in_scope_names` receives their names.
std::vector<NamedValue> site_values(const LineSite &site, DebugInfo &debug, const BinaryImage &image,
                                    const Pclntab *pcln, TypeTable &types, std::vector<std::string> *skipped) {
  std::optional<int32_t> delta;
  if (pcln)
    if (const PclnFunction *fn = pcln->at_pc(site.pc))
      delta = pcln->sp_delta(*fn, site.pc);
  // What the code of other lines moved inside this one writes (amd64 and 386: plan_line_probes
  // refuses the rest).
  const bool i386 = image.arch == Arch::I386;
  auto writes_in = i386 ? i386_writes : x86_64_writes;
  std::vector<std::pair<const LineSite::Interleaved *, Writes>> moved_writes;
  // What the line's own code before its statement start writes: a value it changes there is no
  // longer the one the line starts with.
  std::optional<Writes> early;
  const PclnFunction *fn = pcln ? pcln->at_pc(site.pc) : nullptr;
  if (fn && (!site.interleaved.empty() || site.block_start < site.pc)) {
    std::vector<uint8_t> code = read_bytes(image, fn->entry, fn->end - fn->entry);
    for (const LineSite::Interleaved &other : site.interleaved)
      moved_writes.push_back({&other, writes_in(code, fn->entry, other.start, other.end)});
    if (site.block_start < site.pc && site.block_start >= fn->entry)
      early = writes_in(code, fn->entry, site.block_start, site.pc);
  } else if (!site.interleaved.empty()) {
    Writes all;
    all.unknown_stack = true;
    for (int r = 0; r < 16; ++r)
      all.regs.push_back(r);
    moved_writes.push_back({&site.interleaved.front(), all});
  }
  std::vector<NamedValue> values;
  for (const LineVariable &v : site.variables) {
    if (v.decl_line > site.line)
      continue; // declared further down: not yet in scope
    if (!is_identifier(v.name)) {
      if (skipped && v.name.starts_with("&"))
        skipped->push_back(fmt::format("{}: moved to the heap, and DWARF locates only its address ({}): not read "
                                       "in this version",
                                       v.name.substr(1), v.name));
      continue; // "~r0" (an unnamed result) and the like
    }
    NamedValue value;
    value.name = v.name;
    value.inlined = true;
    std::optional<TypeId> type = v.type.empty() ? std::nullopt : debug.find_type(v.type);
    if (!type) {
      value.type = types.add(GoType{TypeKind::Unsupported, v.type.empty() ? "?" : v.type});
      value.unavailable = "its type " + (v.type.empty() ? std::string("?") : v.type) + " is not in DWARF";
      values.push_back(value);
      continue;
    }
    value.type = *type;
    if (v.decl_line == site.line && !v.is_param) {
      value.unavailable = "declared on this line: the line assigns it after this PC";
      values.push_back(value);
      continue;
    }
    // A statement of another line the compiler moved inside this line's code may still change it
    // after the PC: a new location-list entry starting in that code, or a store to its one stack
    // slot, which DWARF cannot show. Then what is there at the PC is not the value at this line.
    const LineSite::Interleaved *moved = nullptr;
    for (const LineSite::Interleaved &other : site.interleaved) {
      for (uint64_t start : v.location_starts)
        if (start > site.pc && start >= other.start && start < other.end && !moved)
          moved = &other;
    }
    if (moved) {
      value.unavailable = fmt::format("code of line {} runs inside this line's (at {:#x}) and gives it a new "
                                      "value or place after this PC",
                                      moved->line, moved->start);
      values.push_back(value);
      continue;
    }
    InlinedCopyLocations::Param param{v.name, v.type, v.location};
    NamedValue located = inlined_value(param, *type, types, image, delta.value_or(0), true);
    bool uses_stack = located.whole_in_memory ||
                      std::any_of(located.pieces.begin(), located.pieces.end(),
                                  [](const NamedValue::InlinedPiece &p) { return p.memory; });
    if (located.unavailable.empty() && uses_stack && !delta)
      located = NamedValue{v.name, *type, {}, true, "its stack slot is relative to a frame size .gopclntab does not "
                                                  "record at this PC"};
    // The line's own instructions before the PC: a write to where the value is at the PC means the
    // line has already begun changing it (what they compute elsewhere is not where it is read).
    if (site.block_start < site.pc && located.unavailable.empty()) {
      bool changed = !early;
      if (early) {
        auto stored = [&](int64_t from, int64_t size) {
          if (early->unknown_stack)
            return true;
          for (const auto &[a, b] : early->stack)
            if (a < from + size && from < b)
              return true;
          return false;
        };
        changed = located.whole_in_memory &&
                  stored(located.whole_sp_offset, static_cast<int64_t>(types.at(*type).size));
        for (const NamedValue::InlinedPiece &piece : located.pieces)
          changed = changed || (piece.memory ? stored(piece.sp_offset, static_cast<int64_t>(piece.size))
                                             : std::find(early->regs.begin(), early->regs.end(),
                                                         dwarf_register_number(piece.reg, i386)) != early->regs.end());
      }
      if (changed) {
        values.push_back(NamedValue{v.name, *type, {}, true,
                                    fmt::format("this line's own code from {:#x}, before its statement start at "
                                                "this PC, may already have changed it",
                                                site.block_start)});
        continue;
      }
    }
    // Where it is at the PC must not be written by that moved code either: a register it writes,
    // or a stack slot it stores to, would change the value with no sign in DWARF.
    if (located.unavailable.empty())
      for (const auto &moved : moved_writes) {
        // Plain references, not a structured binding: clang 14 cannot capture a binding in a lambda.
        const LineSite::Interleaved *other = moved.first;
        const auto &writes = moved.second;
        auto stored = [&](int64_t from, int64_t size) {
          if (writes.unknown_stack)
            return true;
          for (const auto &[a, b] : writes.stack)
            if (a < from + size && from < b)
              return true;
          return false;
        };
        bool written = located.whole_in_memory &&
                       stored(located.whole_sp_offset, static_cast<int64_t>(types.at(*type).size));
        for (const NamedValue::InlinedPiece &piece : located.pieces) {
          if (piece.memory) {
            written = written || stored(piece.sp_offset, static_cast<int64_t>(piece.size));
            continue;
          }
          int number = dwarf_register_number(piece.reg, i386);
          written = written || number < 0 ||
                    std::find(writes.regs.begin(), writes.regs.end(), number) != writes.regs.end();
        }
        if (written) {
          located.pieces.clear();
          located.whole_in_memory = false;
          located.unavailable = fmt::format("code of line {} runs inside this line's (at {:#x}) and writes where it "
                                            "is, after this PC",
                                            other->line, other->start);
          break;
        }
      }
    values.push_back(std::move(located));
  }
  return values;
}

} // namespace

std::vector<ProbePlan> plan_line_probes(const ProbeSpec &spec, const std::string &dwarf_file, DebugInfo *debug,
                                        const BinaryImage &image, const Pclntab *pcln,
                                        const CaptureContext &context, const std::string &abi, int first_id,
                                        size_t max_sites, std::vector<std::string> &warnings) {
  auto refuse = [&](const char *key, const std::string &why) {
    throw UserError("line-probe-option", fmt::format("a line probe does not take {}: {}", key, why), spec.line_loc);
  };
  if (spec.capture_return || spec.min_duration_ns || !spec.when_return.empty() || !spec.at_return.empty())
    refuse("return:, min_duration, when_return or capture_at_return", "a line has no return to pair with");
  if (spec.all_args)
    refuse("args: all", "use locals: all (parameters included)");
  if (spec.has_params || spec.has_results)
    refuse("params: or results:", "its values come from DWARF");
  if (spec.inlined)
    refuse("inlined:", "copies of the line inlined elsewhere are always probed");
  if (!debug && !pcln)
    throw UserError("no-dwarf-lines",
                    fmt::format("{} has neither DWARF nor .gopclntab: nothing maps its lines to PCs", image.path),
                    spec.line_loc, "build the binary without -ldflags=-w, or give weave its debug file");
  if (image.arch != Arch::X86_64 && image.arch != Arch::I386)
    throw UserError("unsupported-line-arch",
                    fmt::format("line probes are built for amd64 and 386 binaries only, and {} is {}", image.path,
                                arch_name(image.arch)),
                    spec.line_loc);
  // Without DWARF the line still maps to PCs through .gopclntab, but nothing says where a local is:
  // the probe counts, names the goroutine and the stack, and reads no value.
  const bool stripped = !debug;
  if (stripped) {
    if (!spec.captures.empty() || !spec.when.empty()) {
      const SourceLoc &at = spec.captures.empty() ? spec.when_loc : spec.captures.front().loc;
      throw UserError("no-dwarf-locals",
                      fmt::format("{} has no DWARF: its line probes map the line to PCs through .gopclntab, which "
                                  "locates no local, so {} cannot be read",
                                  image.path, spec.captures.empty() ? "when:" : "capture: " + spec.captures.front().expr),
                      at,
                      "drop capture: and when: (the probe still counts the line's runs, with goroutine ids and "
                      "stack:), or trace a build with DWARF (without -ldflags=-w) or give weave its debug file");
    }
    std::string said = fmt::format("{} has no DWARF: line probes map lines to PCs through .gopclntab and read no "
                                   "locals (counts, goroutine ids and stack: only)",
                                   image.path);
    if (std::find(warnings.begin(), warnings.end(), said) == warnings.end())
      warnings.push_back(said);
  }
  std::vector<LineSite> sites = resolve_sites(spec.line_file, spec.line, spec.function, spec.line_loc, dwarf_file,
                                              image, stripped ? pcln : nullptr);
  if (sites.size() > max_sites)
    throw UserError("too-many-copies",
                    fmt::format("{}:{} maps to {} PCs, each an uprobe of its own; the limit is {}", spec.line_file,
                                spec.line, sites.size(), max_sites),
                    spec.line_loc, "narrow it with function:, or raise options.max_functions");
  // A line's PC is inside its function, past the prologue: no return address at SP to start a
  // frame-pointer walk from. The window (registers and a copy of the stack) is unwound by the tracer
  // with .gopclntab's SP deltas, which hold at every PC.
  if (spec.stack > 0 && spec.stack_mode == "fp")
    throw UserError("unsupported-stack",
                    "stack_mode: fp starts its walk from the return address at a function's entry, and a line "
                    "probe fires inside the function",
                    spec.stack_mode_loc, "leave stack_mode out: line probes copy a window of the stack");

  std::vector<std::vector<NamedValue>> values(sites.size());
  std::vector<std::vector<std::string>> skipped(sites.size());
  if (!stripped)
    for (size_t i = 0; i < sites.size(); ++i)
      values[i] = site_values(sites[i], *debug, image, pcln, context.types, &skipped[i]);

  // The roots the spec names: each must be in scope at one PC at least.
  std::optional<PredicateNode> filter;
  std::vector<CaptureSpec> explicit_captures = spec.captures;
  if (!spec.when.empty()) {
    filter = parse_predicate(spec.when, spec.when_loc);
    for (const PredicateOperand &value : predicate_values(*filter))
      explicit_captures.push_back({value.text, advance(spec.when_loc, value.column), value.nil_compared});
  }
  std::map<std::string, TypeId> root_type;
  std::vector<UserError> errors;
  for (const CaptureSpec &c : explicit_captures) {
    CaptureExpr parsed = parse_capture_expr(c.expr, c.loc);
    bool found = false;
    for (const auto &list : values)
      for (const NamedValue &v : list)
        if (v.name == parsed.root) {
          found = true;
          root_type.emplace(v.name, v.type);
        }
    if (found)
      continue;
    std::string later, names;
    std::set<std::string> seen;
    for (const LineSite &site : sites)
      for (const LineVariable &v : site.variables) {
        if (v.name == parsed.root && v.decl_line > site.line)
          later = fmt::format(" (it is declared at line {}, after it)", v.decl_line);
        if (v.name == "&" + parsed.root)
          later = fmt::format(" as a value: it was moved to the heap, and DWARF locates only its address (&{}), "
                              "which this version does not follow",
                              parsed.root);
        if (v.decl_line <= site.line && is_identifier(v.name) && seen.insert(v.name).second)
          names += (names.empty() ? "" : ", ") + v.name;
      }
    errors.emplace_back("not-in-scope",
                        fmt::format("{} is not in scope at {}:{}{}", parsed.root, sites.front().file, spec.line,
                                    later),
                        advance(c.loc, parsed.root_column),
                        "in scope there: " + (names.empty() ? std::string("(nothing)") : names));
  }
  if (!errors.empty())
    throw combine_errors(std::move(errors));

  std::vector<ProbePlan> probes;
  size_t undecidable = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    const LineSite &site = sites[i];
    ProbePlan probe;
    probe.id = first_id + static_cast<int>(probes.size());
    probe.name = spec.name;
    probe.function = site.function;
    probe.abi = abi;
    probe.line = ProbePlan::Line{site.file, site.line, site.pc, site.physical, site.inlined};
    const PclnFunction *physical = pcln ? pcln->at_pc(site.pc) : nullptr;
    probe.function_entry = physical ? physical->entry : site.pc;
    probe.function_end = physical ? physical->end : site.pc;
    auto offset = file_offset(image, site.pc);
    if (!offset)
      throw UserError("bad-address",
                      fmt::format("{}:{} at {:#x} is outside every loadable segment of {}", site.file, site.line,
                                  site.pc, image.path),
                      spec.line_loc);
    probe.attach.push_back(
        {"entry", site.pc, *offset, 0,
         site.inlined ? fmt::format("{}:{}, is_stmt, in the copy of {} inlined into {}", site.file, site.line,
                                    site.function, site.physical)
                      : fmt::format("{}:{}, is_stmt, in {}", site.file, site.line, site.function)});
    std::vector<NamedValue> here = values[i];
    // A named root in scope at another PC of the line only: unavailable here, with the reason.
    for (const auto &root : root_type) {
      const std::string &name = root.first; // not a structured binding: the lambda captures it
      if (std::none_of(here.begin(), here.end(), [&](const NamedValue &v) { return v.name == name; }))
        here.push_back(NamedValue{name, root.second, {}, true, "not in scope at this PC"});
    }
    std::vector<CaptureSpec> all_locals;
    if (spec.all_locals)
      for (const NamedValue &v : values[i])
        all_locals.push_back({v.name, spec.all_locals_loc});
    probe.skipped = skipped[i];
    probe.entry = make_event("entry", probe.id, explicit_captures, all_locals, here, site.function,
                             "local", context, probe.skipped);
    if (filter && !attach_located_filter(probe.entry, *filter, spec)) {
      ++undecidable;
      continue;
    }
    probe.entry.events_per_second = spec.events_per_second;
    if (spec.stack > 0) {
      probe.entry.stack_depth = static_cast<uint32_t>(spec.stack);
      probe.entry.event_size = (probe.entry.event_size + 7) & ~7u;
      probe.entry.stack_offset = probe.entry.event_size;
      probe.entry.stack_window = ((spec.stack_bytes ? spec.stack_bytes : kDefaultStackWindow) + 7) & ~7u;
      probe.entry.event_size += kStackWindowHeader + probe.entry.stack_window;
    }
    probes.push_back(std::move(probe));
  }
  if (undecidable)
    warnings.push_back(fmt::format("{}: {} of the line's {} PCs are left out: when: reads a value DWARF does not "
                                   "locate there, so the condition cannot be decided",
                                   spec.name, undecidable, sites.size()));
  if (probes.empty())
    throw UserError("no-probes", fmt::format("{}: no PC of the line can decide when:", spec.name), spec.when_loc);
  for (size_t i = 0; i < probes.size(); ++i) {
    probes[i].id = first_id + static_cast<int>(i);
    probes[i].entry.program = fmt::format("probe_{}_entry", probes[i].id);
    probes[i].entry.struct_name = fmt::format("probe_{}_entry_event", probes[i].id);
  }
  return probes;
}

std::vector<LineListing> list_line_sites(const std::string &file, int line, const std::string &function,
                                         const std::string &dwarf_file, DebugInfo *debug, const BinaryImage &image,
                                         const Pclntab *pcln, TypeTable &types) {
  std::vector<LineListing> out;
  if (!debug && !pcln)
    throw UserError("no-dwarf-lines", image.path + " has neither DWARF nor .gopclntab: nothing maps its lines to PCs");
  for (LineSite &site :
       resolve_sites(file, line, function, SourceLoc{file, 0, 0}, dwarf_file, image, debug ? nullptr : pcln)) {
    LineListing listing;
    if (debug)
      for (const NamedValue &v : site_values(site, *debug, image, pcln, types, nullptr))
        listing.values.push_back({v.name, types.at(v.type).name, describe_inlined_value(v)});
    listing.site = std::move(site);
    out.push_back(std::move(listing));
  }
  return out;
}

} // namespace weave
