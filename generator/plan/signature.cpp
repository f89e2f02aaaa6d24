#include "plan/signature.h"

#include "binary/binary.h"
#include "binary/pclntab.h"
#include "common/diag.h"
#include "debuginfo/debuginfo.h"
#include "plan/types.h"

#include <fmt/format.h>

namespace weave {

std::string describe_params(const std::vector<GoParam> &params, const TypeTable &types) {
  std::string out;
  for (const auto &p : params)
    out += (out.empty() ? "" : ", ") + p.name + " " + types.at(p.type).name + (p.is_result ? " (result)" : "");
  return out.empty() ? "(none)" : out;
}

namespace {
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

} // namespace

ProbeSignature resolve_signature(const ProbeSpec &probe, const SignatureSources &sources) {
  const BinaryImage &image = sources.image;
  DebugInfo *debug = sources.debug;
  const Pclntab *pcln = sources.pcln;
  TypeTable &types = sources.types;
  ProbeSignature fn_info; // the function, then its complete parameter list
  const PclnFunction *pfn = pcln ? pcln->find(probe.function) : nullptr;
  if (const GoFunction *dwarf_fn = debug ? debug->find_function(probe.function) : nullptr) {
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
    std::string hint = did_you_mean(probe.function, names);
    throw UserError("unknown-function",
                    fmt::format("no function {} in {}", probe.function, image.path),
                    probe.loc,
                    hint.empty() ? "list the functions with: weave funcs " + image.path + " 'main.*'"
                                 : hint);
  }
  if (pfn && pfn->entry == fn_info.low_pc)
    fn_info.pcln_args = pfn->args;

  // The parameters: declared in the spec (required without DWARF), else DWARF's.
  std::vector<GoParam> params = fn_info.params;
  if (probe.has_params || probe.has_results) {
    std::vector<GoParam> declared;
    for (const auto &p : probe.params)
      declared.push_back({p.name, build_declared_type(p.type, types, image.ptr_size), false});
    for (const auto &r : probe.results)
      declared.push_back({r.name, build_declared_type(r.type, types, image.ptr_size), true});
    if (!fn_info.params.empty() || debug) {
      std::vector<GoParam> dwarf_side;
      for (const auto &p : fn_info.params)
        if (probe.has_results || !p.is_result)
          dwarf_side.push_back(p);
      if (probe.has_params && !probe.has_results)
        std::erase_if(declared, [](auto &p) { return p.is_result; });
      check_declared_against_dwarf(declared, dwarf_side, types, probe);
    }
    if (!probe.has_results)
      for (const auto &p : fn_info.params)
        if (p.is_result)
          declared.push_back(p);
    params = declared;
  } else if (!debug && (!probe.captures.empty() || probe.all_args)) {
    throw UserError("no-dwarf-params",
                    fmt::format("{} has no DWARF, so weave cannot know the parameters of {}", image.path,
                                probe.function),
                    probe.loc,
                    "declare them in order, receiver first: params: [{name: s, type: unsafe.Pointer}, "
                    "{name: path, type: string}] (and results: [...] with return: true)");
  }
  // Without DWARF, results are what the spec declares or nothing: calls are still timed.
  fn_info.results_unknown = !debug && !probe.has_results;
  fn_info.declared = debug || probe.has_params || probe.has_results;
  fn_info.results_unchecked = !debug && probe.has_results && fn_info.regabi && !probe.results.empty();
  fn_info.params = std::move(params);
  return fn_info;
}

std::string check_argument_width(const ProbeSignature &signature, const FunctionLayout &layout,
                                 const SignatureSources &sources) {
  if (signature.pcln_args < 0 || !signature.declared)
    return "";
  if (layout.arg_width == static_cast<uint64_t>(signature.pcln_args))
    return "";
  std::string what = fmt::format("the parameters ({}) take {} bytes of argument space, but the compiler recorded "
                                 "{} in .gopclntab",
                                 describe_params(signature.params, sources.types), layout.arg_width,
                                 signature.pcln_args);
  if (signature.results_unknown)
    return what + ": a parameter is missing or mistyped, or results take argument space (declare results: "
                  "[...] too, results: [] for none)";
  return what + ": a parameter is missing or mistyped";
}

} // namespace weave
