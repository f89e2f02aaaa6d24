// weave — builds eBPF tracers for Go programs from a probe spec.
//
//   weave spec.yaml ./bin                 same as: weave build spec.yaml ./bin -o weave-out
//   weave build spec.json ./bin -o out    writes out/{probes.bpf.c,probes.h,probes.json,Makefile.bpf,
//                                         probes.bpf.o,tracer,...}
//
// The driver reads top to bottom, one pipeline stage per line (DESIGN.md "Pipeline").
#include "binary/binary.h"
#include "build/build.h"
#include "codegen/codegen.h"
#include "common/diag.h"
#include "debuginfo/debuginfo.h"
#include "plan/plan.h"
#include "spec/spec.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstring>
#include <iostream>

namespace {

struct BuildArgs {
  std::string spec_path;
  std::string binary_path;
  std::string out_dir = "weave-out";
  std::string dump;
  std::string clang = WEAVE_CLANG;
  std::string runtime;
};

int build(const BuildArgs &args) {
  weave::Spec spec = weave::parse_spec_file(args.spec_path);
  if (args.dump == "spec") {
    std::cout << weave::dump_spec(spec);
    return 0;
  }
  weave::BinaryImage image = weave::load_binary(args.binary_path);
  auto debug = weave::DebugInfo::open(args.binary_path, image.ptr_size);
  weave::Plan plan = weave::make_plan(spec, image, *debug);
  if (args.dump == "plan") {
    std::cout << weave::dump_plan(plan);
    return 0;
  }
  std::vector<weave::GeneratedFile> files = weave::generate(plan);
  if (!args.dump.empty()) {
    for (const auto &file : files)
      if (file.name == args.dump)
        std::cout << file.content;
    return 0;
  }
  weave::build_output(plan, files,
                      {args.out_dir, args.clang,
                       args.runtime.empty() ? weave::default_runtime_path() : args.runtime});
  std::cerr << "weave: wrote " << args.out_dir << "/ (" << plan.probes.size() << " probe"
            << (plan.probes.size() == 1 ? "" : "s") << " on " << args.binary_path
            << "); run: " << args.out_dir << "/tracer -- " << args.binary_path << "\n";
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
}

} // namespace

int main(int argc, char **argv) {
  // `weave spec.yaml ./bin` is `weave build spec.yaml ./bin`.
  std::vector<std::string> args(argv + 1, argv + argc);
  static const char *commands[] = {"build"};
  bool has_command = !args.empty() && std::find(std::begin(commands), std::end(commands), args[0]) != std::end(commands);
  if (!args.empty() && !has_command && args[0][0] != '-')
    args.insert(args.begin(), "build");

  CLI::App app{"weave: builds eBPF tracers for Go programs from a probe spec"};
  app.set_version_flag("--version", std::string("weave ") + WEAVE_VERSION);
  app.require_subcommand(1);
  BuildArgs build_args;
  CLI::App *build_cmd = app.add_subcommand("build", "generate probes and a tracer for a Go binary");
  add_build_options(*build_cmd, build_args);

  try {
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  try {
    if (*build_cmd)
      return build(build_args);
  } catch (const weave::UserError &e) {
    std::cerr << weave::format_error(e);
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "weave: internal error: " << e.what() << "\n";
    return 70;
  }
  return 0;
}
