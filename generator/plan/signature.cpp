#include "plan/signature.h"

#include "gobinary/binary.h"
#include "gobinary/pclntab.h"
#include "common/diag.h"
#include "debuginfo/debuginfo.h"
#include "debuginfo/dictionaries.h"
#include "plan/stripped_types.h"
#include "plan/types.h"
#include "plan/wildcards.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace weave {

std::string describe_params(const std::vector<GoParam> &params, const TypeTable &types) {
  std::string out;
  for (const auto &p : params) {
    // A declared struct is named by all its fields: its start is enough to know it by.
    std::string type = types.at(p.type).name;
    if (type.size() > 60)
      type = type.substr(0, 50) + "...}";
    out += (out.empty() ? "" : ", ") + p.name + " " + type + (p.is_result ? " (result)" : "");
  }
  return out.empty() ? "(none)" : out;
}

std::vector<std::string> probeable_function_names(DebugInfo *debug, const Pclntab *pcln) {
  std::vector<std::string> names;
  if (debug)
    names = debug->function_names();
  else if (pcln)
    for (const auto &f : pcln->functions())
      names.push_back(f.name);
  return names;
}

namespace {

// LayoutCompare finds the first place where a declared type differs from the binary's: a kind, a
// size, a field's name, offset or type, a pointer's, slice's or map's element. It answers in a few
// words ("field RawQuery at offset 64, binary has it at 72") so that a mismatch is one line however
// large the types are.
class LayoutCompare {
public:
  explicit LayoutCompare(const TypeTable &types) : types_(types) {}

  // "" when `declared` describes `binary`; `where` names the part being compared ("" at the top,
  // "field Header.Revision" below).
  std::string difference(TypeId declared, TypeId binary, const std::string &where = "") {
    if (declared == binary || !seen_.insert({declared, binary}).second)
      return "";
    const GoType &d = types_.at(declared), &b = types_.at(binary);
    std::string at = where.empty() ? "" : where + " ";
    // An opaque pointer may stand for any pointer: it is read as an address and followed nowhere.
    if (d.kind == TypeKind::UnsafePointer && (b.kind == TypeKind::Pointer || b.kind == TypeKind::UnsafePointer))
      return "";
    // A struct's size is told by the field that makes it differ.
    if (d.kind != b.kind || (d.size != b.size && d.kind != TypeKind::Struct)) {
      if (d.name == b.name || d.size != b.size)
        return fmt::format("{}as {} ({} bytes), binary has {} ({} bytes)", at, short_name(d), d.size, b.name, b.size);
      return fmt::format("{}as {}, binary has {}", at, short_name(d), b.name);
    }
    switch (d.kind) {
    case TypeKind::Pointer:
    case TypeKind::Slice:
    case TypeKind::Array:
    case TypeKind::Chan:
    case TypeKind::Map:
      // A different element is told as the types that hold it: "as *uint8, binary has *T".
      if ((d.kind == TypeKind::Array && d.count != b.count) || shallow_differs(d.elem, b.elem) ||
          (d.kind == TypeKind::Map && shallow_differs(d.key, b.key)))
        return fmt::format("{}as {}, binary has {}", at, short_name(d), b.name);
      if (d.kind == TypeKind::Map)
        if (std::string key = element(d.key, b.key, where); !key.empty())
          return key;
      return element(d.elem, b.elem, where);
    case TypeKind::Struct:
      if (std::string field = fields(d, b, where); !field.empty())
        return field;
      if (d.size != b.size)
        return fmt::format("{}as {} bytes, binary has {} bytes", at, d.size, b.size);
      return "";
    case TypeKind::Interface:
      if (d.empty_interface != b.empty_interface)
        return fmt::format("{}as {}, binary has {}", at, short_name(d), b.name);
      return "";
    default:
      // Same kind and size: ints, floats, strings and the like read alike whatever their names.
      return "";
    }
  }

private:
  bool shallow_differs(TypeId d, TypeId b) const {
    if (d == kNoType || b == kNoType)
      return false;
    const GoType &x = types_.at(d), &y = types_.at(b);
    if (x.kind == TypeKind::UnsafePointer && (y.kind == TypeKind::Pointer || y.kind == TypeKind::UnsafePointer))
      return false;
    return x.kind != y.kind || (x.size != y.size && x.kind != TypeKind::Struct);
  }

  std::string element(TypeId d, TypeId b, const std::string &where) {
    if (d == kNoType || b == kNoType)
      return "";
    return difference(d, b, where);
  }

  std::string fields(const GoType &d, const GoType &b, const std::string &where) {
    auto inside = [&where](const std::string &name) {
      return where.empty() ? "field " + name : where + "." + name;
    };
    for (const GoField &f : d.fields) {
      auto it = std::find_if(b.fields.begin(), b.fields.end(), [&](const GoField &g) { return g.name == f.name; });
      if (it == b.fields.end())
        return fmt::format("{}: the binary's {} has no such field", inside(f.name), b.name);
      if (it->offset != f.offset)
        return fmt::format("{} at offset {}, binary has it at {}", inside(f.name), f.offset, it->offset);
      if (std::string inner = difference(f.type, it->type, inside(f.name)); !inner.empty())
        return inner;
    }
    for (const GoField &g : b.fields)
      if (std::none_of(d.fields.begin(), d.fields.end(), [&](const GoField &f) { return f.name == g.name; }))
        return fmt::format("{} (offset {}) is not declared", inside(g.name), g.offset);
    return "";
  }

  // A declared struct's name spells out every field; a line has room for its start only.
  static std::string short_name(const GoType &t) {
    return t.name.size() > 60 ? t.name.substr(0, 50) + "...}" : t.name;
  }

  const TypeTable &types_;
  std::set<std::pair<TypeId, TypeId>> seen_; // recursive types compare once
};

// Declared params must describe what DWARF says, layouts included: same names, in order, of the
// same types. Any difference is refused, saying in one line where it is: a value read through a
// declared layout that is not the binary's would be wrong, and nothing would show it. Returns the
// declared list with each type replaced by the binary's (the same layout, with its names, embedded
// fields and map headers).
std::vector<GoParam> check_declared_against_dwarf(const std::vector<GoParam> &declared,
                                                  const std::vector<GoParam> &dwarf, const TypeTable &types,
                                                  const ProbeSpec &spec) {
  auto label = [&](const std::vector<GoParam> &list, size_t i) {
    size_t n = 0;
    for (size_t j = 0; j <= i; ++j)
      n += list[j].is_result == list[i].is_result;
    return fmt::format("{} {} '{}'", list[i].is_result ? "result" : "param", n, list[i].name);
  };
  std::string why;
  for (size_t i = 0; why.empty() && i < std::max(declared.size(), dwarf.size()); ++i) {
    if (i >= dwarf.size())
      why = fmt::format("{} is declared, the binary has no more (it has {})", label(declared, i),
                        describe_params(dwarf, types));
    else if (i >= declared.size())
      why = fmt::format("{} {} is not declared", label(dwarf, i), types.at(dwarf[i].type).name);
    else if (declared[i].is_result != dwarf[i].is_result || declared[i].name != dwarf[i].name)
      why = fmt::format("{} is declared where the binary has {}", label(declared, i), label(dwarf, i));
    else if (std::string d = LayoutCompare(types).difference(declared[i].type, dwarf[i].type); !d.empty())
      why = d.starts_with("as ") ? fmt::format("{}: declared {}", label(declared, i), d.substr(3))
                                 : fmt::format("{}: declared {} {}", label(declared, i), types.at(dwarf[i].type).name, d);
  }
  if (!why.empty())
    throw UserError("params-mismatch", fmt::format("the declared signature of {} differs from its DWARF: {}", spec.function, why),
                    spec.loc,
                    "DWARF leaves out blank (_) and unnamed parameters; otherwise fix the declaration, name the "
                    "binary's own types (*net/url.URL, github.com/org/pkg.T), or drop it and let DWARF speak");
  std::vector<GoParam> checked = declared;
  for (size_t i = 0; i < checked.size(); ++i)
    checked[i].type = dwarf[i].type;
  return checked;
}

// The part of a shape instance's name after its first type arguments (the bracket that closes the
// first one, shapes such as "go.shape.[]uint8" nesting inside): "" or ".Add" for the instance
// itself, ".func1", ".Add.func1", "-fm", ".f5.func1.g[go.shape.int].1" and the like for closures
// and wrappers built inside it. nullopt when the name has no shape type arguments.
std::optional<std::string_view> after_shape_arguments(std::string_view name) {
  size_t open = name.find("[go.shape.");
  if (open == std::string_view::npos)
    open = name.find("[...]"); // .gopclntab's spelling (Go 1.18+)
  if (open == std::string_view::npos)
    return std::nullopt;
  size_t close = std::string_view::npos;
  int depth = 0;
  for (size_t i = open; i < name.size() && close == std::string_view::npos; ++i) {
    if (name[i] == '[')
      ++depth;
    else if (name[i] == ']' && --depth == 0)
      close = i;
  }
  if (close == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = name.substr(close + 1);
  if (rest.starts_with(")")) // "main.(*Set[go.shape.int_0]).Add"
    rest.remove_prefix(1);
  return rest;
}

// Makes a shape instance's signature what the ABI lays out: the dictionary first. Also finds the
// instance in .gopclntab, which names every shape of a function alike ("main.Sum[...]", Go 1.18+),
// by its entry address, so that its recorded argument size checks the signature as for any other.
void complete_generic_signature(ProbeSignature &signature, const SignatureSources &sources) {
  if (!after_shape_arguments(signature.name))
    return;
  const Pclntab *pcln = sources.pcln;
  bool autogenerated = false;
  const PclnFunction *at_entry = pcln ? pcln->at_pc(signature.low_pc) : nullptr;
  if (at_entry && at_entry->entry == signature.low_pc) {
    if (signature.pcln_args < 0)
      signature.pcln_args = at_entry->args;
    std::vector<Pclntab::Frame> frames = pcln->symbolize(at_entry->entry, true);
    autogenerated = !frames.empty() && frames.back().file == "<autogenerated>";
  }
  GoVersion go = parse_go_version(sources.image.buildinfo ? sources.image.buildinfo->go_version : "");
  add_dictionary_param(signature.name, autogenerated, go, signature.params, sources.types, sources.image.ptr_size);
}

} // namespace

bool takes_dictionary(const std::string &function, bool autogenerated) {
  std::optional<std::string_view> rest = after_shape_arguments(function);
  if (!rest || autogenerated)
    return false;
  // A closure or wrapper: a '-' suffix ("-fm", "-range1"), a second segment (".Add.func1"), or a
  // function's own closure (".func1", ".gowrap1", ".deferwrap1"). A method named like a closure
  // ("func1") is read as one: the argument-size check then refuses rather than misreads it.
  if (rest->find('-') != std::string_view::npos)
    return false;
  if (rest->empty())
    return true;
  std::string_view segment = rest->substr(1);
  if (segment.find('.') != std::string_view::npos)
    return false;
  for (std::string_view prefix : {"func", "gowrap", "deferwrap"})
    if (segment.starts_with(prefix) && segment.size() > prefix.size() &&
        std::all_of(segment.begin() + static_cast<std::ptrdiff_t>(prefix.size()), segment.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
      return false;
  return true;
}

size_t dictionary_position(const std::string &function, GoVersion go) {
  bool method = !after_shape_arguments(function).value_or("").empty(); // ".Add" after the type's arguments
  bool stenciled = go.major == 1 && (go.minor == 18 || go.minor == 19); // before unified IR
  return method && !stenciled ? 1 : 0;
}

void add_dictionary_param(const std::string &function, bool autogenerated, GoVersion go, std::vector<GoParam> &params,
                          TypeTable &types, int ptr_size) {
  GoType dict;
  dict.kind = TypeKind::UnsafePointer;
  dict.name = "unsafe.Pointer";
  dict.size = dict.align = static_cast<uint64_t>(ptr_size);
  // Built with -N -l, DWARF lists the dictionary itself as the parameter ".dict", in its place:
  // that one is the dictionary, whatever the name says, and no second one is added.
  for (GoParam &p : params)
    if (!p.is_result && p.name == kDwarfDictionaryParam) {
      p.name = kDictionaryParam;
      p.type = types.add(dict);
      return;
    }
  if (!takes_dictionary(function, autogenerated) ||
      std::any_of(params.begin(), params.end(), [](const GoParam &p) { return p.name == kDictionaryParam; }))
    return;
  size_t inputs = static_cast<size_t>(std::count_if(params.begin(), params.end(), [](const GoParam &p) { return !p.is_result; }));
  size_t at = std::min(dictionary_position(function, go), inputs);
  params.insert(params.begin() + static_cast<std::ptrdiff_t>(at), GoParam{kDictionaryParam, types.add(dict), false});
}

void name_instantiations(ProbePlan &probe, const std::string &function, const std::vector<ElfSymbol> &dictionaries) {
  for (size_t i = 0; i < probe.entry.captures.size(); ++i)
    if (probe.entry.captures[i].expr == kDictionaryParam)
      probe.dict_capture = static_cast<int>(i);
  probe.instantiations = instantiations_of(function, dictionaries);
}

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
  } else if (std::string inlined = inlined_everywhere(probe.function, pcln); !inlined.empty()) {
    // Not a typo: the compiler left no body to probe. inlined is "main.add into main.main".
    throw UserError("inlined-function",
                    fmt::format("no function {} in {}: the compiler inlined it into every caller "
                                "({}), so it has no code of its own to probe",
                                probe.function, image.path,
                                inlined.substr(inlined.find(" into ") + 6)),
                    probe.loc, kInlinedHint);
  } else {
    std::string hint = did_you_mean_go_name(probe.function, probeable_function_names(debug, pcln));
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
    // Named types: from DWARF when the binary has it, else from the runtime's type descriptors.
    NamedTypeResolver resolve = debug ? dwarf_type_resolver(*debug) : descriptor_resolver(sources);
    for (const auto &p : probe.params)
      declared.push_back({p.name, build_declared_type(p.type, types, image.ptr_size, resolve), false});
    for (const auto &r : probe.results)
      declared.push_back({r.name, build_declared_type(r.type, types, image.ptr_size, resolve), true});
    if (!fn_info.params.empty() || debug) {
      std::vector<GoParam> dwarf_side;
      for (const auto &p : fn_info.params)
        if (probe.has_results || !p.is_result)
          dwarf_side.push_back(p);
      if (probe.has_params && !probe.has_results)
        std::erase_if(declared, [](auto &p) { return p.is_result; });
      declared = check_declared_against_dwarf(declared, dwarf_side, types, probe);
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
                    "give its DWARF with --debug-file (the unstripped build, or its objcopy --only-keep-debug "
                    "file), or declare them in order, receiver first: params: [{name: s, type: unsafe.Pointer}, "
                    "{name: path, type: string}] (and results: [...] with return: true)");
  }
  // Without DWARF, results are what the spec declares or nothing: calls are still timed.
  fn_info.results_unknown = !debug && !probe.has_results;
  fn_info.declared = debug || probe.has_params || probe.has_results;
  fn_info.results_unchecked = !debug && probe.has_results && fn_info.regabi && !probe.results.empty();
  fn_info.params = std::move(params);
  complete_generic_signature(fn_info, sources);
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
