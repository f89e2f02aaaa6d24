// End to end on real third-party stripped Go binaries of other Go versions: esbuild's release
// executables from the npm registry (the same packages and cache as tests/npm/test_npm_binaries.cpp,
// fetched by tests/npm/fetch.sh). Each release bundles a tiny project (tests/e2e/esbuild/project)
// under a tracer of github.com/evanw/esbuild/internal/fs.(*realFS).ReadFile, whose signature the
// spec declares (the binaries have no symbols and no DWARF) and weave checks against the argument
// size .gopclntab records. Every path ReadFile was called with must be a file of the project, and
// every file of the project must be among them; the return events must carry each file's contents
// and nil errors.
//
// Skipped (exit 77, with the reason) when not root or when the npm registry cannot be reached.
#include "harness.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char *kReadFile = "github.com/evanw/esbuild/internal/fs.(*realFS).ReadFile";

// One esbuild release. ABI0 (Go 1.16 amd64) puts inputs and results on the stack, and .gopclntab's
// args is their total: receiver 8 + path 16 + (string, error) 32 = 56. Under ABIInternal (1.17+)
// args is the spill area of the register inputs only: 8 + 16 = 24, whatever the results.
struct Release {
  const char *spec;
  const char *go_version;
  const char *abi;
  int args;
  const char *probe_spec; // under tests/e2e/esbuild/
  const char *results;    // ReadFile's results as esbuild's source declares them (the spec names them)
};

const Release kReleases[] = {
    {"esbuild-linux-64@0.8.57", "go1.16", "ABI0", 56, "readfile-go116.yaml", "(string, error)"},
    {"esbuild-linux-64@0.14.0", "go1.17.2", "ABIInternal", 24, "readfile.yaml",
     "(contents string, canonicalError error, originalError error)"},
    {"esbuild-linux-64@0.15.18", "go1.19.3", "ABIInternal", 24, "readfile.yaml",
     "(contents string, canonicalError error, originalError error)"},
    {"@esbuild/linux-x64@0.17.19", "go1.20.4", "ABIInternal", 24, "readfile.yaml",
     "(contents string, canonicalError error, originalError error)"},
    {"@esbuild/linux-x64@0.25.0", "go1.23.5", "ABIInternal", 24, "readfile.yaml",
     "(contents string, canonicalError error, originalError error)"},
    {"@esbuild/linux-x64@0.28.2", "go1.26.5", "ABIInternal", 24, "readfile.yaml",
     "(contents string, canonicalError error, originalError error)"},
};

const Release &release(const std::string &spec) {
  for (const Release &r : kReleases)
    if (spec == r.spec)
      return r;
  throw std::runtime_error("no release " + spec);
}

std::string safe_name(std::string text) {
  for (char &c : text)
    if (c == '/' || c == '@')
      c = '_';
  return text;
}

// The esbuild executable of a release, fetched once by tests/npm/fetch.sh into the cache the npm
// test uses ($WEAVE_NPM_CACHE, else BUILD/npm-cache) and extracted into a directory of the calling
// test case's own (ctest may run the cases at once: none replaces a binary another is tracing).
// Exits with 77 when the registry cannot be reached.
std::string fetch(const Release &r, const std::string &group) {
  const char *env = std::getenv("WEAVE_NPM_CACHE");
  if (!env || !*env)
    setenv("WEAVE_NPM_CACHE", (std::string(WEAVE_BINARY_DIR) + "/npm-cache").c_str(), 1);
  std::string dest = std::string(WEAVE_BINARY_DIR) + "/npm-bin/" + group + "/" + safe_name(r.spec);
  auto fetched = e2e::run({"sh", e2e::source("tests/npm/fetch.sh"), r.spec, dest}, 180000);
  if (fetched.status == 1) {
    // With a cold cache, another test case may be writing the same tarball at this moment (fetch.sh
    // checks only that it is non-empty): once more, after it has had time to finish.
    sleep(3);
    fetched = e2e::run({"sh", e2e::source("tests/npm/fetch.sh"), r.spec, dest}, 180000);
  }
  if (fetched.status == 77) {
    std::cout << fetched.err << "SKIPPED: " << r.spec
              << " cannot be fetched: the npm registry is not reachable (see above)" << std::endl;
    std::exit(77);
  }
  INFO(fetched.err);
  REQUIRE_MESSAGE(fetched.status == 0, "tests/npm/fetch.sh " << std::string(r.spec) << " failed");
  REQUIRE(fetched.out == dest + "/esbuild\n");
  return dest + "/esbuild";
}

// A fresh copy of the project: tests/e2e/esbuild/project plus tests/e2e/esbuild/tiny as the package
// node_modules/tiny (kept out of the source tree's own node_modules). Returns its canonical path:
// esbuild resolves symlinks in its working directory, and so in every path it reads.
std::string make_project(const std::string &dir) {
  fs::path project = fs::path(dir) / "project";
  fs::copy(e2e::source("tests/e2e/esbuild/project"), project, fs::copy_options::recursive);
  fs::create_directories(project / "node_modules");
  fs::copy(e2e::source("tests/e2e/esbuild/tiny"), project / "node_modules" / "tiny",
           fs::copy_options::recursive);
  return fs::canonical(project).string();
}

// Runs argv with dir as the working directory (the child inherits it), then comes back.
e2e::Result run_in(const std::string &dir, const std::vector<std::string> &argv) {
  std::string here = fs::current_path().string();
  fs::current_path(dir);
  e2e::Result r;
  try {
    r = e2e::run(argv, 120000);
  } catch (...) {
    fs::current_path(here);
    throw;
  }
  fs::current_path(here);
  return r;
}

std::string join(const std::set<std::string> &items) {
  std::string out;
  for (const auto &item : items)
    out += "\n    " + item;
  return out;
}

e2e::Result weave_build(const std::string &spec_path, const std::string &binary, const std::string &out) {
  return e2e::run({e2e::weave(), "build", spec_path, binary, "-o", out});
}

void trace_release(const Release &r) {
  e2e::require_bpf();
  std::string binary = fetch(r, "e2e-esbuild");
  const std::string release_name = r.spec;
  CAPTURE(release_name);
  std::string dir = e2e::temp_dir("esbuild-" + safe_name(r.spec));

  // .gopclntab's view of the function: which ABI and how many bytes of arguments.
  auto funcs = e2e::run({e2e::weave(), "funcs", binary, kReadFile});
  INFO(funcs.out, funcs.err);
  REQUIRE(funcs.status == 0);
  CHECK(funcs.out.find(std::string(r.abi) + "  args=" + std::to_string(r.args)) != std::string::npos);

  // The tracer, from the declared signature.
  auto built = weave_build(e2e::source("tests/e2e/esbuild/" + std::string(r.probe_spec)), binary, dir + "/out");
  INFO(built.err);
  REQUIRE(built.status == 0);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  CHECK(manifest["target"]["go_version"] == r.go_version);
  for (const auto &p : manifest["probes"])
    CHECK(p["abi"] == r.abi);

  // The project esbuild must read: every file in it.
  std::string project = make_project(dir);
  std::set<std::string> expected;
  std::map<std::string, std::string> contents; // path -> bytes
  for (const auto &entry : fs::recursive_directory_iterator(project)) {
    if (!entry.is_regular_file())
      continue;
    expected.insert(entry.path().string());
    contents[entry.path().string()] = e2e::read_file(entry.path().string());
  }
  REQUIRE(expected.size() == 6);
  // esbuild also looks for package.json, tsconfig.json and jsconfig.json in every directory above the
  // project: such files, when they exist, may be read too (none do on a normal machine).
  std::set<std::string> allowed = expected;
  for (fs::path up = fs::path(project).parent_path();; up = up.parent_path()) {
    for (const char *name : {"package.json", "tsconfig.json", "jsconfig.json"})
      if (fs::is_regular_file(up / name)) {
        allowed.insert((up / name).string());
        contents[(up / name).string()] = e2e::read_file((up / name).string());
      }
    if (up == up.root_path())
      break;
  }

  auto traced = run_in(project, {dir + "/out/tracer", "--format", "json", "--", binary, "entry.js", "--bundle",
                                 "--outfile=out.js"});
  INFO(traced.err);
  REQUIRE(traced.status == 0); // the tracer exits with esbuild's status
  std::string bundle = e2e::read_file(project + "/out.js");
  CHECK(bundle.find("hello, ") != std::string::npos);
  CHECK(bundle.find("tiny-package-marker") != std::string::npos);

  std::set<std::string> paths;
  std::multiset<std::string> read_paths, returned_contents;
  size_t returns = 0, goid_zero = 0, events = 0;
  for (const json &e : e2e::json_lines(traced.out)) {
    if (e["function"] != kReadFile)
      continue;
    ++events;
    goid_zero += e["goid"] == 0;
    CHECK_FALSE(e.contains("faults"));
    CHECK_FALSE(e.contains("truncated"));
    if (e["kind"] == "entry") {
      REQUIRE(e.contains("args"));
      REQUIRE(e["args"].contains("path"));
      REQUIRE(e["args"]["path"].is_string());
      paths.insert(e["args"]["path"].get<std::string>());
      read_paths.insert(e["args"]["path"].get<std::string>());
    } else if (e["kind"] == "return") {
      ++returns;
      REQUIRE(e.contains("results"));
      const json &res = e["results"];
      CAPTURE(res.dump());
      REQUIRE(res.contains("contents"));
      REQUIRE(res["contents"].is_string());
      returned_contents.insert(res["contents"].get<std::string>());
      CHECK((res.contains("err") && res["err"].is_null())); // a nil error interface prints as null
      if (std::string(r.abi) == "ABIInternal")
        CHECK((res.contains("originalError") && res["originalError"].is_null()));
    }
  }
  std::cout << r.spec << " (" << r.go_version << ", " << r.abi << ", args=" << r.args << "): ReadFile"
            << r.results << ": " << events << " events, " << read_paths.size() << " calls, goid "
            << (goid_zero == events ? "0 (not read)" : goid_zero ? "sometimes 0" : "read") << ", "
            << paths.size() << " paths:" << join(paths) << "\n  expected:" << join(expected) << std::endl;

  // Every file of the project was read, and nothing else (but the config files above it).
  for (const auto &path : expected) {
    CAPTURE(path);
    CHECK(paths.count(path) == 1);
  }
  for (const auto &path : paths) {
    CAPTURE(path);
    CHECK(allowed.count(path) == 1);
  }
  if (allowed.size() == expected.size())
    CHECK(paths == expected);

  // One return per call, and the results are the files' bytes: the multiset of returned contents is
  // the multiset of the contents of the paths the calls were given.
  CHECK(returns == read_paths.size());
  std::multiset<std::string> want_contents;
  for (const auto &path : read_paths)
    if (contents.count(path))
      want_contents.insert(contents[path]);
  CHECK(returned_contents == want_contents);

  // g is in R14 under ABIInternal; ABI0 code (Go 1.16) keeps g in TLS, at FS base - 8, which the
  // probes read through the task's fsbase: goroutine ids are known either way.
  CHECK(goid_zero == 0);
}

} // namespace

TEST_CASE("esbuild 0.8.57 (Go 1.16, ABI0 stack): ReadFile paths and results of a bundle") {
  trace_release(release("esbuild-linux-64@0.8.57"));
}

TEST_CASE("esbuild 0.14.0 (Go 1.17, first register ABI): ReadFile paths and results of a bundle") {
  trace_release(release("esbuild-linux-64@0.14.0"));
}

TEST_CASE("esbuild 0.15.18 (Go 1.19): ReadFile paths and results of a bundle") {
  trace_release(release("esbuild-linux-64@0.15.18"));
}

TEST_CASE("esbuild 0.17.19 (Go 1.20, register ABI): ReadFile paths and results of a bundle") {
  trace_release(release("@esbuild/linux-x64@0.17.19"));
}

TEST_CASE("esbuild 0.25.0 (Go 1.23): ReadFile paths and results of a bundle") {
  trace_release(release("@esbuild/linux-x64@0.25.0"));
}

TEST_CASE("esbuild 0.28.2 (Go 1.26): ReadFile paths and results of a bundle") {
  trace_release(release("@esbuild/linux-x64@0.28.2"));
}

TEST_CASE("esbuild: declared ReadFile signatures that do not add up to .gopclntab's size are refused") {
  // No BPF here: weave refuses before compiling anything.
  for (const Release &r : kReleases) {
    std::string binary = fetch(r, "e2e-esbuild-mismatch");
    const std::string release_name = r.spec;
    CAPTURE(release_name);
    std::string dir = e2e::temp_dir("esbuild-mismatch-" + safe_name(r.spec));
    auto refused = [&](const std::string &name, const std::string &params, const std::string &results,
                       int declared) {
      std::string spec_path = dir + "/" + name + ".yaml";
      std::ofstream(spec_path) << "probes:\n  - function: " << kReadFile << "\n    params: " << params
                               << "\n    results: " << results << "\n    capture: [path]\n";
      auto built = weave_build(spec_path, binary, dir + "/" + name);
      INFO(built.err);
      CHECK(built.status == 1);
      CHECK(built.err.find("error[signature-mismatch]") != std::string::npos);
      CHECK(built.err.find("take " + std::to_string(declared) + " bytes of argument space, but the compiler recorded " +
                           std::to_string(r.args)) != std::string::npos);
      CHECK_FALSE(fs::exists(dir + "/" + name));
    };
    bool abi0 = std::string(r.abi) == "ABI0";
    // Without the receiver: 8 bytes short on every ABI (ABI0 counts the results too).
    refused("no-receiver", "[{name: path, type: string}]", "[{name: contents, type: string}, {name: err, type: error}]",
            abi0 ? 48 : 16);
    if (abi0) // Go 1.16's esbuild returns (string, error): a third result is 16 bytes too many.
      refused("three-results", "[{name: fs, type: unsafe.Pointer}, {name: path, type: string}]",
              "[{name: contents, type: string}, {name: err, type: error}, {name: originalError, type: error}]", 72);
  }
}

namespace {

// esbuild bundling a project whose entry imports ./bad.js, a symlink to /proc/self/mem: esbuild lists
// it as a file, and reading it fails with EIO. Traced by DIR/out/tracer, JSON to stdout.
e2e::Result bundle_unreadable_import(const std::string &dir, const std::string &binary) {
  fs::create_directories(dir + "/project");
  std::ofstream(dir + "/project/entry.js") << "import x from './bad.js'; console.log(x)\n";
  fs::create_symlink("/proc/self/mem", dir + "/project/bad.js");
  return run_in(dir + "/project", {dir + "/out/tracer", "--format", "json", "--", binary, "entry.js", "--bundle",
                                   "--outfile=out.js"});
}

} // namespace

TEST_CASE("esbuild, Go 1.16 to 1.26: a failed ReadFile's error results are named from the type descriptors") {
  // The project imports ./bad.js, a symlink to /proc/self/mem: esbuild lists it as a file, and
  // reading it fails with EIO (esbuild: `Cannot read file "...mem": input/output error`). Its
  // source: ReadFile returns the error unwrapped from its *fs.PathError (a syscall.Errno), and since
  // 0.14 the original *fs.PathError as well.
  // These binaries have no DWARF: the names come from moduledata.types, spelled as DWARF would.
  e2e::require_bpf();
  for (const Release &r : kReleases) {
    std::string binary = fetch(r, "e2e-esbuild-errors");
    const std::string release_name = r.spec;
    CAPTURE(release_name);
    std::string dir = e2e::temp_dir("esbuild-errors-" + safe_name(r.spec));
    auto built = weave_build(e2e::source("tests/e2e/esbuild/" + std::string(r.probe_spec)), binary, dir + "/out");
    INFO(built.err);
    REQUIRE(built.status == 0);
    auto traced = bundle_unreadable_import(dir, binary);
    INFO(traced.err);
    CHECK(traced.status == 1); // esbuild's own status: the build failed
    CHECK(traced.err.find("input/output error") != std::string::npos);
    size_t failed = 0, succeeded = 0;
    for (const json &e : e2e::json_lines(traced.out)) {
      if (e["function"] != kReadFile || e["kind"] != "return")
        continue;
      const json &res = e["results"];
      CAPTURE(res.dump());
      if (res["err"].is_null()) {
        ++succeeded; // entry.js
        continue;
      }
      ++failed;
      CHECK(res["contents"] == "");
      CHECK(res["err"] == json{{"type", "syscall.Errno"}, {"value", 5}}); // EIO
      if (std::string(r.abi) != "ABI0") {
        REQUIRE(res["originalError"].is_object());
        CHECK(res["originalError"]["type"] == "*io/fs.PathError");
        CHECK(res["originalError"].contains("value")); // a pointer: its address
      }
    }
    CHECK(failed == 1);
    CHECK(succeeded >= 1);
  }
}

TEST_CASE("esbuild, Go 1.17 to 1.26, stripped: contents shows the *io/fs.PathError ReadFile returns, field by field") {
  // The same failing read, with contents: true. These binaries have no DWARF and no .symtab: the
  // candidate types come from moduledata.itablinks and their layouts from the type descriptors.
  // ReadFile's originalError is the *fs.PathError os.ReadFile returned: the read of the path
  // ReadFile was given (bad.js resolved: opening /proc/self/mem works; reading it at offset 0 is EIO).
  e2e::require_bpf();
  for (const Release &r : kReleases) {
    if (std::string(r.abi) == "ABI0")
      continue; // Go 1.16's ReadFile returns the syscall.Errno alone: no struct behind it
    std::string binary = fetch(r, "e2e-esbuild-contents");
    const std::string release_name = r.spec;
    CAPTURE(release_name);
    std::string dir = e2e::temp_dir("esbuild-contents-" + safe_name(r.spec));
    std::string spec = e2e::read_file(e2e::source("tests/e2e/esbuild/" + std::string(r.probe_spec)));
    size_t at = spec.find("    return: true\n");
    REQUIRE(at != std::string::npos);
    // Named first: an error's candidates are many here (crypto/tls's, encoding/asn1's, fmt's, ...)
    // and a capture's fields hold the first few by name, not always io/fs's.
    spec.insert(at + 17, "    contents: true\n    contents_types: ['*io/fs.PathError']\n");
    std::ofstream(dir + "/spec.yaml") << spec;
    auto built = weave_build(dir + "/spec.yaml", binary, dir + "/out");
    INFO(built.err);
    REQUIRE(built.status == 0);
    auto traced = bundle_unreadable_import(dir, binary);
    INFO(traced.err);
    CHECK(traced.status == 1);
    std::map<uint64_t, std::string> path_of; // call id -> the path its entry was given
    size_t failed = 0;
    for (const json &e : e2e::json_lines(traced.out)) {
      if (e["function"] != kReadFile)
        continue;
      CAPTURE(e.dump());
      REQUIRE(e.contains("call"));
      if (e["kind"] == "entry") {
        path_of[e["call"].get<uint64_t>()] = e["args"]["path"].get<std::string>();
        continue;
      }
      const json &res = e["results"];
      if (res["err"].is_null())
        continue;
      ++failed;
      REQUIRE(path_of.count(e["call"].get<uint64_t>()));
      const std::string &path = path_of[e["call"].get<uint64_t>()];
      CHECK(res["err"] == json{{"type", "syscall.Errno"}, {"value", 5}});
      const json &original = res["originalError"];
      REQUIRE(original.is_object());
      CHECK(original["type"] == "*io/fs.PathError");
      REQUIRE(original.contains("value"));
      const json &v = original["value"];
      CHECK(v.size() == 3);
      CHECK(v["Op"] == "read");
      CHECK(v["Path"] == path);
      CHECK(v["Err"]["type"] == "syscall.Errno");
    }
    CHECK(failed == 1);
  }
}

TEST_CASE("esbuild 0.11.23 (Go 1.16): one entry per call of a function with a frame over 4 KB") {
  // bundler.parseFile's 9.5 KB frame has Go 1.16's big-frame prologue (StackPreempt compare, JEQ,
  // then the frame-size compare, JLS). It runs on fresh goroutines, whose stacks must grow first:
  // a probe at its first instruction fires once before morestack and once after. weave places it
  // after both branches (0x794091, where objdump shows the body start).
  e2e::require_bpf();
  const Release r{"esbuild-linux-64@0.11.23", "go1.16", "ABI0", 960, "", ""};
  std::string binary = fetch(r, "e2e-esbuild-bigframe");
  std::string dir = e2e::temp_dir("esbuild-bigframe");
  std::string spec = dir + "/spec.yaml";
  // The whole argument area as one opaque array: only the call's entry and return matter here.
  std::ofstream(spec) << "probes:\n  - function: github.com/evanw/esbuild/internal/bundler.parseFile\n"
                         "    params: [{name: args, type: {array: uint8, len: 960}}]\n    return: true\n";
  auto built = weave_build(spec, binary, dir + "/out");
  INFO(built.err);
  REQUIRE(built.status == 0);
  json manifest = json::parse(e2e::read_file(dir + "/out/probes.json"));
  std::set<std::string> entries_at;
  for (const auto &p : manifest["probes"])
    for (const auto &a : p["attach"])
      if (a["kind"] == "entry")
        entries_at.insert(a["vaddr"].get<std::string>());
  CHECK(entries_at == std::set<std::string>{"0x794091"});
  std::string project = make_project(dir);
  auto traced = run_in(project, {dir + "/out/tracer", "--format", "json", "--", binary, "entry.js", "--bundle",
                                 "--outfile=out.js"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::map<long long, int> entries, returns;
  for (const json &e : e2e::json_lines(traced.out)) {
    CAPTURE(e.dump());
    (e["kind"] == "entry" ? entries : returns)[e["goid"].get<long long>()]++;
    if (e["kind"] == "return")
      CHECK(e.contains("duration_ns"));
  }
  CHECK(entries.size() >= 4); // the project's four modules, each parsed on a goroutine of its own
  CHECK(entries == returns);
}
