// End to end for `weave build` itself: byte-stable outputs, a Makefile.bpf that rebuilds the object
// with clang alone, --timings, and clear errors (with nothing written) for every kind of bad input.
#include "harness.h"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <sys/stat.h>
#include <fstream>
#include <regex>
#include <map>

namespace fs = std::filesystem;

namespace {

const char *kOutputFiles[] = {"probes.bpf.c", "probes.h",     "weave_bpf.h", "weave_event.h",
                              "Makefile.bpf", "probes.json", "probes.bpf.o", "tracer"};

void write(const std::string &path, const std::string &text) { std::ofstream(path) << text; }

// Runs weave on a spec written inline; expects failure with `id` and the `needles` in stderr, and
// no output directory.
void expect_error(const std::string &name, const std::string &spec_text, const std::string &binary,
                  const std::string &id, std::vector<std::string> needles,
                  std::vector<std::string> extra_args = {}) {
  std::string dir = e2e::temp_dir("error-" + name);
  std::string spec = dir + "/spec.yaml";
  write(spec, spec_text);
  std::vector<std::string> argv = {e2e::weave(), spec, binary, "-o", dir + "/out"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  auto r = e2e::run(argv);
  CAPTURE(name);
  CAPTURE(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("error[" + id + "]") != std::string::npos);
  for (const auto &needle : needles)
    CHECK_MESSAGE(r.err.find(needle) != std::string::npos, needle);
  CHECK_FALSE(fs::exists(dir + "/out"));
  // Nor any temporary directory left beside it.
  for (const auto &entry : fs::directory_iterator(dir))
    CHECK_MESSAGE(entry.path().filename() == "spec.yaml", entry.path().string());
}

} // namespace

TEST_CASE("two builds in different directories give byte-identical files") {
  std::string a = e2e::temp_dir("stable-a"), b = e2e::temp_dir("stable-b/nested");
  // Run from different working directories, with the same relative binary path.
  fs::copy_file(e2e::fixture("fixture"), a + "/fixture");
  fs::copy_file(e2e::fixture("fixture"), b + "/fixture");
  for (const auto &dir : {a, b}) {
    fs::current_path(dir);
    auto r = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), "./fixture"});
    INFO(r.err);
    REQUIRE(r.status == 0);
  }
  for (const char *file : kOutputFiles) {
    CAPTURE(file);
    std::string first = e2e::read_file(a + "/weave-out/" + file);
    CHECK(!first.empty());
    CHECK(first == e2e::read_file(b + "/weave-out/" + file));
  }
  // Nothing machine-specific leaks into the text outputs.
  for (const char *file : {"probes.bpf.c", "probes.h", "probes.json", "Makefile.bpf"})
    CHECK(e2e::read_file(a + "/weave-out/" + file).find("e2e-tmp") == std::string::npos);
  CHECK(e2e::read_file(a + "/weave-out/probes.bpf.o").find("e2e-tmp") == std::string::npos);
}

TEST_CASE("Makefile.bpf rebuilds the same object with clang alone") {
  std::string dir = e2e::temp_dir("makefile");
  auto r = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o", dir + "/out"});
  REQUIRE(r.status == 0);
  std::string built = e2e::read_file(dir + "/out/probes.bpf.o");
  fs::remove(dir + "/out/probes.bpf.o");
  auto make = e2e::run({"make", "-C", dir + "/out", "-f", "Makefile.bpf"});
  INFO(make.out << make.err);
  REQUIRE(make.status == 0);
  CHECK(e2e::read_file(dir + "/out/probes.bpf.o") == built);
}

TEST_CASE("--timings: every stage of the build, the time without clang, and peak memory") {
  std::string dir = e2e::temp_dir("timings");
  auto r = e2e::run({e2e::weave(), "build", "--timings", e2e::source("tests/e2e/fixture.yaml"),
                     e2e::fixture("fixture"), "-o", dir + "/out"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::smatch m;
  REQUIRE(std::regex_search(
      r.err, m,
      std::regex(R"(weave: spec [0-9.]+ s, binary [0-9.]+ s, dwarf [0-9.]+ s, pclntab [0-9.]+ s, plan [0-9.]+ s, )"
                 R"(codegen [0-9.]+ s, write [0-9.]+ s, clang ([0-9.]+) s, assemble [0-9.]+ s\n)"
                 R"(weave: total ([0-9.]+) s \(([0-9.]+) s without clang\); peak RSS ([0-9]+) MiB \(clang: [0-9]+ MiB\))")));
  double clang = std::stod(m[1]), total = std::stod(m[2]), without = std::stod(m[3]);
  CHECK(clang > 0); // clang really ran, as a child
  CHECK(without == doctest::Approx(total - clang).epsilon(0.01));
  CHECK(std::stoi(m[4]) > 0);
  // Without the flag, nothing of it.
  r = e2e::run({e2e::weave(), "build", e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o",
                dir + "/out"});
  CHECK(r.err.find("without clang") == std::string::npos);
}

TEST_CASE("bad input: a clear error, a non-zero exit, and nothing written") {
  const std::string fixture = e2e::fixture("fixture");
  expect_error("unknown-function", "probes:\n  - function: main.Int\n", fixture, "unknown-function",
               {"spec.yaml:2:15", "no function main.Int", "did you mean main.Ints"});
  expect_error("unknown-parameter", "probes:\n  - function: main.Ints\n    capture: [a, bb]\n", fixture,
               "unknown-parameter", {"spec.yaml:3:18", "main.Ints has no parameter bb", "did you mean b",
                                     "parameters: a, b, c, d, e, f, g, h, i, j, k, ok"});
  expect_error("unknown-field", "probes:\n  - function: main.Nested\n    capture: [r.Header.Prot]\n", fixture,
               "unknown-field", {"spec.yaml:3:24", "has no field Prot", "did you mean Port",
                                 "fields: Port, Flags, ID, Host"});
  // Quoted, in a flow list and in a block list: the column is the field's, not one left of it.
  expect_error("unknown-field-quoted", "probes:\n  - function: main.Nested\n    capture: [\"r.Header.Prot\"]\n",
               fixture, "unknown-field", {"spec.yaml:3:25", "has no field Prot"});
  expect_error("unknown-field-block", "probes:\n  - function: main.Nested\n    capture:\n      - 'r.Header.Prot'\n",
               fixture, "unknown-field", {"spec.yaml:4:19", "has no field Prot"});
  expect_error("not-a-struct", "probes:\n  - function: main.Ints\n    capture: [a.x]\n", fixture,
               "not-a-struct", {"a is int8"});
  expect_error("float", "probes:\n  - function: main.Floats\n    capture: [n, f]\n", fixture,
               "float-in-register", {"spec.yaml:3:18", "f (float64)", "X0"});
  expect_error("func-field", "probes:\n  - function: main.Callback\n    capture: [fn.x]\n", fixture, "not-a-struct",
               {"fn is func(int) int (func), which has no field x"});
  expect_error("bad-expression", "probes:\n  - function: main.Ints\n    capture: [a..b]\n", fixture,
               "bad-expression", {"spec.yaml:3:17"});
  expect_error("index-out-of-range", "probes:\n  - function: main.Collections\n    capture: [\"arr[3]\"]\n", fixture,
               "index-out-of-range", {"arr[3]: index 3 is out of range for [3]int16 (3 elements)"});
  expect_error("constant-length", "probes:\n  - function: main.Collections\n    capture: [len(arr)]\n", fixture,
               "constant-length", {"len(arr) is the constant 3"});
  expect_error("not-indexable", "probes:\n  - function: main.Ints\n    capture: [\"a[0]\"]\n", fixture,
               "not-indexable", {"a is int8 (int), which cannot be indexed"});
  expect_error("schema", "probes:\n  - function: main.Ints\n    captures: [a]\n", fixture, "spec-schema",
               {"spec.yaml:3:5", "did you mean capture?"});
  expect_error("not-elf", "probes:\n  - function: main.Ints\n", e2e::source("README.md"), "not-elf", {"README.md"});
  expect_error("missing-binary", "probes:\n  - function: main.Ints\n", "/nonexistent/bin", "binary-unreadable",
               {"/nonexistent/bin"});
  expect_error("not-go", "probes:\n  - function: main.Ints\n", "/bin/true", "not-go", {"/bin/true"});
  expect_error("no-dwarf", "probes:\n  - function: main.Ints\n    capture: [a]\n", e2e::fixture("fixture_stripped"),
               "no-dwarf-params", {"fixture_stripped has no DWARF", "params: ["});
  expect_error("clang-missing", "probes:\n  - function: main.Ints\n    capture: [a]\n", fixture, "clang-missing",
               {"/nonexistent/clang"}, {"--clang", "/nonexistent/clang"});
  expect_error("clang-failed", "probes:\n  - function: main.Ints\n    capture: [a]\n", fixture, "clang-failed",
               {"clang failed"}, {"--clang", "/bin/false"});
}

TEST_CASE("an existing directory that weave did not write is never replaced") {
  std::string dir = e2e::temp_dir("not-ours");
  fs::create_directories(dir + "/out");
  write(dir + "/out/precious.txt", "keep me");
  auto r = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("error[output-exists]") != std::string::npos);
  CHECK(e2e::read_file(dir + "/out/precious.txt") == "keep me");
}

TEST_CASE("a directory holding a probes.json among the user's files is not weave's: refused, naming them") {
  std::string dir = e2e::temp_dir("not-ours-probes-json");
  fs::create_directories(dir + "/out/src");
  write(dir + "/out/notes.txt", "mine");
  write(dir + "/out/src/main.c", "int main(void) { return 0; }\n");
  write(dir + "/out/probes.json", "{}");
  auto r = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("error[output-exists]") != std::string::npos);
  CHECK(r.err.find("would lose notes.txt, src") != std::string::npos);
  CHECK(e2e::read_file(dir + "/out/notes.txt") == "mine");
  CHECK(e2e::read_file(dir + "/out/src/main.c") == "int main(void) { return 0; }\n");
  // Only weave's own file names, but a probes.json that is no weave manifest: refused too.
  std::string dir2 = e2e::temp_dir("not-ours-manifest");
  fs::create_directories(dir2 + "/out");
  write(dir2 + "/out/probes.json", "{\"mine\": true}");
  auto r2 = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o", dir2 + "/out"});
  CHECK(r2.status == 1);
  CHECK(r2.err.find("probes.json (not a weave manifest)") != std::string::npos);
  CHECK(e2e::read_file(dir2 + "/out/probes.json") == "{\"mine\": true}");
}

TEST_CASE("weave replaces its own output in one exchange, takes -o out/, and clears dead builds' temporaries") {
  std::string dir = e2e::temp_dir("replace");
  auto build = [&](const std::string &out) {
    return e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o", out});
  };
  auto first = build(dir + "/out/"); // trailing slash: the directory out
  INFO(first.err);
  REQUIRE(first.status == 0);
  REQUIRE(fs::exists(dir + "/out/tracer"));
  // Leftovers of a build killed before its exchange, by a process that is gone (no pid 999999999).
  fs::create_directories(dir + "/.out.weave-tmp-999999999");
  write(dir + "/.out.weave-tmp-999999999/probes.bpf.c", "half");
  fs::create_directories(dir + "/.out.weave-old-999999998");
  auto second = build(dir + "/out");
  INFO(second.err);
  REQUIRE(second.status == 0);
  CHECK(fs::exists(dir + "/out/tracer"));
  std::vector<std::string> left;
  for (const auto &entry : fs::directory_iterator(dir))
    left.push_back(entry.path().filename().string());
  CHECK(left == std::vector<std::string>{"out"});
}

// arm64 binaries cannot run here, so their probes are checked statically: the generated C compiles
// for the arm64 context, each register argument reads the register the ABI assigns (R0.. in
// order), and every return point is a `ret` word that go tool objdump also lists.
TEST_CASE("arm64: generated probes compile, read the ABI's registers, and sit on real RETs") {
  std::string dir = e2e::temp_dir("arm64");
  auto r = e2e::run({e2e::weave(), e2e::source("tests/e2e/returns.yaml"), e2e::fixture("fixture_arm64"), "-o",
                     dir + "/out"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(fs::file_size(dir + "/out/probes.bpf.o") > 0);
  std::string c = e2e::read_file(dir + "/out/probes.bpf.c");
  CHECK(c.find("struct weave_pt_regs_arm64 *ctx") != std::string::npos);
  // SpillOver(a..h int, s string, y int): with 16 registers nothing spills on arm64.
  for (const char *want : {"regs.regs[0]; /* a: int in R0 */", "regs.regs[7]; /* h: int in R7 */",
                           "regs.regs[8]; /* s.ptr: *uint8 in R8 */", "regs.regs[9]; /* s.len: int in R9 */",
                           "regs.regs[10]; /* y: int in R10 */", "__u64 g = regs.regs[28];", "g + 152"})
    CHECK_MESSAGE(c.find(want) != std::string::npos, want);
  auto manifest = nlohmann::json::parse(e2e::read_file(dir + "/out/probes.json"));
  auto objdump = e2e::run({WEAVE_GO, "tool", "objdump", "-s", "^main\\.(Divmod|Deep|SpillOver)$", e2e::fixture("fixture_arm64")});
  REQUIRE(objdump.status == 0);
  size_t rets = 0;
  for (const auto &p : manifest["probes"])
    if (p["kind"] == "return")
      for (const auto &a : p["attach"]) {
        std::string addr = a["vaddr"].get<std::string>().substr(2);
        // objdump lines: "  main.go:88  0x8f940  d65f03c0  RET" (the word, not its bytes)
        size_t line = objdump.out.find("0x" + addr + "\t");
        REQUIRE_MESSAGE(line != std::string::npos, addr);
        std::string rest = objdump.out.substr(line, objdump.out.find('\n', line) - line);
        CHECK_MESSAGE(rest.find("d65f03c0") != std::string::npos, rest);
        ++rets;
      }
  size_t objdump_rets = 0;
  for (size_t at = objdump.out.find("RET"); at != std::string::npos; at = objdump.out.find("RET", at + 3))
    ++objdump_rets;
  CHECK(rets == objdump_rets);

  // Entry probes sit one instruction past the prologue's BLS where the function checks its stack
  // (test_disasm compares that with objdump for every function of this binary), else at entry.
  std::map<std::string, nlohmann::json> entries;
  for (const auto &p : manifest["probes"])
    if (p["kind"] == "entry")
      entries[p["function"]] = p;
  for (const char *checked : {"main.Divmod", "main.Deep"}) {
    CAPTURE(checked);
    REQUIRE(entries.count(checked));
    std::string vaddr = entries[checked]["attach"][0]["vaddr"];
    CHECK(vaddr != entries[checked]["function_entry"]);
    size_t line = objdump.out.find(vaddr + "\t");
    REQUIRE(line != std::string::npos);
    size_t previous = objdump.out.rfind('\n', objdump.out.rfind('\n', line) - 1);
    CHECK(objdump.out.substr(previous, line - previous).find("BLS ") != std::string::npos);
  }
  CHECK(entries["main.SpillOver"]["attach"][0]["vaddr"] == entries["main.SpillOver"]["function_entry"]); // a leaf
}

TEST_CASE("stack traces: arm64 walks from LR and R29 (compiled, not run here), 386 copies a window") {
  std::string dir = e2e::temp_dir("stacks-arch");
  auto r = e2e::run({e2e::weave(), e2e::source("tests/e2e/stacks.yaml"), e2e::fixture("fixture_arm64"), "-o",
                     dir + "/arm64"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(fs::file_size(dir + "/arm64/probes.bpf.o") > 0);
  std::string c = e2e::read_file(dir + "/arm64/probes.bpf.c");
  CHECK(c.find("weave_walk_frames(e->stack, 10, regs.regs[30], regs.regs[29]);") != std::string::npos);
  // The arm64 entry probe runs after the stack check and before the prologue saves R29/R30, so both
  // still belong to the caller, as on amd64 RBP and the return address at SP do.
  CHECK(c.find("after the stack-growth check") != std::string::npos);

  // 386 keeps no frame pointers: its default is the window, unwound by the tracer.
  r = e2e::run({e2e::weave(), e2e::source("tests/e2e/stacks.yaml"), e2e::fixture("fixture_386"), "-o", dir + "/386"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  c = e2e::read_file(dir + "/386/probes.bpf.c");
  CHECK(c.find("weave_stack_copy(&e->stack_window, e->stack_bytes, 8192, regs.ip, regs.sp, regs.bp, 0, g, 4);") !=
        std::string::npos);
  auto manifest = nlohmann::json::parse(e2e::read_file(dir + "/386/probes.json"));
  CHECK(manifest["probes"][0]["stack"]["window"] == 8192);
}

TEST_CASE("weave funcs lists parameters, types and computed locations") {
  auto r = e2e::run({e2e::weave(), "funcs", e2e::fixture("fixture"), "main.SpillOver"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  for (const char *want : {"main.SpillOver", "ABIInternal  args=88", "param  a ", "RAX (spill slot +16)",
                           "param  s                string                       stack +0 (SP+8)",
                           "param  y                int                          R11",
                           "result ~r0              int                          RAX at RET"})
    CHECK_MESSAGE(r.out.find(want) != std::string::npos, want);
  auto r386 = e2e::run({e2e::weave(), "funcs", e2e::fixture("fixture_386"), "main.Divmod"});
  CHECK(r386.out.find("ABI0  args=24") != std::string::npos);
  CHECK(r386.out.find("result desc             string                       stack +16 (SP+20) at RET") !=
        std::string::npos);
  auto none = e2e::run({e2e::weave(), "funcs", e2e::fixture("fixture"), "main.Intz*"});
  CHECK(none.status == 1);
  CHECK(none.err.find("error[no-match]") != std::string::npos);
  CHECK(none.err.find("did you mean main.Ints") != std::string::npos);
  // A glob without its import path: the hint gives the pattern that matches, and one function it matches.
  auto short_glob = e2e::run({e2e::weave(), "funcs", e2e::fixture("fixture"), "base64.(*Encoding).Enc*"});
  CHECK(short_glob.status == 1);
  CHECK(short_glob.err.find("did you mean '*/base64.(*Encoding).Enc*'? It matches encoding/base64.(*Encoding).Encode") !=
        std::string::npos);
}

TEST_CASE("a function named without its import path, or with a typo besides, is refused with its whole name") {
  const std::string fixture = e2e::fixture("fixture");
  expect_error("short-path", "probes:\n  - function: base64.(*Encoding).Encode\n", fixture, "unknown-function",
               {"spec.yaml:2:15", "did you mean encoding/base64.(*Encoding).Encode?",
                "named with its package's whole import path"});
  expect_error("short-path-typo", "probes:\n  - function: base64.(*Encoding).Encod\n", fixture, "unknown-function",
               {"did you mean encoding/base64.(*Encoding).Encode?"});
  // A name nothing resembles keeps the hint to list the functions.
  expect_error("nothing-near", "probes:\n  - function: zzz.Qqqqqqqqq\n", fixture, "unknown-function",
               {"list the functions with: weave funcs"});
}

TEST_CASE("a build-info version that .gopclntab contradicts is refused, naming both") {
  // The fixture is Go 1.19 (register ABI, .gopclntab magic 0xfffffff0). Claiming go1.16 in its build
  // info would select ABI0 and read every argument from the stack.
  std::string dir = e2e::temp_dir("edited-version");
  std::string bytes = e2e::read_file(e2e::fixture("fixture"));
  size_t blob = bytes.find("\xff Go buildinf:");
  REQUIRE(blob != std::string::npos);
  size_t version = bytes.find("go1.19", blob);
  REQUIRE(version != std::string::npos);
  REQUIRE(version - blob < 64);
  bytes[version + 5] = '6';
  std::ofstream(dir + "/edited", std::ios::binary) << bytes;
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Ints\n    capture: [a]\n";
  auto r = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", dir + "/edited", "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("error[inconsistent-go-version]") != std::string::npos);
  CHECK(r.err.find("says go1.16") != std::string::npos);
  CHECK(r.err.find("Go 1.18 to 1.19") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
}

TEST_CASE("hostile input: a FIFO as the binary, a type 4,100 levels deep, a 64 KiB function name") {
  std::string dir = e2e::temp_dir("hostile");
  write(dir + "/spec.yaml", "probes:\n  - function: main.Ints\n");
  // A FIFO would block open() forever: refused before it is opened.
  REQUIRE(mkfifo((dir + "/fifo").c_str(), 0600) == 0);
  auto fifo = e2e::run({e2e::weave(), "build", dir + "/spec.yaml", dir + "/fifo", "-o", dir + "/out"});
  CHECK(fifo.status == 1);
  CHECK(fifo.err.find("error[binary-unreadable]") != std::string::npos);
  CHECK(fifo.err.find("not a regular file") != std::string::npos);
  // Each level of a type expression is a frame of the parser: bounded, and a located error.
  write(dir + "/deep.yaml", "probes:\n  - function: main.Ints\n    params: [{name: a, type: \"" + std::string(4100, '*') +
                                "int\"}]\n    capture: [a]\n");
  auto deep = e2e::run({e2e::weave(), "build", dir + "/deep.yaml", e2e::fixture("fixture_stripped"), "-o", dir + "/out"});
  CHECK(deep.status == 1);
  CHECK(deep.err.find("nests more than 100 levels") != std::string::npos);
  CHECK(deep.err.find("deep.yaml:3:") != std::string::npos);
  // "Did you mean" stays fast on a name no function could have (it took minutes): a run still going
  // after a minute is killed (status 137), on a busy machine too, where the answer takes well under a second.
  write(dir + "/long.yaml", "probes:\n  - function: main." + std::string(65536, 'x') + "\n");
  auto longname =
      e2e::run({e2e::weave(), "build", dir + "/long.yaml", e2e::fixture("fixture"), "-o", dir + "/out"}, 60000);
  CHECK(longname.status == 1);
  CHECK(longname.err.find("error[unknown-function]") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/out"));
}
