#include "run/run.h"

#include "common/diag.h"
#include "common/safe_io.h"
#include "gobinary/elf_notes.h"
#include "spec/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace weave {

// ---- SHA-256 (FIPS 180-4) ---------------------------------------------------------------------

namespace {

// FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64
// primes.
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}

} // namespace

Sha256::Sha256() {
  // §5.3.3: the first 32 bits of the fractional parts of the square roots of the first 8 primes.
  static constexpr uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::copy(std::begin(initial), std::end(initial), state_);
}

void Sha256::block(const uint8_t *p) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t)
    w[t] = uint32_t(p[4 * t]) << 24 | uint32_t(p[4 * t + 1]) << 16 | uint32_t(p[4 * t + 2]) << 8 |
           uint32_t(p[4 * t + 3]);
  for (int t = 16; t < 64; ++t) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3], e = state_[4], f = state_[5],
           g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t t1 =
        h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[t] + w[t];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::update(std::string_view data) {
  const auto *p = reinterpret_cast<const uint8_t *>(data.data());
  size_t n = data.size();
  length_ += n;
  if (buffered_) {
    size_t take = std::min(n, sizeof(buffer_) - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    n -= take;
    if (buffered_ < sizeof(buffer_))
      return;
    block(buffer_);
    buffered_ = 0;
  }
  for (; n >= 64; p += 64, n -= 64)
    block(p);
  std::memcpy(buffer_, p, n);
  buffered_ = n;
}

std::array<uint8_t, 32> Sha256::digest() {
  // §5.1.1: a 1 bit, zeros up to 56 mod 64 bytes, then the length in bits, big-endian.
  uint64_t bits = length_ * 8;
  uint8_t pad[72] = {0x80};
  size_t pad_len = (buffered_ < 56 ? 56 : 120) - buffered_;
  for (int i = 0; i < 8; ++i)
    pad[pad_len + i] = uint8_t(bits >> (56 - 8 * i));
  update(std::string_view(reinterpret_cast<const char *>(pad), pad_len + 8));
  std::array<uint8_t, 32> out;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j)
      out[4 * i + j] = uint8_t(state_[i] >> (24 - 8 * j));
  return out;
}

std::string Sha256::hex_digest() {
  std::string text;
  for (uint8_t byte : digest())
    text += fmt::format("{:02x}", byte);
  return text;
}

// ---- The cache --------------------------------------------------------------------------------

namespace {

constexpr size_t kKeepEntries = 32; // cache entries kept, most recently used first

bool read_whole(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = text.str();
  return !in.bad();
}

[[noreturn]] void unsafe(const std::string &path, const std::string &why) {
  throw UserError("cache-unsafe", fmt::format("{} {}: weave runs what it finds in its cache, so the cache "
                                              "must be private to the user running weave",
                                              path, why),
                  {}, fmt::format("remove {} (weave run recreates it), or set XDG_CACHE_HOME to a "
                                  "directory of your own",
                                  path));
}

// Why `st` (of a directory or file in the cache) cannot be trusted, or "": owned by the user
// running weave, and neither group nor others may write it.
std::string untrusted(const struct stat &st) {
  if (st.st_uid != geteuid())
    return fmt::format("is owned by uid {}, not by uid {} running weave", st.st_uid, geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return fmt::format("is writable by {} (mode {:04o})", st.st_mode & S_IWOTH ? "others" : "its group",
                       st.st_mode & 07777);
  return "";
}

// Creates `dir` (its parents as usual) mode 0700, or checks the one there: a real directory
// (not a link), the user's own, and then made 0700 if it was more open (older weaves created it
// with the umask's modes).
void private_dir(const fs::path &dir) {
  std::error_code ec;
  if (dir.has_parent_path())
    fs::create_directories(dir.parent_path(), ec);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw UserError("write-failed", fmt::format("cannot create the cache directory {}: {}", dir.string(),
                                                std::strerror(errno)));
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    unsafe(dir.string(), errno == ELOOP || errno == ENOTDIR ? "is not a directory (a symbolic link or a file)"
                                                           : std::string("cannot be opened: ") + std::strerror(errno));
  struct stat st {};
  fstat(fd, &st);
  if (st.st_uid != geteuid()) {
    close(fd);
    unsafe(dir.string(), untrusted(st));
  }
  if ((st.st_mode & 077) != 0 && fchmod(fd, 0700) != 0) {
    int err = errno;
    close(fd);
    unsafe(dir.string(), fmt::format("is mode {:04o} and cannot be made 0700: {}", st.st_mode & 07777,
                                     std::strerror(err)));
  }
  close(fd);
}

// The cache entry's tracer, opened and checked through the descriptor that will be executed: the
// entry a real directory and the tracer a regular executable file, both the user's own and
// writable by no one else. -1 when the entry is not complete (a miss); throws [cache-unsafe] when
// it is there but cannot be trusted.
int open_checked_tracer(const fs::path &dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0)
    return -1;
  if (!S_ISDIR(st.st_mode))
    unsafe(dir.string(), "is " + file_kind(st.st_mode) + ", not a directory");
  if (std::string why = untrusted(st); !why.empty())
    unsafe(dir.string(), why);
  struct stat manifest {};
  if (lstat((dir / "probes.json").c_str(), &manifest) != 0)
    return -1;
  if (!S_ISREG(manifest.st_mode))
    unsafe((dir / "probes.json").string(), "is " + file_kind(manifest.st_mode) + ", not a regular file");
  fs::path tracer = dir / "tracer";
  int fd = open(tracer.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return -1;
    unsafe(tracer.string(), errno == ELOOP ? "is a symbolic link" : std::string("cannot be opened: ") + std::strerror(errno));
  }
  fstat(fd, &st);
  std::string why = !S_ISREG(st.st_mode) ? "is " + file_kind(st.st_mode) + ", not a regular file"
                    : !(st.st_mode & S_IXUSR) ? std::string("is not executable")
                                              : untrusted(st);
  if (!why.empty()) {
    close(fd);
    unsafe(tracer.string(), why);
  }
  return fd;
}

bool is_key(const std::string &name) {
  return name.size() == 64 &&
         std::all_of(name.begin(), name.end(), [](char c) { return isxdigit(c) && !isupper(c); });
}

// Keeps the kKeepEntries most recently used entries (a hit touches its directory) and removes
// the rest: every rebuilt binary has a new build id, so the cache would otherwise only grow.
void prune(const fs::path &root, const fs::path &keep) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  for (const auto &entry : fs::directory_iterator(root, ec)) {
    if (!entry.is_directory(ec) || !is_key(entry.path().filename().string()))
      continue;
    entries.emplace_back(fs::last_write_time(entry.path(), ec), entry.path());
  }
  if (entries.size() <= kKeepEntries)
    return;
  std::sort(entries.begin(), entries.end(),
            [](const auto &x, const auto &y) { return x.first > y.first; });
  for (size_t i = kKeepEntries; i < entries.size(); ++i)
    if (entries[i].second != keep)
      fs::remove_all(entries[i].second, ec);
}

} // namespace

void require_regular_binary(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw UserError("binary-unreadable", fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  struct stat st {};
  fstat(fd, &st);
  close(fd);
  if (!S_ISREG(st.st_mode))
    throw UserError("binary-unreadable",
                    fmt::format("{} is {}, not a regular file: give the path of a Go executable", path,
                                file_kind(st.st_mode)));
}

std::string default_cache_root() {
  if (const char *xdg = getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/')
    return (fs::path(xdg) / "weave").string();
  if (const char *home = getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "weave").string();
  throw UserError("no-cache-dir",
                  "weave run needs a cache directory, but neither XDG_CACHE_HOME "
                  "nor HOME is set",
                  {}, "set XDG_CACHE_HOME, or use weave build -o DIR");
}

QuickSpec quick_spec(const QuickSpecArgs &args) {
  QuickSpec spec;
  int line = 1;
  auto add = [&](const std::string &text) {
    spec.text += text;
    line += static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  };
  // `  KEY: 'VALUE'` single-quoted (a method's "(*T)", a glob's '*' and an expression's ':' or '#'
  // are YAML syntax otherwise), its place kept for errors.
  auto value = [&](const std::string &prefix, const std::string &text) {
    std::string quoted;
    for (char c : text)
      quoted += c == '\'' ? std::string("''") : std::string(1, c);
    spec.origins.push_back({line, static_cast<int>(prefix.size()) + 2, text});
    add(prefix + "'" + quoted + "'\n");
  };
  std::string what = !args.values            ? "calls and their durations (no DWARF: no values)"
                     : args.captures.empty() ? "every parameter, and the results at every RET"
                                             : "these values, and the results at every RET";
  add("# weave trace: " + what + "\nprobes:\n");
  for (const std::string &function : args.functions) {
    // FILE.go:LINE is a source line: a line probe, its locals instead of parameters and results.
    size_t colon = function.rfind(':');
    if (colon != std::string::npos && colon >= 3 && function.compare(colon - 3, 3, ".go") == 0 &&
        colon + 1 < function.size() &&
        std::all_of(function.begin() + static_cast<std::ptrdiff_t>(colon) + 1, function.end(),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      value("  - line: ", function);
      if (!args.captures.empty()) {
        add("    capture:\n");
        for (const std::string &capture : args.captures)
          value("      - ", capture);
      } else if (args.values) {
        add("    locals: all\n");
      }
      if (!args.when.empty())
        value("    when: ", args.when);
      if (!args.when_return.empty())
        value("    when_return: ", args.when_return);
      if (!args.min_duration.empty())
        value("    min_duration: ", args.min_duration);
      continue;
    }
    value("  - function: ", function);
    if (!args.captures.empty()) {
      add("    capture:\n");
      for (const std::string &capture : args.captures)
        value("      - ", capture);
    } else if (args.values) {
      add("    args: all\n");
    }
    add("    return: true\n");
    if (!args.when.empty())
      value("    when: ", args.when);
    if (!args.when_return.empty())
      value("    when_return: ", args.when_return);
    if (!args.min_duration.empty())
      value("    min_duration: ", args.min_duration);
    if (args.stack > 0)
      add("    stack: " + std::to_string(args.stack) + "\n");
    if (args.inlined)
      add("    inlined: true\n");
    if (args.contents)
      add("    contents: true\n");
  }
  return spec;
}

std::string save_quick_spec(const std::string &text, const std::string &cache_root) {
  fs::path root = cache_root.empty() ? default_cache_root() : cache_root;
  private_dir(root);
  fs::path dir = root / "specs";
  private_dir(dir);
  fs::path path = dir / (Sha256::hex(text) + ".yaml");
  std::string existing, error;
  if (read_regular_file(path.string(), kMaxSpecBytes, false, existing, error) == ReadStatus::Ok && existing == text)
    return path.string();
  // Written whole under a fresh temporary name (mkstemp: no link followed), then renamed: a
  // concurrent trace reads all or nothing.
  if (!write_file_replacing(path.string(), text, 0600, error))
    throw UserError("write-failed", fmt::format("cannot write {}: {}", path.string(), error));
  return path.string();
}

std::string cache_key(std::string_view spec_bytes, std::string_view binary_id,
                      std::string_view weave_version, std::string_view runtime_digest) {
  Sha256 h;
  for (std::string_view part : {spec_bytes, binary_id, weave_version, runtime_digest}) {
    std::string length = fmt::format("{}:", part.size());
    h.update(length);
    h.update(part);
  }
  return h.hex_digest();
}

std::string cached_tracer(const RunOptions &options,
                          const std::function<void(const std::string &out_dir)> &build, int *tracer_fd) {
  std::string spec = options.spec_text, error;
  if (ReadStatus read = spec.empty() ? read_regular_file(options.spec_path, kMaxSpecBytes, true, spec, error) : ReadStatus::Ok;
      read != ReadStatus::Ok) {
    parse_spec_file(options.spec_path); // its error names what the file is (a program: the arguments swapped)
    throw UserError(read == ReadStatus::TooLarge ? "spec-too-large" : "spec-unreadable",
                    fmt::format("cannot read {}: the spec file {}", options.spec_path, error));
  }
  require_regular_binary(options.binary_path);
  std::string binary_id = read_build_id_file(options.binary_path, error);
  if (!error.empty())
    throw UserError("binary-unreadable", fmt::format("{}: {}", options.binary_path, error));
  if (binary_id.empty()) {
    // No build id to trust: key on the contents themselves.
    std::string bytes;
    if (!read_whole(options.binary_path, bytes))
      throw UserError("binary-unreadable",
                      fmt::format("cannot read {}: {}", options.binary_path, std::strerror(errno)));
    binary_id = "sha256:" + Sha256::hex(bytes);
  }
  // The runtime by its linker build id (a note: cheap to read), else by its bytes. A missing
  // runtime is not an error here: a cached tracer does not need it, and a miss reports it.
  std::string runtime_digest = read_build_id_file(options.runtime_path, error);
  if (runtime_digest.empty()) {
    std::string runtime;
    if (read_whole(options.runtime_path, runtime))
      runtime_digest = "sha256:" + Sha256::hex(runtime);
  }

  fs::path root = options.cache_root.empty() ? default_cache_root() : options.cache_root;
  fs::path dir = root / cache_key(spec, binary_id, WEAVE_VERSION, runtime_digest);
  fs::path tracer = dir / "tracer";
  std::error_code ec;
  private_dir(root);
  auto give = [&](int fd) {
    if (tracer_fd)
      *tracer_fd = fd;
    else
      close(fd);
    return tracer.string();
  };
  if (int fd = open_checked_tracer(dir); fd >= 0) {
    fs::last_write_time(dir, fs::file_time_type::clock::now(), ec); // most recently used
    std::cerr << "weave: using cached tracer " << dir.string() << "\n";
    return give(fd);
  }
  auto start = std::chrono::steady_clock::now();
  build(dir.string()); // atomic: the directory appears complete or not at all
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << fmt::format("weave: built tracer into {} ({:.2f} s)\n", dir.string(), seconds);
  prune(root, dir);
  int fd = open_checked_tracer(dir);
  if (fd < 0)
    throw UserError("write-failed", fmt::format("the tracer built into {} is not there", dir.string()));
  return give(fd);
}

std::vector<std::string> tracer_argv(const std::string &tracer, const RunOptions &options) {
  std::vector<std::string> argv = {tracer};
  if (!options.format.empty()) {
    argv.push_back("--format");
    argv.push_back(options.format);
  }
  if (!options.output.empty()) {
    argv.push_back("-o");
    argv.push_back(options.output);
  }
  argv.insert(argv.end(), options.tracer_flags.begin(), options.tracer_flags.end());
  const bool own_binary =
      std::find(options.tracer_flags.begin(), options.tracer_flags.end(), "--binary") != options.tracer_flags.end();
  if (options.pid > 0) {
    argv.push_back("--pid");
    argv.push_back(std::to_string(options.pid));
    if (!own_binary) {
      argv.push_back("--binary");
      argv.push_back(fs::absolute(options.binary_path).string());
    }
  } else if (options.start_program) {
    // The tracer looks a command without a slash up in $PATH; the user meant this file.
    std::string program = options.binary_path;
    if (program.find('/') == std::string::npos)
      program = "./" + program;
    argv.push_back("--");
    argv.push_back(program);
    argv.insert(argv.end(), options.program_args.begin(), options.program_args.end());
  } else if (!own_binary) {
    // The manifest records the path as given, relative to where the cache entry was first built.
    argv.push_back("--binary");
    argv.push_back(fs::absolute(options.binary_path).string());
  }
  return argv;
}

void run_cached(const RunOptions &options,
                const std::function<void(const std::string &out_dir)> &build,
                const std::function<void()> &ready) {
  int fd = -1;
  std::string tracer = cached_tracer(options, build, &fd);
  if (ready)
    ready();
  std::vector<std::string> argv = tracer_argv(tracer, options);
  std::vector<char *> args;
  for (auto &arg : argv)
    args.push_back(arg.data());
  args.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  // The descriptor that was checked is the file that runs: a tracer swapped in after the check is
  // never executed.
  fexecve(fd, args.data(), environ);
  throw UserError("exec-failed", fmt::format("cannot run {}: {}", tracer, std::strerror(errno)));
}

} // namespace weave
