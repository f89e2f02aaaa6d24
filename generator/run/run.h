// `weave run`: build a tracer into a cache and run it at once, like bpftrace.
//
// The cache entry is a whole output directory (the same files `weave build` writes), named by
//   sha256(spec bytes, the binary's build id, weave's version, the tracer runtime's build id)
// under $XDG_CACHE_HOME/weave (else ~/.cache/weave). A second run with the same inputs finds the
// directory and skips generation and clang entirely. The runtime's (GNU, linker-made) build id is
// part of the key so a rebuilt weave-tracer of the same version is not served stale.
//
// SHA-256 is written here (FIPS 180-4) rather than taken from a library: none of weave's Debian
// dependencies has it (libelf, libdw, libbpf, nlohmann-json, fmt do not), and OpenSSL, nettle or
// libgcrypt would be one more -dev package to install, also on offline build machines, for
// hashing a few kilobytes. It is checked against the FIPS 180-4 / NIST CAVP vectors in
// tests/unit/test_check.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace weave {

// Sha256 hashes a byte stream: update() any number of times, then digest() once.
class Sha256 {
public:
  Sha256();
  void update(std::string_view data);
  std::array<uint8_t, 32> digest();
  std::string hex_digest(); // lowercase, 64 characters

  static std::string hex(std::string_view data) {
    Sha256 h;
    h.update(data);
    return h.hex_digest();
  }

private:
  void block(const uint8_t *p);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t length_ = 0; // bytes
};

struct RunOptions {
  std::string spec_path;
  std::string spec_text;                 // the spec itself, when it is in memory (weave trace); else read from spec_path
  std::string binary_path;
  std::vector<std::string> program_args; // after --
  bool start_program = false;            // `--` was given: start the binary with program_args
  std::string format;                    // tracer --format, when given
  std::string output;                    // tracer -o: events to this file, when given
  int pid = 0;                           // tracer --pid, when given
  std::vector<std::string> tracer_flags; // other tracer options, as given: "--otlp", "URL", ...
  std::string runtime_path;              // the weave-tracer runtime (part of the key)
  std::string cache_root;                // default: default_cache_root()
};

// What `weave trace BIN FUNC...` asks for, for the first five minutes without a spec file: one
// probe per function name or glob, with every parameter (or the -c captures) and the results at
// every RET (args: all, return: true), and what the other options add.
struct QuickSpecArgs {
  std::vector<std::string> functions;
  std::vector<std::string> captures; // -c: instead of every parameter
  std::string when;                  // --when
  std::string when_return;           // --when-return
  std::string min_duration;          // --min-duration
  int stack = 0;                     // --stack N (0: none)
  bool inlined = false;              // --inlined: also the inlined copies a glob matches
  bool contents = false;             // --contents: interfaces shown by their dynamic values
  bool values = true;                // false: calls and durations only (a stripped binary, nothing declared)
};

// Where a value of the quick spec came from: the text at line:column (1-based, the first character
// of the value inside its quotes) is `value`, as one command-line argument gave it.
struct QuickSpecOrigin {
  int line = 0;
  int column = 0;
  std::string value;
};

struct QuickSpec {
  std::string text; // YAML, printed so that it can be saved and edited
  std::vector<QuickSpecOrigin> origins;
};

QuickSpec quick_spec(const QuickSpecArgs &args);

// Writes a quick spec where `weave run` can key its cache on it, CACHE_ROOT/specs/SHA256.yaml (the
// same text, the same file), and returns that path. Throws UserError [write-failed].
std::string save_quick_spec(const std::string &text, const std::string &cache_root);

// The binary must be a regular file before anything reads it: a FIFO would block the read forever.
// Throws UserError [binary-unreadable].
void require_regular_binary(const std::string &path);

// $XDG_CACHE_HOME/weave when set (and absolute, as the XDG spec requires), else $HOME/.cache/weave.
// Throws UserError [no-cache-dir] when neither variable helps.
std::string default_cache_root();

// The cache key: lowercase hex SHA-256 over the parts, each preceded by its length so no two
// different inputs give the same byte stream.
std::string cache_key(std::string_view spec_bytes, std::string_view binary_id,
                      std::string_view weave_version, std::string_view runtime_digest);

// Finds or builds the cached output directory for these inputs and returns the tracer's path.
// `build(out_dir)` runs the whole `weave build` pipeline into out_dir; it is called only on a miss.
// Says on stderr which it was ("weave: using cached tracer DIR"). Throws UserError.
//
// The cache is private: its root is created 0700 (an existing one owned by the user is made 0700;
// one owned by anyone else is refused, [cache-unsafe]). A tracer is used only when its entry is a
// real directory and the tracer a regular executable file, both owned by the user running weave
// and writable by no one else; a planted or tampered entry is refused ([cache-unsafe]), never
// run. With tracer_fd, the checked tracer's descriptor (O_CLOEXEC) is returned there, for fexecve.
std::string cached_tracer(const RunOptions &options,
                          const std::function<void(const std::string &out_dir)> &build,
                          int *tracer_fd = nullptr);

// The tracer's command line: `tracer [--format F] -- BINARY ARGS...`, `tracer --pid N`, or, with
// neither, `tracer --binary ABSOLUTE-BINARY` (every process running it). A --binary among
// tracer_flags is the user's, and replaces weave's.
std::vector<std::string> tracer_argv(const std::string &tracer, const RunOptions &options);

// cached_tracer, then execs the tracer in place of weave (its exit status is the traced program's,
// as with `tracer -- CMD`), calling `ready` just before. Returns only by throwing UserError.
[[noreturn]] void run_cached(const RunOptions &options,
                             const std::function<void(const std::string &out_dir)> &build,
                             const std::function<void()> &ready = {});

} // namespace weave
