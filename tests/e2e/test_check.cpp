// End to end for `weave check`: a directory built elsewhere passes, drift is found and explained
// (which probe, which offset, which field), and errors that are not drift say so with their own
// exit code. Exit codes: 0 up to date, 1 drift, 2 usage, 3 cannot regenerate (check/check.h).
#include "harness.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

const std::string kSpec = "tests/check/spec.yaml";

// Copies `fixture` to dir/svc and runs weave there with `./svc`, the way a team would commit it:
// the binary's path is recorded in the outputs, so build and check use the same relative path.
e2e::Result weave_in(const std::string &dir, const std::string &fixture,
                     std::vector<std::string> args) {
  fs::create_directories(dir);
  fs::copy_file(e2e::fixture(fixture), dir + "/svc", fs::copy_options::overwrite_existing);
  fs::current_path(dir);
  std::vector<std::string> argv = {e2e::weave()};
  argv.insert(argv.end(), args.begin(), args.end());
  return e2e::run(argv);
}

e2e::Result build_in(const std::string &dir, const std::string &fixture,
                     const std::string &spec = kSpec) {
  auto r = weave_in(dir, fixture, {"build", e2e::source(spec), "./svc", "-o", "weave-out"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  return r;
}

e2e::Result check_in(const std::string &dir, const std::string &fixture, const std::string &tree,
                     const std::string &spec = kSpec) {
  return weave_in(dir, fixture, {"check", e2e::source(spec), "./svc", tree});
}

bool contains(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE("a tree built in another directory checks clean, and so does every file in it") {
  std::string root = e2e::temp_dir("check-clean");
  build_in(root + "/a", "check_v1");
  build_in(root + "/b/nested", "check_v1");
  // Byte-identical trees (the property test_build.cpp checks for the fixture)...
  for (const char *file : {"probes.bpf.c", "probes.h", "probes.json", "Makefile.bpf", "weave_bpf.h",
                           "weave_event.h", "probes.bpf.o", "tracer"})
    CHECK_MESSAGE(e2e::read_file(root + "/a/weave-out/" + file) ==
                      e2e::read_file(root + "/b/nested/weave-out/" + file),
                  file);
  // ...so each directory's check accepts the other's tree.
  auto r = check_in(root + "/b/nested", "check_v1", root + "/a/weave-out");
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "is up to date (7 files compared)")); // six text files and the tracer
  r = check_in(root + "/a", "check_v1", root + "/b/nested/weave-out");
  CHECK(r.status == 0);
  // The CI layout: the build products left out of the commit are not needed.
  fs::remove(root + "/a/weave-out/probes.bpf.o");
  fs::remove(root + "/a/weave-out/tracer");
  r = check_in(root + "/b/nested", "check_v1", root + "/a/weave-out");
  CHECK(r.status == 0);
  CHECK(contains(r.out, "(6 files compared)"));
}

TEST_CASE("a struct field that moved is drift, and the report names the field and offset") {
  std::string root = e2e::temp_dir("check-field");
  build_in(root + "/committed", "check_v1");
  // v2's Header has a new string field before Port: Port moves from +0 to +16, Host from +8 to +24.
  auto r = check_in(root + "/ci", "check_v2", root + "/committed/weave-out");
  INFO(r.out << r.err);
  CHECK(r.status == 1);
  CHECK(contains(r.out, "has drifted"));
  CHECK(contains(r.out,
                 "probe main.(*Server).Handle: capture req.Header.Port: field offset 0 -> 16 "
                 "(load 2 of 2)"));
  CHECK(contains(r.out,
                 "probe main.(*Server).Handle: capture req.Header.Host: field offset 8 -> 24 "
                 "(load 2 of 2)"));
  CHECK(contains(r.out, "  target build id "));
  // The C file as a unified diff, checked in -> regenerated.
  CHECK(contains(r.out, "--- " + root +
                            "/committed/weave-out/probes.bpf.c (checked in)\n"
                            "+++ probes.bpf.c (regenerated)\n@@ -"));
  size_t hunk = r.out.find("\n@@ -");
  CHECK(r.out.find("\n-", hunk) != std::string::npos);
  CHECK(r.out.find("\n+", hunk) != std::string::npos);
  // The tracer carries the checked-in probes.json: consistent with the tree, a note and not drift.
  CHECK(contains(r.out, "\ntracer: carries the checked-in probes.json, so `weave build` rebuilds it"));
  CHECK(contains(r.out, "has drifted: 2 of 7 files differ")); // probes.bpf.c and probes.json
  CHECK(contains(r.out, "to update it: weave build"));
  // Files that did not change are not mentioned.
  CHECK_FALSE(contains(r.out, "weave_bpf.h"));
  CHECK_FALSE(contains(r.out, "Makefile.bpf"));
}

TEST_CASE("another binary with the same function: the attach offset moved") {
  std::string root = e2e::temp_dir("check-offset");
  build_in(root + "/committed", "hello", "examples/hello/spec.yaml");
  auto r =
      check_in(root + "/ci", "fixture", root + "/committed/weave-out", "examples/hello/spec.yaml");
  INFO(r.out << r.err);
  CHECK(r.status == 1);
  CHECK(contains(r.out, "probe main.(*Server).Handle: entry file offset 0x"));
  CHECK(contains(r.out, "(vaddr 0x"));
}

TEST_CASE("a spec that gained and lost probes: added and removed by name") {
  std::string root = e2e::temp_dir("check-probes");
  std::ofstream(root + "/old.yaml") << "probes:\n  - function: main.Ints\n    capture: [a]\n"
                                       "  - function: main.Nested\n    capture: [r.Size]\n";
  std::ofstream(root + "/new.yaml") << "probes:\n  - function: main.Nested\n    capture: [r.Size]\n"
                                       "  - function: main.Strings\n    capture: [s]\n";
  auto built =
      weave_in(root + "/dir", "fixture", {"build", root + "/old.yaml", "./svc", "-o", "out"});
  REQUIRE(built.status == 0);
  auto r = weave_in(root + "/dir", "fixture", {"check", root + "/new.yaml", "./svc", "out"});
  INFO(r.out);
  CHECK(r.status == 1);
  CHECK(contains(r.out, "  probe main.Ints removed\n"));
  CHECK(contains(r.out, "  probe main.Strings added\n"));
  CHECK(contains(r.out, "  probe main.Nested: id 1 -> 0\n"));
}

TEST_CASE("removing return: true is one line: the return event removed") {
  std::string root = e2e::temp_dir("check-return");
  std::ofstream(root + "/with.yaml")
      << "probes:\n  - function: main.Nested\n    capture: [r.Size]\n    return: true\n";
  std::ofstream(root + "/without.yaml") << "probes:\n  - function: main.Nested\n    capture: [r.Size]\n";
  auto built = weave_in(root + "/dir", "fixture", {"build", root + "/with.yaml", "./svc", "-o", "out"});
  REQUIRE(built.status == 0);
  auto r = weave_in(root + "/dir", "fixture", {"check", root + "/without.yaml", "./svc", "out"});
  INFO(r.out);
  CHECK(r.status == 1);
  size_t at = r.out.find("\nprobes.json:\n");
  REQUIRE(at != std::string::npos);
  std::string section = r.out.substr(at + 1, r.out.find("\n\n", at + 1) - at - 1);
  CHECK(section == "probes.json:\n  probe main.Nested: return event removed");
  CHECK_FALSE(contains(r.out, "kind return -> entry"));
  // And back: the return event added, in one line too.
  built = weave_in(root + "/dir", "fixture", {"build", root + "/without.yaml", "./svc", "-o", "out"});
  REQUIRE(built.status == 0);
  r = weave_in(root + "/dir", "fixture", {"check", root + "/with.yaml", "./svc", "out"});
  CHECK(contains(r.out, "\nprobes.json:\n  probe main.Nested: return event added\n\n"));
}

TEST_CASE("missing files and a missing directory are drift") {
  std::string root = e2e::temp_dir("check-missing");
  build_in(root + "/a", "check_v1");
  fs::remove(root + "/a/weave-out/probes.h");
  auto r = check_in(root + "/a", "check_v1", "weave-out");
  INFO(r.out);
  CHECK(r.status == 1);
  CHECK(contains(r.out, "1 of 7 files differ, 1 missing"));
  CHECK(contains(r.out, "\nprobes.h: missing\n"));

  r = check_in(root + "/a", "check_v1", "no-such-dir");
  CHECK(r.status == 1);
  CHECK(contains(r.out, "6 of 6 files differ, 6 missing"));
}

TEST_CASE("errors that are not drift: usage is 2, a failed regeneration is 3, never 0 or 1") {
  std::string root = e2e::temp_dir("check-errors");
  build_in(root + "/a", "check_v1");
  auto usage = weave_in(root + "/a", "check_v1", {"check", e2e::source(kSpec), "./svc"});
  CHECK(usage.status == 2);
  CHECK(contains(usage.err, "dir is required"));

  std::ofstream(root + "/bad.yaml") << "probes:\n  - function: main.(*Server).Handel\n";
  auto bad = weave_in(root + "/a", "check_v1", {"check", root + "/bad.yaml", "./svc", "weave-out"});
  INFO(bad.err);
  CHECK(bad.status == 3);
  CHECK(contains(bad.err, "error[unknown-function]"));
  CHECK(contains(bad.err, "nothing was compared"));
  CHECK(bad.out.empty());

  auto not_go =
      weave_in(root + "/a", "check_v1", {"check", e2e::source(kSpec), "/bin/true", "weave-out"});
  CHECK(not_go.status == 3);
  CHECK(contains(not_go.err, "error[not-go]"));
}

namespace {

// `path` with the first `from` in it replaced by `to` (the same length: offsets stay as they are).
void patch_file(const std::string &path, const std::string &from, const std::string &to) {
  REQUIRE(from.size() == to.size());
  std::string bytes = e2e::read_file(path);
  size_t at = bytes.find(from);
  REQUIRE(at != std::string::npos);
  bytes.replace(at, from.size(), to);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

TEST_CASE("a runtime that is not weave's own tracer runtime is refused, and check notices a foreign tracer") {
  // WEAVE_RUNTIME=/bin/ls was accepted: the "tracer" written was ls with the probes appended, and
  // weave check called that directory up to date.
  std::string root = e2e::temp_dir("check-runtime");
  std::string runtime = std::string(WEAVE_BINARY_DIR) + "/weave-tracer";
  std::string note = "weave-tracer " WEAVE_VERSION " amd64";
  // ls, by --runtime and by WEAVE_RUNTIME: nothing written.
  for (bool by_env : {false, true}) {
    CAPTURE(by_env);
    std::vector<std::string> argv = {"env", "WEAVE_RUNTIME=/bin/ls", e2e::weave(), "build", e2e::source(kSpec),
                                     "./svc", "-o", "weave-out"};
    if (!by_env)
      argv = {e2e::weave(), "build", e2e::source(kSpec), "./svc", "-o", "weave-out", "--runtime", "/bin/ls"};
    fs::create_directories(root + "/ls");
    fs::copy_file(e2e::fixture("check_v1"), root + "/ls/svc", fs::copy_options::overwrite_existing);
    fs::current_path(root + "/ls");
    auto r = e2e::run(argv);
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(contains(r.err, "error[runtime-foreign]"));
    CHECK(contains(r.err, "/bin/ls is not a weave tracer runtime"));
    CHECK_FALSE(fs::exists(root + "/ls/weave-out"));
  }
  // A weave runtime of another version: refused, naming both.
  fs::create_directories(root + "/old");
  fs::copy_file(runtime, root + "/old/weave-tracer");
  patch_file(root + "/old/weave-tracer", note, "weave-tracer 9.9.9 amd64");
  auto old = weave_in(root + "/old", "check_v1",
                      {"build", e2e::source(kSpec), "./svc", "-o", "weave-out", "--runtime", root + "/old/weave-tracer"});
  INFO(old.err);
  CHECK(old.status == 1);
  CHECK(contains(old.err, "is weave-tracer 9.9.9 amd64, not " + note));

  // A tree whose tracer carries the right probes on something that is not weave's runtime: drift.
  build_in(root + "/tree", "check_v1");
  auto clean = check_in(root + "/tree", "check_v1", "weave-out");
  CHECK(clean.status == 0);
  patch_file(root + "/tree/weave-out/tracer", note, "weave-tracer 9.9.9 amd64");
  auto r = check_in(root + "/tree", "check_v1", "weave-out");
  INFO(r.out);
  CHECK(r.status == 1);
  CHECK(contains(r.out, "the tracer is weave-tracer 9.9.9 amd64, not " + note));
  // No note at all (as ls with the probes appended): its owner's name is the note's first bytes.
  build_in(root + "/tree", "check_v1");
  std::string bytes = e2e::read_file(root + "/tree/weave-out/tracer");
  size_t at = bytes.find(note);
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.compare(at - 8, 5, "weave") == 0);
  bytes[at - 8] = 'x';
  std::ofstream(root + "/tree/weave-out/tracer", std::ios::binary | std::ios::trunc) << bytes;
  r = check_in(root + "/tree", "check_v1", "weave-out");
  CHECK(r.status == 1);
  CHECK(contains(r.out, "the tracer is not a weave tracer runtime (it has no weave note)"));
}
