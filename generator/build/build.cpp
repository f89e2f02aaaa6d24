#include "build/build.h"

#include "common/diag.h"
#include "support/timings.h"
#include "payload.h"
#include "plan/plan.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace weave {

namespace {

void write_file(const fs::path &path, const std::string &content) {
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out.good())
    throw UserError("write-failed", fmt::format("cannot write {}: {}", path.string(), strerror(errno)));
}

std::string read_file(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// TempDir is removed when it goes out of scope, unless it was moved into place.
struct TempDir {
  fs::path path;
  bool keep = false;
  ~TempDir() {
    std::error_code ec;
    if (!keep && !path.empty())
      fs::remove_all(path, ec);
  }
};

} // namespace

int run_command(const std::vector<std::string> &argv, const std::string &cwd, std::string &output) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    output = strerror(errno);
    return -1;
  }
  int exec_error[2];
  if (pipe2(exec_error, O_CLOEXEC) != 0) {
    output = strerror(errno);
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0)
      _exit(127);
    std::vector<char *> args;
    for (const auto &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    int err = errno;
    (void)!write(exec_error[1], &err, sizeof(err));
    _exit(127);
  }
  close(pipe_fds[1]);
  close(exec_error[1]);
  char buffer[4096];
  ssize_t n;
  output.clear();
  while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0)
    output.append(buffer, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int err = 0;
  bool exec_failed = read(exec_error[0], &err, sizeof(err)) == sizeof(err);
  close(exec_error[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (exec_failed) {
    output = strerror(err);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string host_arch() {
#if defined(__aarch64__)
  return "arm64";
#else
  return "amd64";
#endif
}

std::string runtime_arch(const std::string &go_arch) {
  // A 386 program runs, and is traced, on an amd64 kernel.
  return go_arch == "arm64" ? "arm64" : "amd64";
}

std::string default_runtime_path(const std::string &go_arch) {
  std::string arch = runtime_arch(go_arch.empty() ? host_arch() : go_arch);
  std::string upper = arch;
  for (char &c : upper)
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  if (const char *env = getenv(("WEAVE_RUNTIME_" + upper).c_str()); env && *env)
    return env;
  if (const char *env = getenv("WEAVE_RUNTIME"); env && *env)
    return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / (arch == host_arch() ? "weave-tracer" : "weave-tracer-" + arch)).string();
}

namespace {

// The architecture of an ELF executable from its e_machine, "" when it is not one weave knows.
std::string elf_arch(const std::string &path) {
  unsigned char header[20] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char *>(header), sizeof header);
  if (in.gcount() != sizeof header || memcmp(header, "\x7f" "ELF", 4) != 0 || header[5] != 1 /* LSB */)
    return "";
  unsigned machine = header[18] | (header[19] << 8);
  switch (machine) {
  case 62: return "amd64";  // EM_X86_64
  case 183: return "arm64"; // EM_AARCH64
  case 3: return "386";     // EM_386
  default: return fmt::format("e_machine {}", machine);
  }
}

} // namespace

void build_output(const Plan &plan, const std::vector<GeneratedFile> &files,
                  const BuildOptions &options, Timings *timings) {
  fs::path out = options.out_dir;
  std::error_code ec;
  if (fs::exists(out, ec)) {
    // Replace only what weave wrote before: never delete a user's directory by accident.
    bool is_ours = fs::is_directory(out, ec) && (fs::exists(out / "probes.json", ec) || fs::is_empty(out, ec));
    if (!is_ours)
      throw UserError("output-exists",
                      fmt::format("{} exists and is not a weave output directory; refusing to replace it",
                                  out.string()),
                      {}, "choose another directory with -o, or remove it");
  }
  // The tracer runs where the traced program runs: its runtime must be of the target's architecture.
  std::string arch = runtime_arch(plan.target.arch);
  std::string runtime = options.runtime_path.empty() ? default_runtime_path(plan.target.arch)
                                                     : options.runtime_path;
  if (!fs::exists(runtime, ec)) {
    if (arch == host_arch())
      throw UserError("runtime-missing", fmt::format("the tracer runtime {} is missing", runtime), {},
                      "build weave fully (it installs weave-tracer next to weave), or set WEAVE_RUNTIME");
    std::string upper = arch == "arm64" ? "ARM64" : "AMD64";
    std::string how = arch == "arm64" ? "weave builds weave-tracer-arm64 next to itself when the arm64 cross "
                                        "compiler and sysroot are installed (scripts/arm64-deps.sh as root, "
                                        "then rebuild weave), or name one"
                                      : "name the " + arch + " tracer runtime";
    throw UserError("runtime-missing",
                    fmt::format("{} is an {} binary, and the {} tracer runtime {} is missing",
                                plan.target.path, plan.target.arch, arch, runtime),
                    {}, fmt::format("{} with --runtime or WEAVE_RUNTIME_{}", how, upper));
  }
  if (std::string got = elf_arch(runtime); got != arch)
    throw UserError("runtime-arch",
                    fmt::format("the tracer runtime {} is {}, but {} is an {} binary whose tracer must run "
                                "on {}",
                                runtime, got.empty() ? "not an ELF executable" : "built for " + got,
                                plan.target.path, plan.target.arch, arch),
                    {},
                    fmt::format("use weave-tracer{} (--runtime, or WEAVE_RUNTIME_{})",
                                arch == host_arch() ? "" : "-" + arch, arch == "arm64" ? "ARM64" : "AMD64"));

  fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  TempDir tmp;
  tmp.path = parent / fmt::format(".{}.weave-tmp-{}", out.filename().string(), getpid());
  fs::remove_all(tmp.path, ec);
  if (!fs::create_directories(tmp.path, ec))
    throw UserError("write-failed", fmt::format("cannot create {}: {}", tmp.path.string(), ec.message()));
  for (const auto &file : files)
    write_file(tmp.path / file.name, file.content);
  mark(timings, "write");

  std::vector<std::string> argv = {options.clang};
  for (const auto &arg : bpf_clang_args(plan))
    argv.push_back(arg);
  std::string clang_output;
  int status = run_command(argv, tmp.path.string(), clang_output);
  if (status == -1)
    throw UserError("clang-missing", fmt::format("cannot run {}: {}", options.clang, clang_output), {},
                    "install clang (apt-get install clang), or name it with --clang");
  if (status != 0)
    throw UserError("clang-failed",
                    fmt::format("clang failed to compile the generated probes.bpf.c (exit {}):\n{}",
                                status, clang_output));

  mark(timings, "clang");
  std::string object = read_file(tmp.path / "probes.bpf.o");
  std::string manifest = render_manifest(plan);
  std::string error;
  if (!append_payload(runtime, object, manifest, (tmp.path / "tracer").string(), error))
    throw UserError("write-failed", "cannot assemble the tracer: " + error);

  fs::path old = parent / fmt::format(".{}.weave-old-{}", out.filename().string(), getpid());
  if (fs::exists(out, ec)) {
    fs::rename(out, old, ec);
    if (ec)
      throw UserError("write-failed", fmt::format("cannot replace {}: {}", out.string(), ec.message()));
  }
  fs::rename(tmp.path, out, ec);
  if (ec)
    throw UserError("write-failed", fmt::format("cannot create {}: {}", out.string(), ec.message()));
  tmp.keep = true;
  fs::remove_all(old, ec);
  mark(timings, "assemble");
}

} // namespace weave
