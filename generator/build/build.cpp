#include "build/build.h"

#include "common/diag.h"
#include "support/timings.h"
#include "gobinary/elf_notes.h"
#include "payload.h"
#include "plan/plan.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <set>
#include <csignal>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace weave {

namespace {

// Creates `path` in weave's own fresh temporary directory: O_EXCL|O_NOFOLLOW all the same, so
// nothing there is ever opened that weave did not just create.
void write_file(const fs::path &path, const std::string &content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < content.size();) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    if (ok)
      done += static_cast<size_t>(n);
  }
  int err = errno;
  if (fd >= 0 && ::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok)
    throw UserError("write-failed", fmt::format("cannot write {}: {}", path.string(), strerror(err)));
}

// Whether the file at `path` (not followed if a link) contains `needle`, read in pieces: memory
// stays constant whatever its size, and at most kMaxScan bytes are read.
bool file_contains(const fs::path &path, std::string_view needle) {
  constexpr uint64_t kMaxScan = 64ull << 20;
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st {};
  bool found = false;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    std::string window;
    char buffer[1 << 16];
    uint64_t scanned = 0;
    ssize_t n;
    while (!found && scanned < kMaxScan && (n = ::read(fd, buffer, sizeof buffer)) > 0) {
      scanned += static_cast<uint64_t>(n);
      // Keep the last needle.size() - 1 bytes so a match across two reads is seen.
      window.erase(0, window.size() > needle.size() ? window.size() - needle.size() : 0);
      window.append(buffer, static_cast<size_t>(n));
      found = window.find(needle) != std::string::npos;
    }
  }
  ::close(fd);
  return found;
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

// What in `dir` weave did not write ("" for dir itself when it is not a directory); empty when
// weave may replace it: an empty directory, or one holding only files of weave's own output,
// probes.json among them and a weave manifest.
std::vector<std::string> not_weave_output(const fs::path &dir, const std::vector<GeneratedFile> &files) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec) || !fs::is_directory(dir, ec))
    return {dir.filename().string() + " (not a directory)"};
  std::set<std::string> ours = {"probes.bpf.o", "tracer"};
  for (const auto &file : files)
    ours.insert(file.name);
  std::vector<std::string> foreign;
  bool empty = true;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    empty = false;
    std::string name = it->path().filename().string();
    if (!ours.count(name) || !it->is_regular_file() || it->is_symlink())
      foreign.push_back(name);
  }
  if (ec)
    return {fmt::format("its contents (cannot list them: {})", ec.message())};
  std::sort(foreign.begin(), foreign.end());
  if (foreign.empty() && !empty && !file_contains(dir / "probes.json", "\"weave_version\""))
    foreign.push_back("probes.json (not a weave manifest)");
  return foreign;
}

// A build killed between creating its temporary directory and the final exchange leaves
// ".OUT.weave-tmp-PID-XXXXXX" (or, without RENAME_EXCHANGE, ".OUT.weave-old-PID") beside OUT: those of
// processes that are gone are removed. A live PID's are another build's, in progress.
void remove_stale_temporaries(const fs::path &out) {
  std::error_code ec;
  fs::path parent = out.parent_path();
  std::string prefix = "." + out.filename().string() + ".weave-";
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0)
      continue;
    std::string rest = name.substr(prefix.size());
    size_t dash = rest.find('-');
    if (dash == std::string::npos || (rest.substr(0, dash) != "tmp" && rest.substr(0, dash) != "old"))
      continue;
    std::string pid = rest.substr(dash + 1);
    pid = pid.substr(0, pid.find('-')); // ".OUT.weave-tmp-PID-XXXXXX" (mkdtemp's suffix)
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9)
      continue;
    if (kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno == EPERM)
      continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
}

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

namespace {

std::string runtime_env_var(const std::string &arch) {
  std::string upper = arch;
  for (char &c : upper)
    c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  return "WEAVE_RUNTIME_" + upper;
}

// Where weave looks for the runtime of `arch` when no variable names one, in order: next to the
// running weave (a build tree, where CMake writes both into one directory), then the installed
// layout's runtime directory relative to weave's own (bin/../libexec/weave, wherever the prefix
// is: cmake --install, the .deb, or a copied tree).
std::vector<std::string> runtime_candidates(const std::string &arch) {
  std::string name = arch == host_arch() ? "weave-tracer" : "weave-tracer-" + arch;
  std::error_code ec;
  fs::path self_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  return {(self_dir / name).string(),
          (self_dir / WEAVE_RUNTIME_DIR_FROM_BIN / name).lexically_normal().string()};
}

} // namespace

std::string default_runtime_path(const std::string &go_arch) {
  std::string arch = runtime_arch(go_arch.empty() ? host_arch() : go_arch);
  if (const char *env = getenv(runtime_env_var(arch).c_str()); env && *env)
    return env;
  if (const char *env = getenv("WEAVE_RUNTIME"); env && *env)
    return env;
  std::vector<std::string> candidates = runtime_candidates(arch);
  std::error_code ec;
  for (const std::string &candidate : candidates)
    if (fs::exists(candidate, ec))
      return candidate;
  return candidates.front();
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

std::string runtime_identity_problem(const std::string &path, const std::string &arch) {
  std::string error;
  std::optional<std::string> note = read_note_file(path, std::string(kRuntimeNoteOwner), kRuntimeNoteType, error);
  if (!error.empty())
    return "cannot be read as a weave tracer runtime: " + error;
  if (!note)
    return "is not a weave tracer runtime (it has no weave note)";
  std::string want = runtime_note_text(WEAVE_VERSION, arch);
  if (*note != want)
    return fmt::format("is {}, not {}", *note, want);
  return "";
}

void build_output(const Plan &plan, const std::vector<GeneratedFile> &files,
                  const BuildOptions &options, Timings *timings) {
  if (options.out_dir.empty())
    throw UserError("bad-output", "-o was given an empty directory name", {},
                    "name the output directory, e.g. -o weave-out");
  // "out/" names the directory out: lexically normal, a trailing slash leaves an empty file name.
  fs::path out = fs::absolute(options.out_dir).lexically_normal();
  if (out.filename().empty())
    out = out.parent_path();
  std::error_code ec;
  // The output directory is replaced whole: never the one the user is in, nor one above it.
  fs::path cwd = fs::current_path(ec);
  if (!ec) {
    fs::path here = fs::weakly_canonical(cwd, ec), there = fs::weakly_canonical(out, ec);
    auto [mismatch, _] = std::mismatch(there.begin(), there.end(), here.begin(), here.end());
    if (!ec && (mismatch == there.end() || out == out.root_path()))
      throw UserError("bad-output",
                      fmt::format("-o {} is {}: weave replaces its output directory whole, and will "
                                  "not replace the directory you are in",
                                  options.out_dir, there == here ? "the current directory" : "above the current directory"),
                      {}, "name a directory of its own, e.g. -o weave-out");
  }
  if (fs::exists(out, ec) || fs::is_symlink(out, ec)) {
    // Replace only what weave wrote before: never delete a user's file by accident.
    std::vector<std::string> foreign = not_weave_output(out, files);
    if (!foreign.empty()) {
      std::string listed;
      for (size_t i = 0; i < foreign.size() && i < 5; ++i)
        listed += (listed.empty() ? "" : ", ") + foreign[i];
      if (foreign.size() > 5)
        listed += fmt::format(" and {} more", foreign.size() - 5);
      throw UserError("output-exists",
                      fmt::format("{} exists and is not a directory weave wrote: replacing it would lose {}",
                                  options.out_dir, listed),
                      {}, "choose another directory with -o, or move those away");
    }
  }
  remove_stale_temporaries(out);
  // The tracer runs where the traced program runs: its runtime must be of the target's architecture.
  std::string arch = runtime_arch(plan.target.arch);
  std::string runtime = options.runtime_path.empty() ? default_runtime_path(plan.target.arch)
                                                     : options.runtime_path;
  if (!fs::exists(runtime, ec)) {
    // Name every place weave looked when it picked the path itself, not only the first.
    std::string where = runtime;
    if (std::vector<std::string> looked = runtime_candidates(arch); runtime == looked.front())
      where = fmt::format("{} (nor {})", looked[0], looked[1]);
    if (arch == host_arch())
      throw UserError("runtime-missing", fmt::format("the tracer runtime {} is missing", where), {},
                      "install weave with its runtime (the weave .deb, or `cmake --install BUILD`: both put "
                      "weave-tracer in PREFIX/libexec/weave/), or in a build tree build it next to weave "
                      "(`cmake --build BUILD --target weave-tracer`); or name one with --runtime or "
                      "WEAVE_RUNTIME");
    std::string how = arch == "arm64" ? "weave builds weave-tracer-arm64 next to itself when the arm64 cross "
                                        "compiler and sysroot are installed (scripts/arm64-deps.sh as root, "
                                        "then rebuild weave; `cmake --install` and the .deb then install it "
                                        "too), or name one"
                                      : "name the " + arch + " tracer runtime";
    throw UserError("runtime-missing",
                    fmt::format("{} is an {} binary, and the {} tracer runtime {} is missing",
                                plan.target.path, plan.target.arch, arch, where),
                    {}, fmt::format("{} with --runtime or {}", how, runtime_env_var(arch)));
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

  // Any ELF executable of the right machine would pass the test above (WEAVE_RUNTIME=/bin/ls did,
  // and the "tracer" was ls): the runtime must say it is weave's, of this version and architecture.
  if (std::string problem = runtime_identity_problem(runtime, arch); !problem.empty())
    throw UserError("runtime-foreign", fmt::format("the tracer runtime {} {}", runtime, problem), {},
                    fmt::format("use the weave-tracer{} installed or built with this weave {} (--runtime, "
                                "or WEAVE_RUNTIME)",
                                arch == host_arch() ? "" : "-" + arch, WEAVE_VERSION));

  fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  // `-o a/b/out` makes a and b as mkdir -p would (they are the user's path; only the directory
  // weave fills is created with mkdtemp below).
  if (!fs::is_directory(parent, ec) && !fs::create_directories(parent, ec) && ec)
    throw UserError("write-failed", fmt::format("cannot create {}: {}", parent.string(), ec.message()));
  TempDir tmp;
  // mkdtemp: a new directory of weave's own (0700 while it is filled), never one planted at a
  // predictable name; ".OUT.weave-tmp-PID-XXXXXX" so remove_stale_temporaries knows it.
  std::string tmp_name = (parent / fmt::format(".{}.weave-tmp-{}-XXXXXX", out.filename().string(), getpid())).string();
  if (!mkdtemp(tmp_name.data()))
    throw UserError("write-failed", fmt::format("cannot create a directory in {}: {}", parent.string(), strerror(errno)));
  tmp.path = tmp_name;
  if (chmod(tmp.path.c_str(), 0755) != 0)
    throw UserError("write-failed", fmt::format("cannot chmod {}: {}", tmp.path.string(), strerror(errno)));
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

  // One atomic step: the new directory and the old one trade places (the old one, now at the
  // temporary name, is removed with it). Killed at any moment, the user has either directory whole.
  if (fs::exists(out, ec)) {
    if (renameat2(AT_FDCWD, tmp.path.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) != 0) {
      if (errno != EINVAL && errno != ENOSYS)
        throw UserError("write-failed", fmt::format("cannot replace {}: {}", options.out_dir, strerror(errno)));
      // A file system without the exchange: two renames, and the old directory back on failure.
      fs::path old = parent / fmt::format(".{}.weave-old-{}", out.filename().string(), getpid());
      fs::rename(out, old, ec);
      if (ec)
        throw UserError("write-failed", fmt::format("cannot replace {}: {}", options.out_dir, ec.message()));
      fs::rename(tmp.path, out, ec);
      if (ec) {
        std::error_code back;
        fs::rename(old, out, back);
        throw UserError("write-failed", fmt::format("cannot replace {}: {}", options.out_dir, ec.message()));
      }
      fs::remove_all(old, ec);
      tmp.keep = true;
    }
  } else {
    fs::rename(tmp.path, out, ec);
    if (ec)
      throw UserError("write-failed", fmt::format("cannot create {}: {}", options.out_dir, ec.message()));
    tmp.keep = true;
  }
  mark(timings, "assemble");
}

} // namespace weave
