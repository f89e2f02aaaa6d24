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
  std::string runtime_path; // the weave-tracer runtime to embed the probes into; "" picks it by the
                            // target's architecture (default_runtime_path)
};

// Throws UserError: [output-exists] (out_dir is something weave did not write), [clang-missing],
// [clang-failed] (with clang's own message), [runtime-missing], [runtime-arch] (the runtime is not of
// the architecture the target binary runs on), [runtime-foreign] (it is not a weave-tracer runtime of
// this version: its ELF note says so), [write-failed].
// Marks the stages "write", "clang" and "assemble" on `timings` when given.
void build_output(const Plan &plan, const std::vector<GeneratedFile> &files,
                  const BuildOptions &options, Timings *timings = nullptr);

// Where the tracer runtime for a Go binary of `go_arch` ("" = this host's) is: $WEAVE_RUNTIME_ARM64 or
// $WEAVE_RUNTIME_AMD64 for that architecture, else $WEAVE_RUNTIME, else next to the running weave
// (a build tree), else in the installed layout relative to it (bin/../libexec/weave/): weave-tracer
// for the host's architecture, weave-tracer-arm64 (say) for another one. A 386 binary runs on amd64
// and takes the amd64 runtime. When neither file exists it returns the one next to weave.
std::string default_runtime_path(const std::string &go_arch = "");

// Why the executable at `path` is not the weave-tracer runtime of this weave's version for `arch`
// (amd64 or arm64): "" when it is. Read from its ELF note (runtime/payload.h: kRuntimeNoteOwner).
std::string runtime_identity_problem(const std::string &path, const std::string &arch);

// Runs argv (no shell) in `cwd`; returns the exit status (-1 when it could not start, with errno
// text in `output`) and everything it wrote to stdout and stderr.
int run_command(const std::vector<std::string> &argv, const std::string &cwd, std::string &output);

} // namespace weave
