// Entry locations of formal parameters, read with libdw (see locations.h).
//
// libdw: dwarf_getlocation_addr returns, for a location list, the expressions whose range covers
// an address. Go's lists are DWARF 4 .debug_loc (5 from Go 1.25): libdw reads both. Dwarf_Op
// arrays live as long as the Dwarf handle. Single expressions are decoded here (see block_ops).
#include "debuginfo/locations.h"

#include "common/diag.h"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <set>
#include <cstring>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace weave {

namespace {

// Owns the descriptor and the libelf/libdw handles of one file.
// DwarfFile: the binary at `path` opened for libdw, closed when it goes out of scope.
struct DwarfFile {
  int fd = -1;
  Elf *elf = nullptr;
  Dwarf *dwarf = nullptr;
  explicit DwarfFile(const std::string &path) {
    if (elf_version(EV_CURRENT) == EV_NONE)
      throw std::logic_error(std::string("libelf initialisation failed: ") + elf_errmsg(-1));
    SourceLoc loc{path, 0, 0};
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw UserError("binary-unreadable", "cannot open " + path + ": " + std::strerror(errno), loc);
    elf = elf_begin(fd, ELF_C_READ, nullptr);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
      close_all();
      throw UserError("not-elf", path + ": not an ELF file", loc);
    }
    dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
    if (!dwarf) {
      close_all();
      throw UserError("no-dwarf", path + ": cannot read DWARF: " + dwarf_errmsg(-1), loc);
    }
  }
  DwarfFile(const DwarfFile &) = delete;
  DwarfFile &operator=(const DwarfFile &) = delete;
  ~DwarfFile() { close_all(); }
  // A constructor that throws runs no destructor: it closes what it opened itself.
  void close_all() {
    if (dwarf)
      dwarf_end(dwarf);
    if (elf)
      elf_end(elf);
    if (fd >= 0)
      close(fd);
  }
};

[[noreturn]] void dwarf_fail(const std::string &path, const std::string &what) {
  throw UserError("bad-dwarf", path + ": " + what + ": " + dwarf_errmsg(-1), SourceLoc{path, 0, 0});
}

std::string integrated_name(Dwarf_Die *die) {
  Dwarf_Attribute attr;
  const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  return name ? name : "";
}

// Decodes one expression into pieces. Anything outside the forms Go writes becomes one
// Unsupported piece, so a caller sees it rather than a guess.
std::vector<DwarfPiece> decode(const Dwarf_Op *ops, size_t count, std::string &text) {
  std::vector<DwarfPiece> pieces;
  DwarfPiece current;
  bool have_location = false;
  auto add_text = [&](const std::string &word) { text += (text.empty() ? "" : " ") + word; };
  auto unsupported = [&](unsigned atom) {
    add_text("op" + std::to_string(atom));
    DwarfPiece bad;
    bad.kind = DwarfPiece::Kind::Unsupported;
    return std::vector<DwarfPiece>{bad};
  };
  for (size_t i = 0; i < count; ++i) {
    const Dwarf_Op &op = ops[i];
    if (op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) {
      if (have_location)
        return unsupported(op.atom);
      current = {DwarfPiece::Kind::Register, static_cast<int>(op.atom - DW_OP_reg0), 0, 0};
      have_location = true;
      add_text("reg" + std::to_string(current.reg));
    } else if (op.atom == DW_OP_regx) {
      if (have_location)
        return unsupported(op.atom);
      current = {DwarfPiece::Kind::Register, static_cast<int>(op.number), 0, 0};
      have_location = true;
      add_text("reg" + std::to_string(current.reg));
    } else if (op.atom == DW_OP_call_frame_cfa) {
      if (have_location)
        return unsupported(op.atom);
      current = {DwarfPiece::Kind::Memory, -1, 0, 0};
      have_location = true;
      add_text("cfa");
    } else if (op.atom == DW_OP_fbreg) {
      if (have_location)
        return unsupported(op.atom);
      current = {DwarfPiece::Kind::Memory, -1, static_cast<int64_t>(op.number), 0};
      have_location = true;
      add_text("fbreg " + std::to_string(current.cfa_offset));
    } else if (op.atom == DW_OP_plus_uconst && have_location &&
               current.kind == DwarfPiece::Kind::Memory) {
      current.cfa_offset += static_cast<int64_t>(op.number);
      add_text("plus_uconst " + std::to_string(op.number));
    } else if (op.atom == DW_OP_piece) {
      if (!have_location)
        current = {DwarfPiece::Kind::Absent, -1, 0, 0};
      current.size = op.number;
      pieces.push_back(current);
      have_location = false;
      add_text("piece " + std::to_string(op.number));
    } else {
      return unsupported(op.atom);
    }
  }
  if (have_location)
    pieces.push_back(current); // a whole-value location (no DW_OP_piece)
  return pieces;
}

// Go writes single location expressions as DW_FORM_block1 in DWARF 4 units
// (cmd/internal/dwarf/dwarf.go:1709, DW_ABRV_PARAM), where DWARF 4 wants DW_FORM_exprloc; libdw
// 0.188 rejects a block form in a version-4 unit with "not a location list value" (attr_ok in
// libdw/dwarf_getlocation.c). So blocks are decoded here, for the few operations Go writes.
bool read_uleb(const uint8_t *&p, const uint8_t *end, uint64_t &value) {
  value = 0;
  for (int shift = 0; p < end && shift < 64; shift += 7) {
    uint8_t byte = *p++;
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

bool read_sleb(const uint8_t *&p, const uint8_t *end, int64_t &value) {
  uint64_t result = 0;
  int shift = 0;
  while (p < end && shift < 64) {
    uint8_t byte = *p++;
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    shift += 7;
    if (!(byte & 0x80)) {
      if (shift < 64 && (byte & 0x40))
        result |= ~uint64_t{0} << shift;
      value = static_cast<int64_t>(result);
      return true;
    }
  }
  return false;
}

// The operations of a block; an operation it does not know ends the list with that atom and
// number 0, which decode() then reports as Unsupported.
std::vector<Dwarf_Op> block_ops(const Dwarf_Block &block) {
  std::vector<Dwarf_Op> ops;
  const uint8_t *p = block.data, *end = block.data + block.length;
  while (p < end) {
    Dwarf_Op op{};
    op.offset = static_cast<Dwarf_Word>(p - block.data);
    op.atom = *p++;
    bool ok = true;
    if (op.atom == DW_OP_regx || op.atom == DW_OP_piece || op.atom == DW_OP_plus_uconst) {
      ok = read_uleb(p, end, op.number);
    } else if (op.atom == DW_OP_fbreg) {
      int64_t value = 0;
      ok = read_sleb(p, end, value);
      op.number = static_cast<Dwarf_Word>(value);
    } else if (!(op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) &&
               op.atom != DW_OP_call_frame_cfa) {
      ops.push_back(op);
      break;
    }
    if (!ok) {
      op.atom = 0; // truncated: reported as unsupported
      ops.push_back(op);
      break;
    }
    ops.push_back(op);
  }
  return ops;
}

bool is_block_form(unsigned form) {
  return form == DW_FORM_block1 || form == DW_FORM_block2 || form == DW_FORM_block4 ||
         form == DW_FORM_block || form == DW_FORM_exprloc;
}

bool frame_base_is_cfa(Dwarf_Die *subprogram) {
  Dwarf_Attribute attr;
  Dwarf_Block block;
  if (!dwarf_attr(subprogram, DW_AT_frame_base, &attr) || !is_block_form(dwarf_whatform(&attr)) ||
      dwarf_formblock(&attr, &block) != 0)
    return false;
  std::vector<Dwarf_Op> ops = block_ops(block);
  return ops.size() == 1 && ops[0].atom == DW_OP_call_frame_cfa;
}

ParamEntryLocation read_param(const std::string &path, Dwarf_Die *param, Dwarf_Addr entry) {
  ParamEntryLocation out;
  out.name = integrated_name(param);
  Dwarf_Attribute attr;
  bool flag = false;
  if (dwarf_attr_integrate(param, DW_AT_variable_parameter, &attr) &&
      dwarf_formflag(&attr, &flag) == 0)
    out.is_result = flag;
  // Not integrated: an abstract origin's location is not this copy's.
  if (!dwarf_attr(param, DW_AT_location, &attr)) {
    out.status = ParamEntryLocation::Status::NoAttribute;
    return out;
  }
  if (is_block_form(dwarf_whatform(&attr))) {
    Dwarf_Block block;
    if (dwarf_formblock(&attr, &block) != 0)
      dwarf_fail(path, "cannot read the location of parameter " + out.name);
    // Go writes a missing location as an empty block (cmd/internal/dwarf/dwarf.go:1701-1710).
    if (block.length == 0) {
      out.status = ParamEntryLocation::Status::Empty;
      return out;
    }
    std::vector<Dwarf_Op> ops = block_ops(block);
    out.status = ParamEntryLocation::Status::AtEntry; // one expression for the whole function
    out.pieces = decode(ops.data(), ops.size(), out.ops);
    return out;
  }
  Dwarf_Op *exprs[4];
  size_t lengths[4];
  int found = dwarf_getlocation_addr(&attr, entry, exprs, lengths, 4);
  if (found < 0)
    dwarf_fail(path, "cannot read the location list of parameter " + out.name);
  if (found == 0) {
    out.status = ParamEntryLocation::Status::NotAtEntry;
    return out;
  }
  // Go's lists do not overlap; should two entries cover the entry, the first one is reported.
  out.status = ParamEntryLocation::Status::AtEntry;
  out.pieces = decode(exprs[0], lengths[0], out.ops);
  return out;
}

} // namespace

std::vector<FunctionEntryLocations> read_entry_locations(const std::string &path) {
  DwarfFile file(path);

  std::vector<FunctionEntryLocations> functions;
  Dwarf_CU *cu = nullptr;
  Dwarf_Die cu_die, sub_die;
  uint8_t unit_type = 0;
  int status;
  while ((status = dwarf_get_units(file.dwarf, cu, &cu, nullptr, &unit_type, &cu_die, &sub_die)) ==
         0) {
    Dwarf_Die child;
    int more = dwarf_child(&cu_die, &child);
    if (more < 0)
      dwarf_fail(path, "cannot read a compile unit");
    // Go puts every subprogram at the top level of its CU (closures are "pkg.outer.func1").
    for (; more == 0; more = dwarf_siblingof(&child, &child)) {
      Dwarf_Addr low = 0;
      if (dwarf_tag(&child) != DW_TAG_subprogram || dwarf_lowpc(&child, &low) != 0)
        continue;
      FunctionEntryLocations fn;
      fn.name = integrated_name(&child);
      fn.low_pc = low;
      fn.frame_base_is_cfa = frame_base_is_cfa(&child);
      Dwarf_Attribute attr;
      bool flag = false;
      fn.trampoline =
          dwarf_attr(&child, DW_AT_trampoline, &attr) && dwarf_formflag(&attr, &flag) == 0 && flag;
      const char *file = dwarf_decl_file(&child);
      static constexpr std::string_view kAutogenerated = "<autogenerated>";
      fn.autogenerated = file && std::string_view(file).ends_with(kAutogenerated);
      Dwarf_Die param;
      int more_params = dwarf_child(&child, &param);
      for (; more_params == 0; more_params = dwarf_siblingof(&param, &param))
        if (dwarf_tag(&param) == DW_TAG_formal_parameter)
          fn.params.push_back(read_param(path, &param, low));
      if (more_params < 0)
        dwarf_fail(path, "cannot read the parameters of " + fn.name);
      functions.push_back(std::move(fn));
    }
    if (more < 0)
      dwarf_fail(path, "cannot walk a compile unit");
  }
  if (status < 0)
    dwarf_fail(path, "cannot read compile units");
  return functions;
}

namespace {

std::string type_name_of(Dwarf_Die *param) {
  Dwarf_Attribute attr;
  Dwarf_Die type;
  if (!dwarf_attr_integrate(param, DW_AT_type, &attr) || !dwarf_formref_die(&attr, &type))
    return "";
  const char *name = dwarf_diename(&type);
  return name ? name : "";
}

// The lowest address a DIE covers (low_pc, else the least start of its ranges); false when none.
bool lowest_address(Dwarf_Die *die, Dwarf_Addr &low) {
  if (dwarf_lowpc(die, &low) == 0)
    return true;
  Dwarf_Addr base = 0, start = 0, end = 0;
  ptrdiff_t offset = 0;
  bool found = false;
  while ((offset = dwarf_ranges(die, offset, &base, &start, &end)) > 0)
    if (!found || start < low) {
      low = start;
      found = true;
    }
  return found;
}

void walk_inlined(const std::string &path, Dwarf_Die *parent, const std::string &physical,
                  const std::function<bool(std::string_view)> &wanted,
                  std::vector<InlinedCopyLocations> &out, int depth) {
  if (depth > 200)
    dwarf_fail(path, "inlined subroutines nest too deep in " + physical);
  Dwarf_Die child;
  int more = dwarf_child(parent, &child);
  for (; more == 0; more = dwarf_siblingof(&child, &child)) {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_lexical_block) {
      walk_inlined(path, &child, physical, wanted, out, depth + 1);
      continue;
    }
    if (tag != DW_TAG_inlined_subroutine)
      continue;
    walk_inlined(path, &child, physical, wanted, out, depth + 1);
    Dwarf_Attribute attr;
    Dwarf_Die origin;
    if (!dwarf_attr(&child, DW_AT_abstract_origin, &attr) || !dwarf_formref_die(&attr, &origin))
      continue;
    InlinedCopyLocations copy;
    copy.function = integrated_name(&origin);
    if (wanted && !wanted(copy.function))
      continue;
    Dwarf_Addr low = 0;
    if (!lowest_address(&child, low))
      continue;
    copy.physical = physical;
    copy.low_pc = low;
    Dwarf_Word line = 0;
    if (dwarf_attr(&child, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &line) == 0)
      copy.call_line = static_cast<int>(line);
    // The abstract origin lists every parameter; the copy only those it has a location for.
    Dwarf_Die param;
    int more_params = dwarf_child(&origin, &param);
    for (; more_params == 0; more_params = dwarf_siblingof(&param, &param)) {
      if (dwarf_tag(&param) != DW_TAG_formal_parameter)
        continue;
      bool flag = false;
      if (dwarf_attr(&param, DW_AT_variable_parameter, &attr) && dwarf_formflag(&attr, &flag) == 0 && flag)
        continue; // a result
      InlinedCopyLocations::Param p;
      p.name = integrated_name(&param);
      p.type = type_name_of(&param);
      p.location.name = p.name;
      copy.params.push_back(std::move(p));
    }
    Dwarf_Die concrete;
    int more_concrete = dwarf_child(&child, &concrete);
    for (; more_concrete == 0; more_concrete = dwarf_siblingof(&concrete, &concrete)) {
      if (dwarf_tag(&concrete) != DW_TAG_formal_parameter)
        continue;
      std::string name = integrated_name(&concrete);
      for (auto &p : copy.params)
        if (p.name == name)
          p.location = read_param(path, &concrete, low);
    }
    out.push_back(std::move(copy));
  }
  if (more < 0)
    dwarf_fail(path, "cannot walk the body of " + physical);
}

} // namespace

std::vector<InlinedCopyLocations> read_inlined_locations(
    const std::string &path, const std::function<bool(std::string_view)> &wanted) {
  DwarfFile file(path);
  std::vector<InlinedCopyLocations> copies;
  Dwarf_CU *cu = nullptr;
  Dwarf_Die cu_die, sub_die;
  uint8_t unit_type = 0;
  int status;
  while ((status = dwarf_get_units(file.dwarf, cu, &cu, nullptr, &unit_type, &cu_die, &sub_die)) == 0) {
    Dwarf_Die child;
    int more = dwarf_child(&cu_die, &child);
    for (; more == 0; more = dwarf_siblingof(&child, &child)) {
      Dwarf_Addr low = 0;
      if (dwarf_tag(&child) != DW_TAG_subprogram || dwarf_lowpc(&child, &low) != 0)
        continue;
      walk_inlined(path, &child, integrated_name(&child), wanted, copies, 0);
    }
    if (more < 0)
      dwarf_fail(path, "cannot walk a compile unit");
  }
  if (status < 0)
    dwarf_fail(path, "cannot read compile units");
  return copies;
}


bool path_suffix_matches(std::string_view name, std::string_view suffix) {
  if (suffix.empty() || !name.ends_with(suffix))
    return false;
  return name.size() == suffix.size() || suffix.front() == '/' || name[name.size() - suffix.size() - 1] == '/';
}

namespace {

// The chain of scopes from `die` (which contains pc) down to the innermost one containing pc.
void scope_chain(const std::string &path, Dwarf_Die die, Dwarf_Addr pc, std::vector<Dwarf_Die> &chain) {
  chain.push_back(die);
  for (int depth = 0; depth < 200; ++depth) {
    Dwarf_Die child;
    int more = dwarf_child(&chain.back(), &child);
    bool descended = false;
    for (; more == 0; more = dwarf_siblingof(&child, &child)) {
      int tag = dwarf_tag(&child);
      if (tag != DW_TAG_lexical_block && tag != DW_TAG_inlined_subroutine)
        continue;
      int has = dwarf_haspc(&child, pc);
      if (has < 0)
        dwarf_fail(path, "cannot read the ranges of a scope");
      if (has > 0) {
        chain.push_back(child);
        descended = true;
        break;
      }
    }
    if (more < 0)
      dwarf_fail(path, "cannot walk a scope");
    if (!descended)
      return;
  }
  dwarf_fail(path, "scopes nest too deep");
}

int decl_line_of(Dwarf_Die *die) {
  Dwarf_Attribute attr;
  Dwarf_Word line = 0;
  if (dwarf_attr_integrate(die, DW_AT_decl_line, &attr) && dwarf_formudata(&attr, &line) == 0 && line < 1u << 30)
    return static_cast<int>(line);
  return 0;
}

// The start of every entry of a DIE's location list; false for a single expression (or none).
bool location_starts(const std::string &path, Dwarf_Die *die, std::vector<uint64_t> &starts) {
  Dwarf_Attribute attr;
  if (!dwarf_attr(die, DW_AT_location, &attr) || is_block_form(dwarf_whatform(&attr)))
    return false;
  Dwarf_Addr base = 0, start = 0, end = 0;
  Dwarf_Op *expr = nullptr;
  size_t len = 0;
  ptrdiff_t offset = 0;
  for (int n = 0; n < 1 << 16 && (offset = dwarf_getlocations(&attr, offset, &base, &start, &end, &expr, &len)) > 0;
       ++n)
    starts.push_back(start);
  if (offset < 0)
    dwarf_fail(path, "cannot read a location list");
  return true;
}

struct Row {
  Dwarf_Addr addr = 0;
  int line = 0;
  bool same_file = false, end_sequence = false;
};

void fill_site(const std::string &path, Dwarf_Die *cu_die, LineSite &site, const std::vector<Row> &rows) {
  Dwarf_Die child;
  int more = dwarf_child(cu_die, &child);
  for (; more == 0; more = dwarf_siblingof(&child, &child)) {
    if (dwarf_tag(&child) != DW_TAG_subprogram)
      continue;
    int has = dwarf_haspc(&child, site.pc);
    if (has < 0)
      dwarf_fail(path, "cannot read the ranges of a subprogram");
    if (has > 0)
      break;
  }
  if (more != 0)
    return; // no subprogram holds the PC: the site has no function and no variables
  site.physical = integrated_name(&child);
  site.function = site.physical;
  // Rows of other lines inside this line's code in the function, from the PC on.
  Dwarf_Addr fn_low = 0, fn_high = 0;
  if (dwarf_lowpc(&child, &fn_low) == 0 && dwarf_highpc(&child, &fn_high) == 0) {
    auto at = std::lower_bound(rows.begin(), rows.end(), site.pc,
                               [](const Row &r, Dwarf_Addr pc) { return r.addr < pc; });
    Dwarf_Addr last_end = site.pc;
    std::vector<LineSite::Interleaved> others;
    for (auto it = at; it != rows.end() && it + 1 != rows.end() && it->addr < fn_high && !it->end_sequence; ++it) {
      Dwarf_Addr end = (it + 1)->addr;
      if (end <= it->addr)
        continue;
      if (it->same_file && it->line == site.line)
        last_end = end;
      else
        others.push_back({it->addr, end, it->line});
    }
    for (const auto &o : others)
      if (o.start < last_end)
        site.interleaved.push_back(o);
  }
  std::vector<Dwarf_Die> chain;
  scope_chain(path, child, site.pc, chain);
  // The line's own function: the innermost inlined copy holding the PC, else the subprogram.
  size_t start = 0;
  for (size_t i = chain.size(); i-- > 1;)
    if (dwarf_tag(&chain[i]) == DW_TAG_inlined_subroutine) {
      start = i;
      break;
    }
  std::optional<Dwarf_Die> inlined_origin;
  if (start > 0) {
    Dwarf_Attribute attr;
    Dwarf_Die origin;
    if (dwarf_attr(&chain[start], DW_AT_abstract_origin, &attr) && dwarf_formref_die(&attr, &origin)) {
      site.function = integrated_name(&origin);
      inlined_origin = origin;
    }
    site.inlined = true;
  }
  // Innermost first, so an inner declaration hides an outer one of the same name.
  for (size_t i = chain.size(); i-- > start;) {
    Dwarf_Die var;
    int more_vars = dwarf_child(&chain[i], &var);
    for (; more_vars == 0; more_vars = dwarf_siblingof(&var, &var)) {
      int tag = dwarf_tag(&var);
      if (tag != DW_TAG_variable && tag != DW_TAG_formal_parameter)
        continue;
      LineVariable v;
      v.name = integrated_name(&var);
      if (v.name.empty())
        continue;
      bool hidden = false;
      for (const LineVariable &seen : site.variables)
        hidden = hidden || seen.name == v.name;
      if (hidden)
        continue;
      v.type = type_name_of(&var);
      v.is_param = tag == DW_TAG_formal_parameter;
      v.decl_line = decl_line_of(&var);
      v.location = read_param(path, &var, site.pc);
      v.whole_function = !location_starts(path, &var, v.location_starts);
      v.is_result = v.location.is_result;
      site.variables.push_back(std::move(v));
    }
    if (more_vars < 0)
      dwarf_fail(path, "cannot read the variables of " + site.physical);
  }
  // An inlined copy lists only the variables it has a location for; the function's own top-level
  // ones it leaves out are in scope all the same, and located nowhere.
  if (inlined_origin) {
    Dwarf_Die var;
    int more_vars = dwarf_child(&*inlined_origin, &var);
    for (; more_vars == 0; more_vars = dwarf_siblingof(&var, &var)) {
      int tag = dwarf_tag(&var);
      if (tag != DW_TAG_variable && tag != DW_TAG_formal_parameter)
        continue;
      LineVariable v;
      v.name = integrated_name(&var);
      bool seen = v.name.empty();
      for (const LineVariable &known : site.variables)
        seen = seen || known.name == v.name;
      if (seen)
        continue;
      v.type = type_name_of(&var);
      v.is_param = tag == DW_TAG_formal_parameter;
      v.decl_line = decl_line_of(&var);
      v.location.name = v.name;
      v.location.status = ParamEntryLocation::Status::NoAttribute;
      Dwarf_Attribute attr;
      bool flag = false;
      v.is_result = dwarf_attr(&var, DW_AT_variable_parameter, &attr) && dwarf_formflag(&attr, &flag) == 0 && flag;
      v.location.is_result = v.is_result;
      site.variables.push_back(std::move(v));
    }
    if (more_vars < 0)
      dwarf_fail(path, "cannot read the variables of " + site.function);
  }
}

} // namespace

LineSites read_line_sites(const std::string &path, const std::string &suffix, int line) {
  DwarfFile file(path);
  LineSites out;
  std::vector<std::pair<Dwarf_Addr, std::string>> pcs; // with the CU offset's die kept below
  std::vector<Dwarf_Die> cus;
  std::vector<std::vector<Row>> cu_rows; // each unit's rows, in table order
  std::vector<size_t> pc_cu;
  std::vector<Dwarf_Addr> pc_block_start;
  std::set<std::string> files;
  Dwarf_CU *cu = nullptr;
  Dwarf_Die cu_die, sub_die;
  uint8_t unit_type = 0;
  int status;
  while ((status = dwarf_get_units(file.dwarf, cu, &cu, nullptr, &unit_type, &cu_die, &sub_die)) == 0) {
    // Only units whose file table names a matching file.
    Dwarf_Files *srcfiles = nullptr;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(&cu_die, &srcfiles, &nfiles) != 0)
      continue; // a unit with no line table
    bool any = false;
    for (size_t i = 0; i < nfiles; ++i) {
      const char *name = dwarf_filesrc(srcfiles, i, nullptr, nullptr);
      if (name && path_suffix_matches(name, suffix)) {
        any = true;
        files.insert(name);
      }
    }
    if (!any)
      continue;
    Dwarf_Lines *lines = nullptr;
    size_t nlines = 0;
    if (dwarf_getsrclines(&cu_die, &lines, &nlines) != 0)
      dwarf_fail(path, "cannot read a line table");
    // A block: consecutive rows of this file and line; its PC is its first is_stmt row's address,
    // kept when an instruction really starts there (the next row after the block is further on).
    std::vector<Row> &rows = cu_rows.emplace_back();
    const size_t cu_index = cu_rows.size() - 1;
    bool in_block = false;
    Dwarf_Addr block_start = 0;
    std::optional<Dwarf_Addr> stmt;
    std::string stmt_file;
    auto close_block = [&](Dwarf_Addr end) {
      if (in_block && stmt && *stmt < end)
        pcs.push_back({*stmt, stmt_file}), cus.push_back(cu_die), pc_cu.push_back(cu_index),
            pc_block_start.push_back(block_start);
      in_block = false;
      stmt.reset();
    };
    for (size_t i = 0; i < nlines; ++i) {
      Dwarf_Line *row = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr = 0;
      int lineno = 0;
      bool end_sequence = false, is_stmt = false;
      if (!row || dwarf_lineaddr(row, &addr) != 0 || dwarf_lineno(row, &lineno) != 0 ||
          dwarf_lineendsequence(row, &end_sequence) != 0 || dwarf_linebeginstatement(row, &is_stmt) != 0)
        dwarf_fail(path, "cannot read a line table row");
      const char *src = dwarf_linesrc(row, nullptr, nullptr);
      bool match = !end_sequence && lineno == line && src && path_suffix_matches(src, suffix);
      rows.push_back({addr, lineno, src && path_suffix_matches(src, suffix), end_sequence});
      if (!match) {
        close_block(addr);
        continue;
      }
      if (in_block && stmt_file != src) // another matching file: another block
        close_block(addr);
      if (!in_block) {
        in_block = true;
        stmt_file = src;
        block_start = addr;
      }
      if (is_stmt && !stmt)
        stmt = addr;
    }
    close_block(~Dwarf_Addr{0});
  }
  if (status < 0)
    dwarf_fail(path, "cannot read compile units");
  out.files.assign(files.begin(), files.end());
  for (size_t i = 0; i < pcs.size(); ++i) {
    LineSite site;
    site.pc = pcs[i].first;
    site.file = pcs[i].second;
    site.line = line;
    site.block_start = pc_block_start[i];
    std::vector<Row> rows = cu_rows[pc_cu[i]];
    // Ordered by address for the search (sequences do not overlap in Go's tables).
    std::stable_sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return a.addr < b.addr; });
    fill_site(path, &cus[i], site, rows);
    out.sites.push_back(std::move(site));
  }
  std::sort(out.sites.begin(), out.sites.end(), [](const LineSite &a, const LineSite &b) { return a.pc < b.pc; });
  // Two blocks of one line may begin at the same PC in two units' tables: keep one.
  out.sites.erase(std::unique(out.sites.begin(), out.sites.end(),
                              [](const LineSite &a, const LineSite &b) { return a.pc == b.pc; }),
                  out.sites.end());
  return out;
}

} // namespace weave
