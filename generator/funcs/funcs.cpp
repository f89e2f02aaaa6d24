#include "funcs/funcs.h"

#include "abi/abi.h"
#include "binary/binary.h"
#include "binary/pclntab.h"
#include "common/diag.h"
#include "debuginfo/debuginfo.h"

#include <fmt/format.h>

#include <algorithm>
#include <fnmatch.h>
#include <sstream>

namespace weave {

namespace {

std::string describe(const ParamLocation &loc, const ArchRegisters &regs, bool at_return) {
  if (loc.on_stack)
    return fmt::format("stack +{} (SP+{})", loc.stack_offset, regs.stack_args_offset + loc.stack_offset);
  std::string text;
  for (const RegPiece &piece : loc.pieces) {
    if (!text.empty())
      text += ",";
    text += piece.cls == RegClass::Float ? fmt::format("{}{}", regs.float_arg_prefix, piece.index)
                                         : regs.int_arg_names.at(static_cast<size_t>(piece.index));
  }
  if (!at_return && loc.spill_offset >= 0)
    text += fmt::format(" (spill slot +{})", loc.spill_offset);
  return text;
}

} // namespace

std::string list_functions(const BinaryImage &image, DebugInfo *debug_ptr, const Pclntab *pcln,
                           const std::string &pattern) {
  GoVersion version = parse_go_version(image.buildinfo ? image.buildinfo->go_version : "");
  TargetAbi target = target_abi(arch_name(image.arch), version.major, version.minor);
  std::ostringstream out;
  size_t matched = 0;
  std::vector<std::string> all_names;
  if (!debug_ptr) {
    if (!pcln)
      throw UserError("no-functions",
                      fmt::format("{} has neither DWARF nor .gopclntab to list functions from", image.path));
    // Stripped: what .gopclntab knows. Parameters need DWARF or a spec's params.
    constexpr uint8_t kFuncFlagAsm = 4;
    std::vector<const PclnFunction *> sorted;
    for (const auto &f : pcln->functions()) {
      all_names.push_back(f.name);
      if (pattern.empty() || fnmatch(pattern.c_str(), f.name.c_str(), 0) == 0)
        sorted.push_back(&f);
    }
    std::stable_sort(sorted.begin(), sorted.end(), [](auto *a, auto *b) { return a->name < b->name; });
    for (const PclnFunction *f : sorted) {
      ++matched;
      auto offset = file_offset(image, f->entry);
      bool asm_abi0 = (f->flag & kFuncFlagAsm) || !target.has_regabi;
      out << fmt::format("{}  {:#x}  file offset {}  {}  args={}  (no DWARF: parameters unknown)\n", f->name,
                         f->entry, offset ? fmt::format("{:#x}", *offset) : "-",
                         asm_abi0 ? "ABI0" : "ABIInternal", f->args);
    }
  }
  for (const std::string &name : debug_ptr ? debug_ptr->function_names() : std::vector<std::string>{}) {
    DebugInfo &debug = *debug_ptr;
    if (!pattern.empty() && fnmatch(pattern.c_str(), name.c_str(), 0) != 0)
      continue;
    const GoFunction *fn = debug.find_function(name);
    if (!fn)
      continue;
    ++matched;
    AbiConfig config = function_abi(target, fn->regabi);
    std::vector<TypeId> inputs, results;
    for (const GoParam &p : fn->params)
      (p.is_result ? results : inputs).push_back(p.type);
    auto offset = file_offset(image, fn->low_pc);
    out << fmt::format("{}  {:#x}  file offset {}  {}", fn->name, fn->low_pc,
                       offset ? fmt::format("{:#x}", *offset) : "-", config.name);
    FunctionLayout layout;
    try {
      layout = assign_locations(debug.types(), inputs, results, config);
      const PclnFunction *pf = pcln ? pcln->find(name) : nullptr;
      if (pf && pf->entry == fn->low_pc && pf->args >= 0 && static_cast<uint64_t>(pf->args) != layout.arg_width)
        out << fmt::format("  args={}, but .gopclntab says {}: DWARF lacks a parameter (blank or unnamed); "
                           "declare params to probe it\n",
                           layout.arg_width, pf->args);
      else
        out << fmt::format("  args={}\n", layout.arg_width);
    } catch (const std::invalid_argument &e) {
      out << fmt::format("  (cannot place: {})\n", e.what());
      continue;
    }
    size_t in = 0, res = 0;
    for (const GoParam &p : fn->params) {
      const GoType &type = debug.types().at(p.type);
      bool is_result = p.is_result;
      const ParamLocation &loc = is_result ? layout.results[res++] : layout.inputs[in++];
      out << fmt::format("  {:<6} {:<16} {:<28} {}\n", is_result ? "result" : "param", p.name, type.name,
                         describe(loc, target.regs, is_result) + (is_result ? " at RET" : ""));
    }
  }
  if (matched == 0) {
    std::string wanted = pattern;
    for (char c : {'*', '?', '['})
      wanted.erase(std::remove(wanted.begin(), wanted.end(), c), wanted.end());
    std::string hint = did_you_mean(wanted, debug_ptr ? debug_ptr->function_names() : all_names);
    throw UserError("no-match", fmt::format("no function in {} matches {}", image.path, pattern), SourceLoc{},
                    hint.empty() ? "patterns are shell globs over Go symbol names, e.g. 'main.*' or "
                                   "'*.(*Server).*'"
                                 : hint);
  }
  return out.str();
}

} // namespace weave
