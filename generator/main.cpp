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
#include "gobinary/pclntab.h"
#include "plan/plan.h"
#include "run/run.h"
#include "spec/spec.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
std::optional<Generated> generate_outputs(const std::string &spec_path,
                                          const std::string &binary_path,
                                          const std::string &record_as,
                                          const std::string &dump = {},
                                          weave::Timings *timings = nullptr,
                                          const weave::DebugSearch &debug_search = {}) {
  weave::Spec spec = weave::parse_spec_file(spec_path);
  weave::mark(timings, "spec");
  if (dump == "spec") {
    std::cout << weave::dump_spec(spec);
    return std::nullopt;
  }
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
  } catch (const weave::UserError &e) {
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

// The options weave run and weave trace pass on to the tracer they start.
void add_tracer_options(CLI::App &cmd, weave::RunOptions &options) {
  cmd.add_option("--format", options.format, "tracer output: text or json")->check(CLI::IsMember({"text", "json"}));
  cmd.add_option("-o,--output", options.output, "tracer -o: events to this file; stdout stays the program's");
  cmd.add_option("--pid", options.pid, "trace only this running process")
      ->check(CLI::Validator(check_pid, ""))
      ->type_name("PID");
  // Passed on as given, in the order given; the tracer checks them before it attaches.
  auto pass_on = [&](const char *flag, const char *type, const char *help) {
    std::string name = flag;
    cmd.add_option_function<std::string>(
           name, [&options, name](const std::string &value) { options.tracer_flags.insert(options.tracer_flags.end(), {name, value}); },
           help)
        ->type_name(type);
  };
  pass_on("--otlp", "URL", "tracer --otlp: send every paired call as a span to this OTLP/HTTP collector");
  pass_on("--metrics", "ADDR:PORT",
          "tracer --metrics: serve Prometheus /metrics here (127.0.0.1:PORT: this host only; :PORT: every "
          "interface)");
  pass_on("--service-name", "NAME", "tracer --service-name: the spans' service.name");
  pass_on("--perfetto", "FILE", "tracer --perfetto: a timeline of the paired calls");
  pass_on("--folded", "FILE", "tracer --folded: stacks for a flame graph");
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
  app.add_option("--color", color,
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

  RunArgs trace_args;
  std::vector<std::string> trace_functions;
  CLI::App *trace_cmd = app.add_subcommand(
      "trace", "trace functions without a spec file: every parameter, and the results at every "
               "RET (args: all, return: true); prints the spec it used, to save and edit");
  trace_cmd->footer("  -- ARGS  start the binary with ARGS, traced; without -- every process running "
                    "it is traced\n\nExample: weave trace ./server 'main.(*Server).Handle' -- "
                    "-port 8080\nBuilt and cached as weave run does.");
  trace_cmd->add_option("binary", trace_args.options.binary_path, "Go binary to trace")->required();
  trace_cmd->add_option("function", trace_functions,
                        "Go function names or globs, as weave funcs lists them")
      ->required();
  add_tracer_options(*trace_cmd, trace_args.options);

  std::string funcs_binary, funcs_pattern;
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
  add_debug_options(*funcs_cmd, funcs_debug);
  funcs_cmd->footer("Examples:\n"
                    "  weave funcs ./bin 'main.*'          # main's functions: parameters, types, registers\n"
                    "  weave funcs ./bin '*.(*Server).*'   # the methods of every Server type\n"
                    "  weave funcs --names ./bin 'main.*'  # the names alone\n"
                    "\n"
                    "A name it prints is what a spec's function: takes (man weave-spec).");

  try {
    std::reverse(args.begin(), args.end());
    app.parse(args);
    if (((*run_cmd && run_args.options.pid > 0) || (*trace_cmd && trace_args.options.pid > 0)) &&
        has_program_args)
      throw CLI::ValidationError("--pid and -- ARGS exclude each other: trace a running process, "
                                 "or start one");
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e); // prints the help, the version, or the error
    return code == 0 ? 0 : kExitUsage;
  }
  g_color = weave::use_color(color, STDERR_FILENO);
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
      std::string spec = weave::quick_spec(trace_functions);
      trace_args.options.spec_path = weave::save_quick_spec(spec, trace_args.options.cache_root);
      std::cerr << "weave: tracing with this spec (" << trace_args.options.spec_path
                << "; save it to edit it, then: weave run SPEC " << trace_args.options.binary_path
                << "):\n"
                << spec;
      trace_args.options.program_args = run_args.options.program_args;
      trace_args.options.start_program = has_program_args;
      return run(trace_args);
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
      std::vector<std::string> warnings;
      std::cout << weave::list_functions(image, debug.get(), pcln ? &*pcln : nullptr, funcs_pattern, &warnings);
      std::cout.flush();
      for (const std::string &w : warnings)
        diagnose("weave: warning: " + w + "\n");
      return 0;
    }
  } catch (const weave::UserError &e) {
    diagnose(weave::format_error(e));
    return kExitUserError;
  } catch (const std::exception &e) {
    std::cerr << "weave: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
  return 0;
}
