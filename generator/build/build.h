// Stage 7 — build: writes the generated files, runs clang, assembles the tracer, and only then
// puts the output directory in place, so a failure never leaves a half-written directory.
#pragma once

#include "codegen/codegen.h"

#include <string>
#include <vector>

namespace weave {

struct Plan;
class Timings;

struct BuildOptions {
  std::string out_dir;      // replaced as a whole on success
  std::string clang;        // clang executable (name or path)
  std::string runtime_path; // the weave-tracer runtime to embed the probes into
};

// Throws UserError: [output-exists] (out_dir is something weave did not write), [clang-missing],
// [clang-failed] (with clang's own message), [runtime-missing], [write-failed].
// Marks the stages "write", "clang" and "assemble" on `timings` when given.
void build_output(const Plan &plan, const std::vector<GeneratedFile> &files,
                  const BuildOptions &options, Timings *timings = nullptr);

// Where the tracer runtime is: $WEAVE_RUNTIME, else weave-tracer next to the running weave.
std::string default_runtime_path();

// Runs argv (no shell) in `cwd`; returns the exit status (-1 when it could not start, with errno
// text in `output`) and everything it wrote to stdout and stderr.
int run_command(const std::vector<std::string> &argv, const std::string &cwd, std::string &output);

} // namespace weave
