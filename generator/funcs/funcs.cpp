#include "funcs/funcs.h"

#include "abi/abi.h"
#include "binary/binary.h"
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
    text += piece.cls == RegClass::Float ? fmt::format("X{}", piece.index)
                                         : regs.int_arg_names.at(static_cast<size_t>(piece.index));
  }
  if (!at_return && loc.spill_offset >= 0)
    text += fmt::format(" (spill slot +{})", loc.spill_offset);
  return text;
}

} // namespace

std::string list_functions(const BinaryImage &image, DebugInfo &debug, const std::string &pattern) {
  GoVersion version = parse_go_version(image.buildinfo ? image.buildinfo->go_version : "");
  TargetAbi target = target_abi(arch_name(image.arch), version.major, version.minor);
  std::ostringstream out;
  size_t matched = 0;
  for (const std::string &name : debug.function_names()) {
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
    std::string hint = did_you_mean(wanted, debug.function_names());
    throw UserError("no-match", fmt::format("no function in {} matches {}", image.path, pattern), SourceLoc{},
                    hint.empty() ? "patterns are shell globs over Go symbol names, e.g. 'main.*' or "
                                   "'*.(*Server).*'"
                                 : hint);
  }
  return out.str();
}

} // namespace weave
