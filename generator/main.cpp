// weave — builds eBPF tracers for Go programs from a probe spec.
//
//   weave spec.yaml ./bin                 same as: weave build spec.yaml ./bin -o weave-out
//   weave build spec.json ./bin -o out    writes out/{probes.bpf.c,probes.h,probes.json,Makefile.bpf,
//                                         probes.bpf.o,tracer,...}
//   weave check spec.yaml ./bin DIR       regenerates in memory; exit 1 when DIR has drifted
//   weave run spec.yaml ./bin [-- ARGS]   builds into a cache (once) and runs the tracer
//
// The driver reads top to bottom, one pipeline stage per line (DESIGN.md "Pipeline"); all three
// commands share that one pipeline (generate_outputs) and differ only in what they do with its files.
#include "gobinary/binary.h"
#include "gobinary/debugfile.h"
#include "build/build.h"
#include "support/timings.h"
#include "check/check.h"
#include "codegen/codegen.h"
#include "common/color.h"
#include "common/diag.h"
#include "debuginfo/debuginfo.h"
#include "funcs/funcs.h"
#include <charconv>
#include "plan/lines.h"
#include <fmt/format.h>
#include "gobinary/pclntab.h"
#include "plan/plan.h"
#include "run/run.h"
#include "spec/spec.h"
#include "common/tracer_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <iostream>
#include <optional>

namespace {

constexpr int kExitUserError = 1; // a spec, binary or environment problem the user can fix
constexpr int kExitUsage = 2;     // a bad command line
constexpr int kExitInternal = 70; // a bug in weave (EX_SOFTWARE)

// Diagnostics on stderr, coloured by --color (common/color.h).
bool g_color = false;
void diagnose(const std::string &text) {
  std::cerr << (g_color ? weave::color_diagnostic(text) : text);
}

struct BuildArgs {
  std::string spec_path;
  std::string binary_path;
  std::string out_dir = "weave-out";
  std::string dump;
  std::string clang = WEAVE_CLANG;
  std::string runtime;
  bool timings = false;
  weave::DebugSearch debug;
};

// --debug-file and --debug-dir: where a stripped binary's DWARF is (gobinary/debugfile.h).
void add_debug_options(CLI::App &cmd, weave::DebugSearch &search) {
  cmd.add_option("--debug-file", search.file,
                 "read DWARF and symbols from this file (the unstripped build, or its objcopy "
                 "--only-keep-debug file): checked to be the same build by its build ids")
      ->type_name("FILE");
  cmd.add_option("--debug-dir", search.dirs,
                 "where to look for a stripped binary's debug file by .gnu_debuglink and "
                 ".build-id/xx/yyyy.debug (repeatable; default /usr/lib/debug)")
      ->type_name("DIR");
}

// Loads the binary, and finds its separate debug file when it has no DWARF of its own or one is
// given; candidates passed over are warnings.
weave::BinaryImage load_with_debug(const std::string &binary_path, const weave::DebugSearch &search) {
  weave::BinaryImage image = weave::load_binary(binary_path);
  std::vector<std::string> notes;
  weave::find_debug_file(image, search, notes);
  for (const std::string &note : notes)
    diagnose("weave: warning: " + note + "\n");
  if (!image.debug_path.empty())
    std::cerr << "weave: DWARF and symbols from " << image.debug_path << "\n";
  return image;
}

// Generated is the pipeline's result before anything touches the disk.
struct Generated {
  weave::Plan plan;
  std::vector<weave::GeneratedFile> files;
};

// The pipeline up to the generated text, shared by build, check and run. `record_as` is the
// binary's path as the outputs record it (weave::recorded_target_path). With `dump` naming a
// stage or file it prints that instead and returns nothing. Throws UserError.
std::optional<Generated> generate_from_spec(const weave::Spec &spec, const std::string &binary_path,
                                            const std::string &record_as, const std::string &dump = {},
                                            weave::Timings *timings = nullptr,
                                            const weave::DebugSearch &debug_search = {}) {
  weave::BinaryImage image = load_with_debug(binary_path, debug_search);
  weave::mark(timings, "binary");
  // Stripped binaries have no DWARF (unless a debug file was found): functions then come from
  // .gopclntab, types from the spec or the runtime's type descriptors.
  auto debug = image.has_dwarf ? weave::DebugInfo::open(weave::dwarf_path(image), image.ptr_size) : nullptr;
  weave::mark(timings, "dwarf");
  std::optional<weave::Pclntab> pcln = weave::Pclntab::load(image);
  weave::mark(timings, "pclntab");
  weave::Plan plan = weave::make_plan(spec, image, debug.get(), pcln ? &*pcln : nullptr);
  plan.target.path = record_as;
  weave::mark(timings, "plan");
  // Wildcards can match hundreds of functions: say the first few notes, and how many more there are.
  std::vector<std::string> notes = plan.warnings;
  for (const auto &probe : plan.probes)
    for (const auto &skip : probe.skipped)
      notes.push_back("probe " + probe.name + ": left out " + skip);
  for (size_t i = 0; i < notes.size() && i < 10; ++i)
    diagnose("weave: warning: " + notes[i] + "\n");
  if (notes.size() > 10)
    std::cerr << "weave: warning: ... and " << notes.size() - 10
              << " more (see \"skipped\" in probes.json, or --dump plan)\n";
  if (dump == "plan") {
    std::cout << weave::dump_plan(plan);
    return std::nullopt;
  }
  std::vector<weave::GeneratedFile> files = weave::generate(plan);
  weave::mark(timings, "codegen");
  if (!dump.empty()) {
    for (const auto &file : files)
      if (file.name == dump)
        std::cout << file.content;
    return std::nullopt;
  }
  return Generated{std::move(plan), std::move(files)};
}

std::optional<Generated> generate_outputs(const std::string &spec_path, const std::string &binary_path,
                                          const std::string &record_as, const std::string &dump = {},
                                          weave::Timings *timings = nullptr,
                                          const weave::DebugSearch &debug_search = {}) {
  weave::Spec spec = weave::parse_spec_file(spec_path);
  weave::mark(timings, "spec");
  if (dump == "spec") {
    std::cout << weave::dump_spec(spec);
    return std::nullopt;
  }
  return generate_from_spec(spec, binary_path, record_as, dump, timings, debug_search);
}

std::string runtime_path(const std::string &given) {
  return given.empty() ? weave::default_runtime_path() : given;
}

int build(const BuildArgs &args) {
  weave::Timings timings;
  weave::Timings *t = args.timings ? &timings : nullptr;
  std::optional<Generated> out = generate_outputs(args.spec_path, args.binary_path,
                      weave::recorded_target_path(args.binary_path, args.out_dir), args.dump, t, args.debug);
  if (!out)
    return 0;
  // An empty runtime path lets build_output pick the runtime by the binary's architecture.
  weave::build_output(out->plan, out->files, {args.out_dir, args.clang, args.runtime}, t);
  if (t)
    for (const std::string &line : timings.report())
      std::cerr << "weave: " << line << "\n";
  size_t probes = out->plan.probes.size();
  // The hint is a command a shell runs as written: a program named without a '/' would be looked
  // up in PATH, after `--` as anywhere.
  std::string program = args.binary_path.find('/') == std::string::npos ? "./" + args.binary_path : args.binary_path;
  std::cerr << "weave: wrote " << args.out_dir << "/ (" << probes << " probe"
            << (probes == 1 ? "" : "s") << " on " << args.binary_path << "); run: " << args.out_dir
            << "/tracer -- " << program << "\n";
  return 0;
}

void add_build_options(CLI::App &cmd, BuildArgs &args) {
  cmd.add_option("spec", args.spec_path, "probe spec (YAML or JSON)")->required();
  cmd.add_option("binary", args.binary_path, "Go binary to trace")->required();
  cmd.add_option("-o,--output", args.out_dir, "output directory (replaced as a whole)");
  cmd.add_option("--dump", args.dump,
                 "print one stage's result instead of building: spec, plan, or a generated file "
                 "name (probes.bpf.c, probes.h, probes.json, Makefile.bpf)");
  cmd.add_option("--clang", args.clang, "clang executable used to compile the probes");
  cmd.add_option("--runtime", args.runtime, "tracer runtime to embed the probes into");
  cmd.add_flag("--timings", args.timings, "print how long each stage took, and peak memory");
  add_debug_options(cmd, args.debug);
}

void hint_argument_order(weave::UserError &e, const std::string &command,
                         const std::vector<std::string> &positionals);

struct CheckArgs {
  std::string spec_path;
  std::string binary_path;
  std::string dir;
  weave::DebugSearch debug;
};

// Exit codes: weave::kCheckClean, kCheckDrift, kCheckCannotRegen (check/check.h), and no other:
// CI scripts branch on them, so even a bug in weave (an internal error) is "nothing compared", 3.
int check(const CheckArgs &args) {
  auto cannot_regen = [&] {
    std::cerr << "weave check: cannot regenerate the probes for " << args.binary_path
              << ", so nothing was compared (exit " << weave::kCheckCannotRegen
              << "; drift would be exit " << weave::kCheckDrift << ")\n";
    return weave::kCheckCannotRegen;
  };
  // The recorded path is not compared: a tree checked out elsewhere, or checked with the binary
  // named otherwise, is regenerated with the path it records (and a note says so).
  std::string here;
  std::optional<std::string> recorded;
  std::optional<Generated> out;
  try {
    here = weave::recorded_target_path(args.binary_path, args.dir);
    recorded = weave::checked_in_target_path(args.dir);
    out = generate_outputs(args.spec_path, args.binary_path, recorded.value_or(here), {}, nullptr, args.debug);
  } catch (weave::UserError &e) {
    hint_argument_order(e, "check", {args.spec_path, args.binary_path, args.dir});
    diagnose(weave::format_error(e));
    return cannot_regen();
  } catch (const std::exception &e) {
    std::cerr << "weave: internal error: " << e.what() << "\n";
    return cannot_regen();
  }
  weave::CheckResult result;
  try {
    result = weave::check_output(out->files, args.dir);
  } catch (const std::exception &e) {
    std::cerr << "weave check: internal error while comparing with " << args.dir << ": " << e.what()
              << "\n";
    return weave::kCheckCannotRegen;
  }
  std::cout << weave::format_check_report(result);
  if (recorded && *recorded != here)
    std::cout << weave::target_path_note(*recorded, here);
  if (result.clean())
    return weave::kCheckClean;
  std::cout << "\nto update it: weave build " << args.spec_path << " " << args.binary_path << " -o "
            << args.dir << "\n";
  return weave::kCheckDrift;
}

struct RunArgs {
  weave::RunOptions options;
  std::string clang = WEAVE_CLANG;
  std::string runtime;
};

int run(RunArgs &args) {
  args.options.runtime_path = runtime_path(args.runtime);
  weave::run_cached(args.options, [&](const std::string &out_dir) {
    std::optional<Generated> out = generate_outputs(
        args.options.spec_path, args.options.binary_path,
        std::filesystem::absolute(args.options.binary_path).lexically_normal().string());
    weave::build_output(out->plan, out->files, {out_dir, args.clang, args.options.runtime_path});
  });
}

// ---- weave trace: the spec made from the command line ------------------------------------------

// The name errors in the quick spec carry until they are moved onto the command line.
constexpr const char *kQuickSpecName = "<weave trace spec>";
constexpr const char *kCommandLineName = "command line";

// The command line as it was typed, for errors located in it: the arguments joined by blanks,
// quoted as a shell would need them, with where each one's text begins.
struct CommandLine {
  std::string text;
  std::vector<std::string> args;
  std::vector<int> columns; // 1-based column of each argument's first character (inside its quotes)

  explicit CommandLine(const std::vector<std::string> &argv) : args(argv) {
    for (const std::string &arg : argv) {
      if (!text.empty())
        text += ' ';
      bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./=:,@%+") == std::string::npos;
      if (!plain)
        text += '\'';
      columns.push_back(static_cast<int>(text.size()) + 1);
      for (char c : arg)
        text += c == '\'' && !plain ? std::string("'\\''") : std::string(1, c);
      if (!plain)
        text += '\'';
    }
  }

  // The column of `value` where an argument gives it: the whole argument, or after "=" or a short
  // option's letter (--when=EXPR, -cEXPR). 0 when no argument does.
  int column_of(const std::string &value) const {
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i] == value)
        return columns[i];
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].size() > value.size() && args[i].ends_with(value) && args[i][0] == '-')
        return columns[i] + static_cast<int>(args[i].size() - value.size());
    return 0;
  }
};

// An error located in the quick spec, located instead at the command-line argument its text came
// from (the spec weave trace made is nobody's file): "command line:1:40", the line, a caret.
void move_to_command_line(weave::UserError &error, const weave::QuickSpec &spec, const CommandLine &line) {
  auto move = [&](weave::UserError &e) {
    if (e.loc.file != kQuickSpecName)
      return;
    const weave::QuickSpecOrigin *origin = nullptr;
    for (const weave::QuickSpecOrigin &o : spec.origins)
      if (o.line == e.loc.line && (!origin || o.column <= e.loc.column))
        origin = &o;
    for (const weave::QuickSpecOrigin &o : spec.origins) // a key of the probe: its function's argument
      if (!origin && o.line < e.loc.line)
        origin = &o;
    int column = origin ? line.column_of(origin->value) : 0;
    if (column > 0 && origin->line == e.loc.line && e.loc.column > origin->column)
      column += e.loc.column - origin->column;
    e.loc = weave::SourceLoc{kCommandLineName, column > 0 ? 1 : 0, column};
  };
  move(error);
  for (weave::UserError &other : error.others)
    move(other);
}

// The binary process `pid` runs, by the path its /proc/PID/exe link names (when that is still a
// file), else through the link itself.
std::string process_binary(int pid) {
  std::string link = "/proc/" + std::to_string(pid) + "/exe";
  std::error_code ec;
  if (!std::filesystem::exists("/proc/" + std::to_string(pid), ec))
    throw weave::UserError("no-such-process", "--pid " + std::to_string(pid) + ": no such process", {},
                           "give the id of a running process (pgrep NAME finds it)");
  std::filesystem::path target = std::filesystem::read_symlink(link, ec);
  if (!ec && std::filesystem::is_regular_file(target, ec))
    return target.string();
  return link;
}

bool is_regular_file(const std::string &path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_regular_file(path, ec);
}

struct TraceArgs {
  RunArgs run;
  std::vector<std::string> functions;
  weave::QuickSpecArgs quick;
  std::vector<std::string> argv; // weave's own, for errors located on the command line
};

int trace(TraceArgs &args) {
  weave::RunOptions &options = args.run.options;
  // --pid N alone names the binary: the process's own. A first word that is no file is then a
  // function.
  if (options.pid > 0 && !is_regular_file(options.binary_path)) {
    if (!options.binary_path.empty())
      args.functions.insert(args.functions.begin(), options.binary_path);
    options.binary_path = process_binary(options.pid);
    std::cerr << "weave: process " << options.pid << " runs " << options.binary_path << "\n";
  }
  if (args.functions.empty())
    throw weave::UserError("no-functions", "weave trace needs the functions to trace after the binary", {},
                           "weave trace BINARY FUNCTION... (weave funcs BINARY lists them)");
  args.quick.functions = args.functions;
  // A stripped binary's parameters are known only from a spec's declarations: without them its
  // calls are still counted and timed, which is what is traced, and said.
  weave::require_regular_binary(options.binary_path);
  weave::BinaryImage image = load_with_debug(options.binary_path, {});
  if (!image.has_dwarf && args.quick.captures.empty() && args.quick.when.empty() && args.quick.when_return.empty()) {
    args.quick.values = false;
    diagnose("weave: note: " + options.binary_path +
             " has no DWARF (stripped): tracing its calls and their durations, without values; to "
             "capture values, declare the parameters in a spec (params: [...], man weave-spec) and weave run it\n");
  }
  // --folded is a flame graph of the entries' stacks: weave trace asks for them.
  bool folded = std::find(options.tracer_flags.begin(), options.tracer_flags.end(), "--folded") !=
                options.tracer_flags.end();
  if (folded && args.quick.stack == 0)
    args.quick.stack = 64;

  weave::QuickSpec quick = weave::quick_spec(args.quick);
  CommandLine line(args.argv);
  weave::set_source_text(kCommandLineName, line.text);
  // Checked whole before anything is written: an error points at the argument, and the cache
  // holds nothing of a spec that does not work.
  weave::Spec spec;
  try {
    spec = weave::parse_spec_text(quick.text, kQuickSpecName);
  } catch (weave::UserError &e) {
    move_to_command_line(e, quick, line);
    throw;
  }
  options.spec_text = quick.text;
  args.run.options.runtime_path = runtime_path(args.run.runtime);
  auto build = [&](const std::string &out_dir) {
    try {
      std::optional<Generated> out = generate_from_spec(
          spec, options.binary_path, std::filesystem::absolute(options.binary_path).lexically_normal().string());
      weave::build_output(out->plan, out->files, {out_dir, args.run.clang, options.runtime_path});
    } catch (weave::UserError &e) {
      move_to_command_line(e, quick, line);
      throw;
    }
  };
  auto ready = [&] {
    std::string saved = weave::save_quick_spec(quick.text, options.cache_root);
    std::cerr << "weave: tracing with this spec (" << saved << "; save it to edit it, then: weave run SPEC "
              << options.binary_path << "):\n"
              << quick.text;
  };
  weave::run_cached(options, build, ready);
}

// The form of each command, for hints about arguments in the wrong order.
std::string command_form(const std::string &command) {
  if (command == "check")
    return "weave check SPEC BINARY DIR";
  if (command == "run")
    return "weave run SPEC BINARY [-- ARGS]";
  if (command == "trace")
    return "weave trace BINARY FUNCTION... [-- ARGS]";
  if (command == "funcs")
    return "weave funcs BINARY [PATTERN]";
  return "weave build SPEC BINARY";
}

bool is_elf_file(const std::string &path) {
  if (!is_regular_file(path))
    return false;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::memcmp(magic, "\x7f" "ELF", 4) == 0;
}

// Arguments swapped, or a spec given to a command that takes none: the hint says the form of the
// command that was run, whichever it was.
void hint_argument_order(weave::UserError &e, const std::string &command,
                         const std::vector<std::string> &positionals) {
  if (e.id == "spec-not-text") {
    if (size_t at = e.hint.find("weave build SPEC BINARY"); at != std::string::npos)
      e.hint.replace(at, std::string("weave build SPEC BINARY").size(), command_form(command));
    return;
  }
  if ((command != "trace" && command != "funcs") || positionals.empty() ||
      (e.id != "not-elf" && e.id != "binary-unreadable"))
    return;
  const std::string &first = positionals.front();
  for (size_t i = 1; i < positionals.size(); ++i)
    if (is_elf_file(positionals[i])) {
      e.hint = "the binary comes first: " + command_form(command) + " (" + positionals[i] + " is the program)";
      return;
    }
  for (const char *ext : {".yaml", ".yml", ".json"})
    if (first.ends_with(ext)) {
      e.hint = "weave " + command + " takes a binary, not a spec: " + command_form(command) +
               "; to trace with a spec: weave run SPEC BINARY";
      return;
    }
}

// The top of `weave --help`, also what `weave` alone prints: the README's form first.
constexpr const char *kUsage =
    "Usage: weave SPEC BIN [-o DIR]\n"
    "   or: weave COMMAND [OPTIONS] ARGS...\n"
    "The first is weave build SPEC BIN: it writes weave-out/, whose tracer traces BIN.\n"
    "COMMAND is build, check, run, trace or funcs.\n";

// CLI11 titles the top-level usage with the subcommand grammar; weave leads with its own form.
class HelpFormatter : public CLI::Formatter {
public:
  std::string make_usage(const CLI::App *app, std::string name) const override {
    return app->get_parent() ? CLI::Formatter::make_usage(app, name) : kUsage;
  }
};

// A process id for --pid. CLI::PositiveNumber's message names its upper bound, the largest double
// written out in ~300 digits; this says what is wanted instead.
std::string check_pid(const std::string &text) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || value < 1 || value > 0x3fffffff)
    return "must be a process id (a number from 1 up), not '" + text + "'";
  return "";
}

// The options weave run and weave trace pass on to the tracer they start: every option of the
// tracer's own table (common/tracer_options.h), so none can be missing here.
void add_tracer_options(CLI::App &cmd, weave::RunOptions &options) {
  cmd.add_option("--format", options.format, "tracer output: text or json")->check(CLI::IsMember({"text", "json"}));
  cmd.add_option("-o,--output", options.output, "tracer -o: events to this file; stdout stays the program's");
  cmd.add_option("--pid", options.pid, "trace only this running process")
      ->check(CLI::Validator(check_pid, ""))
      ->type_name("PID");
  // Passed on as given, in the order given; the tracer checks them before it attaches.
  auto push = [&options](std::initializer_list<std::string> words) {
    options.tracer_flags.insert(options.tracer_flags.end(), words);
  };
  for (const weave::TracerOption &option : weave::kTracerOptions) {
    if (option.forward != weave::TracerOption::kPass)
      continue;
    std::string name = option.name;
    std::string help = std::string("tracer ") + option.name + ": " + option.help;
    CLI::Option *added = nullptr;
    switch (option.takes) {
    case weave::TracerOption::kFlag:
      added = cmd.add_flag_callback(option.names, [push, name] { push({name}); }, help);
      break;
    case weave::TracerOption::kCount:
      added = cmd.add_flag_function(
          option.names,
          [push, name](std::int64_t n) {
            for (std::int64_t i = 0; i < n; ++i)
              push({name});
          },
          help);
      break;
    case weave::TracerOption::kValue:
      added = cmd.add_option_function<std::string>(
          option.names, [push, name](const std::string &value) { push({name, value}); }, help);
      added->type_name(option.type_name);
      break;
    case weave::TracerOption::kOptionalValue: {
      // --stats or --stats=N: a flag that takes a value only after '=', so that the next word
      // (the binary) is never taken for it.
      static std::deque<std::string> values; // CLI11 keeps a reference to the flag's variable
      added = cmd.add_flag(option.names, values.emplace_back(), help)
                  ->each([push, name](const std::string &value) {
                    push({value == "true" ? name : name + "=" + value});
                  });
      added->option_text("[=" + std::string(option.type_name) + "]");
      break;
    }
    }
    if (*option.choices) {
      std::vector<std::string> choices;
      std::istringstream words(option.choices);
      for (std::string word; words >> word;)
        choices.push_back(word);
      added->check(CLI::IsMember(choices).description("")); // the type name lists them already
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  // `weave spec.yaml ./bin` is `weave build spec.yaml ./bin`.
  std::vector<std::string> args(argv + 1, argv + argc);
  static const char *commands[] = {"build", "check", "run", "funcs", "trace"};
  bool has_command = !args.empty() && std::find(std::begin(commands), std::end(commands), args[0]) != std::end(commands);
  if (!args.empty() && !has_command && args[0][0] != '-')
    args.insert(args.begin(), "build");
  // `weave run ... -- ARGS`: everything after -- belongs to the traced program, verbatim.
  std::vector<std::string> program_args;
  bool has_program_args = false;
  if (!args.empty() && (args[0] == "run" || args[0] == "trace"))
    if (auto dash = std::find(args.begin(), args.end(), "--"); dash != args.end()) {
      program_args.assign(dash + 1, args.end());
      args.erase(dash, args.end());
      has_program_args = true;
    }

  if (args.empty()) {
    std::cerr << "weave: builds eBPF tracers for Go programs from a probe spec\n"
              << kUsage << "Run 'weave --help' for the commands and examples, 'weave COMMAND --help' for one.\n";
    return kExitUsage;
  }

  CLI::App app{"weave: builds eBPF tracers for Go programs from a probe spec", "weave"};
  app.formatter(std::make_shared<HelpFormatter>()); // before the subcommands: they inherit it
  app.set_version_flag("--version", std::string("weave ") + WEAVE_VERSION);
  app.require_subcommand(1);
  std::string color = "auto";
  CLI::Option *color_option = app.add_option("--color", color,
                 "colour diagnostics: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.fallthrough(); // `weave build --color=never ...`: subcommands inherit it, and pass it up
  app.footer("Examples:\n"
             "  weave spec.yaml ./bin              # write weave-out/: probes and weave-out/tracer\n"
             "  weave-out/tracer -- ./bin args     # attach first, then start the program\n"
             "  weave-out/tracer --pid 1234        # trace one running process\n"
             "  weave run spec.yaml ./bin -- args  # build into ~/.cache/weave once, then trace at once\n"
             "  weave check spec.yaml ./bin weave-out   # CI: exit 1 when weave-out/ has drifted\n"
             "  weave funcs ./bin 'main.*'         # functions, parameters, types and their locations\n"
             "\n"
             "Each command's options and examples: weave COMMAND --help. The spec format: man "
             "weave-spec; the tracer's options: weave-out/tracer --help, man weave-tracer.");
  BuildArgs build_args;
  CLI::App *build_cmd = app.add_subcommand("build", "generate probes and a tracer for a Go binary");
  add_build_options(*build_cmd, build_args);
  build_cmd->footer("Examples:\n"
                    "  weave build spec.yaml ./bin            # write weave-out/ (weave spec.yaml ./bin is the same)\n"
                    "  weave build spec.yaml ./bin -o probes  # into probes/ instead\n"
                    "  weave build --dump probes.bpf.c spec.yaml ./bin   # print the BPF C, write nothing\n"
                    "  weave build --dump plan spec.yaml ./bin           # what each capture reads, and where\n"
                    "  weave build --timings spec.yaml ./bin  # time per stage, peak memory\n"
                    "\n"
                    "Then run OUT/tracer -- ./bin ARGS (OUT/tracer --help). The spec format: man weave-spec.");

  CheckArgs check_args;
  CLI::App *check_cmd = app.add_subcommand(
      "check", "regenerate in memory and compare with a checked-in output directory (CI)");
  check_cmd->footer("Exit: 0 identical, 1 drifted (a file differs or is missing), 2 usage error, "
                    "3 the probes cannot be regenerated (spec or binary error; nothing compared).\n"
                    "\n"
                    "Examples:\n"
                    "  go build -trimpath -o bin/server ./cmd/server   # as the developer built it\n"
                    "  weave check probes.yaml ./bin/server weave-out  # exit 1 and a report when it drifted\n"
                    "  weave build probes.yaml ./bin/server -o weave-out   # then update the checked-in files");
  check_cmd->add_option("spec", check_args.spec_path, "probe spec (YAML or JSON)")->required();
  check_cmd->add_option("binary", check_args.binary_path,
                        "Go binary (by any path: the one the directory records is kept)")
      ->required();
  check_cmd->add_option("dir", check_args.dir, "the checked-in output directory")->required();
  add_debug_options(*check_cmd, check_args.debug);

  RunArgs run_args;
  CLI::App *run_cmd = app.add_subcommand(
      "run", "build a tracer into a cache (once per spec and binary) and run it at once");
  run_cmd->footer("  -- ARGS  start the binary with ARGS, traced; without -- every process running "
                  "it is traced\n\nThe cache is $XDG_CACHE_HOME/weave, else ~/.cache/weave.\n"
                  "\n"
                  "Examples:\n"
                  "  weave run spec.yaml ./bin -- -port 8080   # start ./bin -port 8080, traced\n"
                  "  weave run spec.yaml ./bin                 # every process running ./bin, until Ctrl-C\n"
                  "  weave run --format json --pid 1234 spec.yaml ./bin   # one running process, JSON lines");
  run_cmd->add_option("spec", run_args.options.spec_path, "probe spec (YAML or JSON)")->required();
  run_cmd->add_option("binary", run_args.options.binary_path, "Go binary to trace")->required();
  add_tracer_options(*run_cmd, run_args.options);
  run_cmd->add_option("--clang", run_args.clang, "clang executable used to compile the probes");
  run_cmd->add_option("--runtime", run_args.runtime, "tracer runtime to embed the probes into");

  TraceArgs trace_args;
  trace_args.argv.assign(argv, argv + argc);
  trace_args.argv[0] = "weave";
  CLI::App *trace_cmd = app.add_subcommand(
      "trace", "trace functions without a spec file: every parameter, and the results at every "
               "RET (args: all, return: true), or what -c, --when and the other options ask; prints the "
               "spec it used, to save and edit. Every tracer option is taken and passed on");
  trace_cmd->footer("  -- ARGS  start the binary with ARGS, traced; without -- every process running "
                    "it is traced (with --pid, that process: BINARY may then be left out)\n\n"
                    "Examples:\n"
                    "  weave trace ./server 'main.(*Server).Handle' -- -port 8080   # every parameter and result\n"
                    "  weave trace ./server 'main.*' --graph                  # call trees of every process running it\n"
                    "  weave trace --pid 1234 'main.(*Server).*' --stats      # one running process, by its pid alone\n"
                    "  weave trace ./server main.Handle -c req.URL.Path -c req.Method --when 'len(req.URL.Path) > 1'\n"
                    "  weave trace ./server main.Handle --min-duration 5ms --perfetto slow.json\n"
                    "  weave trace ./server 'main.*' --folded out.folded       # stacks on by themselves: a flame graph\n"
                    "\n"
                    "Errors point at the argument that caused them. Built and cached as weave run does; the spec "
                    "is written to the cache only once it builds.");
  trace_cmd->add_option("binary", trace_args.run.options.binary_path,
                        "Go binary to trace (with --pid N it may be left out: the process's own)");
  trace_cmd->add_option("function", trace_args.functions,
                        "Go function names or globs, as weave funcs lists them");
  trace_cmd->add_option("-c,--capture", trace_args.quick.captures,
                        "capture this value instead of every parameter (repeatable): req.URL.Path, len(xs), *p")
      ->type_name("EXPR")
      ->allow_extra_args(false);
  trace_cmd->add_option("--when", trace_args.quick.when,
                        "only calls whose entry values make this true, decided in BPF: 'req.Header.Port == 8081'")
      ->type_name("EXPR");
  trace_cmd->add_option("--when-return", trace_args.quick.when_return,
                        "only calls whose results make this true, decided at the return: 'err != nil'")
      ->type_name("EXPR");
  trace_cmd->add_option("--min-duration", trace_args.quick.min_duration,
                        "only calls that took at least this long: 500us, 5ms, 1.5s")
      ->type_name("DURATION");
  trace_cmd->add_option("--stack", trace_args.quick.stack,
                        "the caller stack at entry, up to N frames (on by itself, 64, with --folded)")
      ->check(CLI::Range(1, 64).description(""))
      ->type_name("N");
  trace_cmd->add_flag("--inlined", trace_args.quick.inlined,
                      "also the copies the compiler inlined into callers, for globs too (names given "
                      "exactly have them anyway)");
  trace_cmd->add_flag("--contents", trace_args.quick.contents,
                      "show each interface and error by the value it holds, as its dynamic type: "
                      "*main.QuotaError{User=\"bob\", Limit=3} (contents: true)");
  add_tracer_options(*trace_cmd, trace_args.run.options);
  trace_cmd->add_option("--clang", trace_args.run.clang, "clang executable used to compile the probes");
  trace_cmd->add_option("--runtime", trace_args.run.runtime, "tracer runtime to embed the probes into");

  std::string funcs_binary, funcs_pattern, funcs_line;
  bool funcs_names = false;
  weave::DebugSearch funcs_debug;
  CLI::App *funcs_cmd = app.add_subcommand(
      "funcs", "list functions matching a glob with their parameters, types and where each one "
               "lives at entry (and each result at RET)");
  funcs_cmd->add_option("binary", funcs_binary, "Go binary")->required();
  funcs_cmd->add_option("pattern", funcs_pattern, "shell glob over Go symbol names, e.g. 'main.*'");
  funcs_cmd->add_flag("--names", funcs_names,
                      "print only the matching names, one per line, from .gopclntab (for scripts and "
                      "shell completion; nothing matching prints nothing)");
  funcs_cmd->add_option("--line", funcs_line,
                        "instead of functions: the PCs source line FILE:LINE maps to (FILE a path suffix) and, "
                        "at each, where DWARF puts every local in scope (PATTERN, if given, names the function)")
      ->type_name("FILE:LINE");
  add_debug_options(*funcs_cmd, funcs_debug);
  funcs_cmd->footer("Examples:\n"
                    "  weave funcs ./bin 'main.*'          # main's functions: parameters, types, registers\n"
                    "  weave funcs ./bin '*.(*Server).*'   # the methods of every Server type\n"
                    "  weave funcs --names ./bin 'main.*'  # the names alone\n"
                    "  weave funcs ./bin --line main.go:42  # the PCs of a source line, where each local is\n"
                    "\n"
                    "A name it prints is what a spec's function: takes (man weave-spec).");

  try {
    std::reverse(args.begin(), args.end());
    app.parse(args);
    if (((*run_cmd && run_args.options.pid > 0) || (*trace_cmd && trace_args.run.options.pid > 0)) &&
        has_program_args)
      throw CLI::ValidationError("--pid and -- ARGS exclude each other: trace a running process, "
                                 "or start one");
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e); // prints the help, the version, or the error
    return code == 0 ? 0 : kExitUsage;
  }
  g_color = weave::use_color(color, STDERR_FILENO);
  // weave's --color is the tracer's too: its text events are coloured the same way.
  if (color_option->count() > 0)
    for (weave::RunOptions *options : {&run_args.options, &trace_args.run.options})
      options->tracer_flags.insert(options->tracer_flags.end(), {"--color", color});
  run_args.options.program_args = std::move(program_args);
  run_args.options.start_program = has_program_args;
  try {
    if (*build_cmd)
      return build(build_args);
    if (*check_cmd)
      return check(check_args);
    if (*run_cmd)
      return run(run_args);
    if (*trace_cmd) {
      trace_args.run.options.program_args = run_args.options.program_args;
      trace_args.run.options.start_program = has_program_args;
      return trace(trace_args);
    }
    if (*funcs_cmd) {
      weave::BinaryImage image = funcs_names ? weave::load_binary(funcs_binary) : load_with_debug(funcs_binary, funcs_debug);
      if (funcs_names) {
        std::optional<weave::Pclntab> pcln = weave::Pclntab::load(image);
        if (!pcln)
          throw weave::UserError("no-functions", funcs_binary + " has no .gopclntab to list names from");
        std::cout << weave::list_function_names(*pcln, funcs_pattern);
        return 0;
      }
      auto debug = image.has_dwarf ? weave::DebugInfo::open(weave::dwarf_path(image), image.ptr_size) : nullptr;
      std::optional<weave::Pclntab> pcln = weave::Pclntab::load(image);
      if (!funcs_line.empty()) {
        size_t colon = funcs_line.rfind(':');
        int number = 0;
        if (colon == std::string::npos || colon == 0 ||
            std::from_chars(funcs_line.data() + colon + 1, funcs_line.data() + funcs_line.size(), number).ec !=
                std::errc{} ||
            number < 1)
          throw weave::UserError("bad-line", "--line must be FILE:LINE, found " + funcs_line);
        weave::TypeTable no_types;
        for (const weave::LineListing &l :
             weave::list_line_sites(funcs_line.substr(0, colon), number, funcs_pattern, weave::dwarf_path(image),
                                    debug.get(), image, pcln ? &*pcln : nullptr, debug ? debug->types() : no_types)) {
          std::cout << fmt::format("{}:{} pc {:#x} in {}", l.site.file, l.site.line, l.site.pc, l.site.function);
          if (l.site.inlined)
            std::cout << " (inlined into " << l.site.physical << ")";
          std::cout << (debug ? "\n" : " (no DWARF: no locals)\n");
          for (const weave::LineValue &v : l.values)
            std::cout << fmt::format("  {} {}: {}\n", v.name, v.type, v.where);
        }
        return 0;
      }
      std::vector<std::string> warnings;
      std::cout << weave::list_functions(image, debug.get(), pcln ? &*pcln : nullptr, funcs_pattern, &warnings);
      std::cout.flush();
      for (const std::string &w : warnings)
        diagnose("weave: warning: " + w + "\n");
      return 0;
    }
  } catch (weave::UserError &e) {
    std::string command = *check_cmd ? "check" : *run_cmd ? "run" : *trace_cmd ? "trace" : *funcs_cmd ? "funcs" : "build";
    std::vector<std::string> positionals =
        *trace_cmd ? std::vector<std::string>{trace_args.run.options.binary_path}
        : *funcs_cmd ? std::vector<std::string>{funcs_binary, funcs_pattern}
                     : std::vector<std::string>{};
    if (*trace_cmd)
      positionals.insert(positionals.end(), trace_args.functions.begin(), trace_args.functions.end());
    hint_argument_order(e, command, positionals);
    diagnose(weave::format_error(e));
    return kExitUserError;
  } catch (const std::exception &e) {
    std::cerr << "weave: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
  return 0;
}
