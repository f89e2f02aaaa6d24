// The binary stage on real third-party Go binaries built by Go versions this machine cannot build:
// esbuild's release executables from the npm registry (stripped, static, amd64), one per pclntab
// era. tests/npm/fetch.sh downloads each package once into a cache; when the registry cannot be
// reached it exits 77 and so does every test case here, which ctest reports as skipped.
//
// Each release is checked the same way: .go.buildinfo gives the Go version recorded below; the
// pclntab loads with the magic of that version; the wrapper funcID the binary implies matches the
// per-version table; esbuild's fs.(*realFS).ReadFile is found and its argument size is what the ABI
// of that version gives for its signature; sp_delta is 0 at every RET that Zydis finds in a sample
// of functions; inline expansion decodes everywhere; where Go 1.19's debug/gosym can read the table
// (magics 0xfffffffa and 0xfffffff0), symbolize() agrees with `go tool addr2line`; and symbolize()
// reproduces, inlined frames included, the traceback the binary's own Go runtime prints on SIGQUIT
// (esbuild is run waiting on its stdin, then sent SIGQUIT: the npm release itself is executed).
#include "gobinary/binary.h"
#include "gobinary/pclntab.h"
#include "common/diag.h"
#include "disasm/disasm.h"

#include <Zydis/Zydis.h>
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace weave;
namespace fs = std::filesystem;

namespace {

// Release is one esbuild package and what was found in it (the Go version is the one its
// buildinfo records; the tests below check it).
struct Release {
  const char *spec;
  const char *go_version;
  uint32_t magic;
  // fs.(*realFS).ReadFile(path string): receiver 8 + path 16 bytes of input.
  //   ABI0 (Go 1.16 amd64), returning (string, error): everything on the stack, 24 + 16 + 16.
  //   ABIInternal (1.17+): arguments and results in registers; args is the spill area for the
  //   register-assigned inputs only: 24 (GO-ABI.md §1.3).
  int read_file_args;
};

const Release kGo116{"esbuild-linux-64@0.8.57", "go1.16", 0xfffffffa, 56};
const Release kGo117{"esbuild-linux-64@0.14.0", "go1.17.2", 0xfffffffa, 24};
const Release kGo119{"esbuild-linux-64@0.15.18", "go1.19.3", 0xfffffff0, 24};
const Release kGo120{"@esbuild/linux-x64@0.17.19", "go1.20.4", 0xfffffff1, 24};
const Release kGo123{"@esbuild/linux-x64@0.25.0", "go1.23.5", 0xfffffff1, 24};
// No .go.buildinfo at all (see buildinfo.cpp, recover_from_runtime_variables): the version comes
// from runtime.buildVersion.
const Release kGo126{"@esbuild/linux-x64@0.28.2", "go1.26.5", 0xfffffff1, 24};

// Go 1.16 as well; its binary has 35 functions with frames over 4 KB (bundler.parseFile among them).
const Release kGo116Big{"esbuild-linux-64@0.11.23", "go1.16", 0xfffffffa, 56};

const char *kReadFile = "github.com/evanw/esbuild/internal/fs.(*realFS).ReadFile";

std::string run(const std::string &command, int *status_out = nullptr) {
  FILE *pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
    out.append(buffer, n);
  int status = pclose(pipe);
  if (status_out)
    *status_out = status;
  else
    REQUIRE_MESSAGE(status == 0, command << " failed: " << out.substr(0, 2000));
  return out;
}

std::string hex(uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%#llx", static_cast<unsigned long long>(value));
  return buffer;
}

// The esbuild executable of a release, fetched (once) by tests/npm/fetch.sh. Exits the process with
// 77 — skipped — when the registry cannot be reached.
std::string fetch(const Release &release) {
  const char *env = std::getenv("WEAVE_NPM_CACHE");
  std::string cache = env && *env ? env : WEAVE_NPM_CACHE_DEFAULT;
  std::string dir = release.spec;
  for (char &c : dir)
    if (c == '/' || c == '@')
      c = '_';
  std::string dest = std::string(WEAVE_BINARY_DIR) + "/npm-bin/" + dir;
  std::string command = "WEAVE_NPM_CACHE='" + cache + "' sh '" + WEAVE_SOURCE_DIR +
                        "/tests/npm/fetch.sh' '" + release.spec + "' '" + dest + "'";
  int status = 0;
  std::string out = run(command, &status);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    std::cout << "SKIPPED: " << release.spec
              << " cannot be fetched: the npm registry is not reachable (see the message above)"
              << std::endl;
    std::exit(77);
  }
  REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0),
                  "tests/npm/fetch.sh " << release.spec << " failed");
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  REQUIRE(out == dest + "/esbuild");
  return out;
}

// RET instructions of fn, by a linear sweep (Go amd64 code holds no data; padding is int3).
std::vector<uint64_t> rets(const BinaryImage &image, const PclnFunction &fn) {
  std::vector<uint8_t> code = read_bytes(image, fn.entry, fn.end - fn.entry);
  ZydisDecoder decoder;
  ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  std::vector<uint64_t> out;
  for (size_t off = 0; off < code.size();) {
    if (!ZYAN_SUCCESS(
            ZydisDecoderDecodeFull(&decoder, code.data() + off, code.size() - off, &insn, ops))) {
      ++off;
      continue;
    }
    if (insn.mnemonic == ZYDIS_MNEMONIC_RET)
      out.push_back(fn.entry + off);
    off += insn.length;
  }
  return out;
}

// TracebackFrame is one frame of a Go traceback: "name(args)" then "\tfile:line", followed for a
// physical frame (GOTRACEBACK=system) by " +0xOFF fp=... sp=... pc=0xPC".
struct TracebackFrame {
  std::string function, file;
  int line = 0;
  bool physical = false;
  uint64_t offset = 0, pc = 0;
};

// Runs esbuild with its stdin held open (it waits to read the code to transform), sends it SIGQUIT
// and parses the traceback the Go runtime prints for every goroutine. Each goroutine's frames are
// returned innermost first; "created by" lines are left out.
std::vector<std::vector<TracebackFrame>> traceback(const std::string &binary) {
  // One output file per binary: ctest runs the releases in parallel. The binary gets 2 s to start
  // and block on its stdin before the signal, which is plenty even on a loaded 2-core machine.
  std::string out_path = binary + ".traceback.txt";
  std::string command = "sleep 8 | GOTRACEBACK=system '" + binary + "' > '" + out_path +
                        "' 2>&1 & pid=$!; sleep 2; kill -QUIT $pid; wait $pid; cat '" + out_path +
                        "'";
  int status = 0;
  std::string out = run(command, &status);
  std::vector<std::vector<TracebackFrame>> goroutines;
  std::istringstream in(out);
  std::string line, pending_name;
  bool skip_next = false;
  while (std::getline(in, line)) {
    if (line.rfind("goroutine ", 0) == 0) {
      goroutines.emplace_back();
      pending_name.clear();
      continue;
    }
    if (goroutines.empty() || line.empty())
      continue;
    if (line[0] != '\t') {
      pending_name.clear();
      skip_next = line.rfind("created by ", 0) == 0;
      size_t paren = line.rfind('(');
      if (!skip_next && paren != std::string::npos && line.back() == ')')
        pending_name = line.substr(0, paren);
      continue;
    }
    if (skip_next || pending_name.empty())
      continue;
    TracebackFrame frame;
    frame.function = pending_name;
    std::string location = line.substr(1);
    size_t space = location.find(' ');
    std::string file_line = location.substr(0, space);
    size_t colon = file_line.rfind(':');
    if (colon == std::string::npos)
      continue;
    frame.file = file_line.substr(0, colon);
    frame.line = std::atoi(file_line.c_str() + colon + 1);
    size_t plus = location.find(" +0x"), pc = location.find(" pc=0x");
    if (plus != std::string::npos && pc != std::string::npos) {
      frame.physical = true;
      frame.offset = std::stoull(location.substr(plus + 2), nullptr, 16);
      frame.pc = std::stoull(location.substr(pc + 4), nullptr, 16);
    }
    goroutines.back().push_back(frame);
    pending_name.clear();
  }
  return goroutines;
}

void check_release(const Release &release) {
  std::string path = fetch(release);
  const std::string spec = release.spec;
  CAPTURE(spec);

  // Build info: the Go version (the pointer format of 1.16/1.17, the inline one later).
  BinaryImage image = load_binary(path);
  CHECK(image.arch == Arch::X86_64);
  CHECK(image.functions.empty()); // stripped: everything below comes from the pclntab
  REQUIRE(image.buildinfo.has_value());
  CHECK(image.buildinfo->go_version == release.go_version);
  CHECK(image.buildinfo->main_path == "github.com/evanw/esbuild/cmd/esbuild");
  CHECK(image.buildinfo->module_path == "github.com/evanw/esbuild");
  GoVersion version = parse_go_version(image.buildinfo->go_version);

  // The table.
  auto loaded = Pclntab::load(image);
  REQUIRE(loaded.has_value());
  const Pclntab &table = *loaded;
  CHECK(table.magic() == release.magic);
  CHECK(std::string(table.found_by()) == "section .gopclntab");
  CHECK(table.quantum() == 1);
  CHECK(table.moduledata() != 0);
  if (table.magic() != 0xfffffffa) {
    CHECK(std::string(table.text_start_from()) == "moduledata.text");
    CHECK(table.gofunc() != 0);
  }
  if (version.minor >= 26) // go.dev/doc/go1.26: funcdata moved into .gopclntab
    CHECK(table.gofunc() - table.address() < table.size());
  // The wrapper funcID the binary implies (systemstack_switch + 1 since 1.17) is the table's.
  CHECK(table.wrapper_func_id() == Pclntab::wrapper_func_id_for(version));

  const PclnFunction *read_file = table.find(kReadFile);
  REQUIRE(read_file != nullptr);
  CHECK(read_file->args == release.read_file_args);
  auto frames = table.symbolize(read_file->entry);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == kReadFile);
  CHECK(frames[0].file.size() > 22);
  CHECK(frames[0].file.compare(frames[0].file.size() - 22, 22, "internal/fs/fs_real.go") == 0);
  const PclnFunction *main_main = table.find("main.main");
  REQUIRE(main_main != nullptr);

  // ABI wrapper pairs: one copy at <autogenerated>:1 with the wrapper funcID (none before 1.17).
  std::map<std::string, std::vector<const PclnFunction *>> by_name;
  for (const PclnFunction &fn : table.functions())
    by_name[fn.name].push_back(&fn);
  size_t pairs = 0, generic = 0;
  for (const auto &[name, fns] : by_name) {
    if (fns.size() == 1)
      continue;
    if (name.find("[...]") != std::string::npos) { // shape instantiations of a generic function
      ++generic;
      continue;
    }
    CAPTURE(name);
    CHECK(fns.size() == 2);
    CHECK(version.minor >= 17);
    size_t wrappers = 0;
    for (const PclnFunction *fn : fns) {
      auto at_entry = table.symbolize(fn->entry, true);
      if (at_entry.back().file == "<autogenerated>") {
        ++wrappers;
        CHECK(static_cast<int>(fn->func_id) == table.wrapper_func_id());
        CHECK(table.find(name) != fn);
      }
    }
    CHECK(wrappers == 1);
    ++pairs;
  }

  // sp_delta at RETs, for ReadFile, main.main and every 25th function.
  std::vector<const PclnFunction *> sample{read_file, main_main};
  for (size_t i = 0; i < table.functions().size(); i += 25)
    sample.push_back(&table.functions()[i]);
  size_t ret_count = 0;
  for (const PclnFunction *fn : sample) {
    for (uint64_t pc : rets(image, *fn)) {
      CAPTURE(fn->name);
      CAPTURE(hex(pc));
      auto delta = table.sp_delta(*fn, pc);
      REQUIRE(delta.has_value());
      CHECK(*delta == 0);
      ++ret_count;
    }
  }

  // Inline expansion everywhere: one PC in the middle of every function.
  size_t inlined_pcs = 0, frames_total = 0;
  for (const PclnFunction &fn : table.functions()) {
    auto chain = table.symbolize(fn.entry + (fn.end - fn.entry) / 2);
    REQUIRE(!chain.empty());
    CHECK(chain.back().function == fn.name);
    for (const auto &frame : chain)
      CHECK(!frame.function.empty());
    frames_total += chain.size();
    inlined_pcs += chain.size() > 1;
  }
  CHECK(inlined_pcs > 500);

  // go tool addr2line (Go 1.19's debug/gosym reads the 1.16 and 1.18 layouts, not 1.20's).
  size_t agree = 0, compared = 0;
  if (release.magic != 0xfffffff1) {
    std::string input;
    std::vector<uint64_t> pcs;
    for (size_t i = 0; i < table.functions().size(); i += 17) {
      const PclnFunction &fn = table.functions()[i];
      pcs.push_back(fn.entry + (fn.end - fn.entry) * 2 / 3);
    }
    for (uint64_t pc : pcs)
      input += hex(pc) + "\n";
    std::string in_path = path + ".pcs.txt"; // per binary: ctest runs the releases in parallel
    std::ofstream(in_path) << input;
    std::vector<std::string> out;
    std::istringstream text(run(std::string(WEAVE_GO_TOOL) + " tool addr2line '" + path + "' < '" + in_path + "'"));
    for (std::string line; std::getline(text, line);)
      out.push_back(line);
    REQUIRE(out.size() == 2 * pcs.size());
    for (size_t i = 0; i < pcs.size(); ++i) {
      auto chain = table.symbolize(pcs[i], true);
      std::string ours = chain.front().file + ":" + std::to_string(chain.front().line);
      std::string theirs = out[2 * i + 1] == ":-1" ? "?:0" : out[2 * i + 1];
      CAPTURE(hex(pcs[i]));
      CHECK(chain.back().function == out[2 * i]);
      CHECK(ours == theirs);
      agree += chain.back().function == out[2 * i] && ours == theirs;
      ++compared;
    }
    CHECK(agree == compared);
  }

  // The Go runtime's own traceback of the running binary: every physical frame's PC (a return
  // address, looked up at pc-1 like the runtime does) must symbolize to exactly the inlined frames
  // printed above it plus itself, and its "+0x" offset must be pc minus our entry.
  size_t tb_frames = 0, tb_inlined = 0, tb_physical = 0;
  for (const auto &goroutine : traceback(path)) {
    std::vector<TracebackFrame> pending;
    for (const TracebackFrame &frame : goroutine) {
      pending.push_back(frame);
      if (!frame.physical)
        continue;
      CAPTURE(frame.function);
      CAPTURE(hex(frame.pc));
      const PclnFunction *fn = table.at_pc(frame.pc - 1);
      REQUIRE(fn != nullptr);
      CHECK(fn->name == frame.function);
      CHECK(fn->entry + frame.offset == frame.pc);
      auto chain = table.symbolize(frame.pc - 1);
      std::string ours, theirs;
      for (const auto &f : chain)
        ours += f.function + " " + f.file + ":" + std::to_string(f.line) + "\n";
      for (const auto &f : pending)
        theirs += f.function + " " + f.file + ":" + std::to_string(f.line) + "\n";
      CHECK(ours == theirs);
      tb_frames += pending.size();
      tb_inlined += pending.size() - 1;
      ++tb_physical;
      pending.clear();
    }
  }
  CHECK(tb_physical >= 10);
  CHECK(tb_inlined >= 3);

  MESSAGE(spec << ": " << image.buildinfo->go_version << ", magic " << hex(table.magic()) << ", "
               << table.functions().size() << " functions, wrapper funcID "
               << table.wrapper_func_id() << ", text start " << hex(table.text_start()) << " ("
               << table.text_start_from() << "), moduledata " << hex(table.moduledata())
               << ", gofunc " << hex(table.gofunc()) << "; " << std::string(kReadFile) << " at "
               << hex(read_file->entry) << " args " << read_file->args << "; " << pairs
               << " ABI wrapper pairs, " << generic << " generic names; " << ret_count
               << " RETs with sp_delta 0; " << inlined_pcs << " of " << table.functions().size()
               << " mid-function PCs inside inlined calls (" << frames_total << " frames); "
               << (compared ? "addr2line agrees on " + std::to_string(agree) + " of " +
                                  std::to_string(compared)
                            : std::string("addr2line n/a (Go 1.19's debug/gosym predates 1.20)"))
               << "; the runtime's own SIGQUIT traceback: " << tb_frames << " frames ("
               << tb_physical << " physical, " << tb_inlined << " inlined), all equal");
}

// Where the entry probe of every function goes, checked against GNU objdump's decoding of the whole
// .text (binutils, a decoder independent of Zydis; `go tool objdump` refuses binaries without a
// symbol table). In objdump's words, the body starts after the first forward `jbe` that follows
// either `cmp REG,QWORD PTR [G+0x10]` (g.stackguard0: small and medium frames, every version) or,
// for Go 1.16's frames over 4 KB, `mov REG,QWORD PTR [G+0x10]; cmp REG,0xfffffffffffffade;
// je M; ...; jbe M` (StackPreempt first, then the frame size; both branches go to morestack).
// Returns {functions compared, with a stack check, with the big-frame StackPreempt form}.
struct PrologueCounts {
  size_t functions = 0, checked = 0, big = 0, undecodable = 0;
};
PrologueCounts check_entry_placement(const Release &release) {
  std::string path = fetch(release);
  if (std::system("command -v objdump >/dev/null 2>&1") != 0) {
    std::cout << "SKIPPED: binutils' objdump is not installed: it is the reference disassembler here"
              << std::endl;
    std::exit(77);
  }
  BinaryImage image = load_binary(path);
  auto pcln = Pclntab::load(image);
  REQUIRE(pcln);
  // The first 10 instructions of each function, from one objdump run over .text.
  std::map<uint64_t, std::vector<std::pair<uint64_t, std::string>>> heads;
  for (const PclnFunction &fn : pcln->functions())
    heads[fn.entry];
  {
    std::string cmd = "objdump -d -M intel --no-show-raw-insn -j .text '" + path + "'";
    FILE *pipe = popen(cmd.c_str(), "r");
    REQUIRE(pipe);
    static const std::regex insn_line(R"(^\s*([0-9a-f]+):\s+(.*\S)\s*$)");
    std::cmatch m;
    char line[4096];
    std::vector<std::pair<uint64_t, std::string>> *current = nullptr;
    while (fgets(line, sizeof line, pipe)) {
      if (!std::regex_search(line, m, insn_line))
        continue;
      uint64_t address = std::stoull(m[1], nullptr, 16);
      auto it = heads.find(address);
      if (it != heads.end())
        current = &it->second;
      if (current && current->size() < 10)
        current->push_back({address, m[2]});
    }
    REQUIRE(pclose(pipe) == 0);
  }
  static const std::regex bound_compare(R"(^cmp\s+\w+,QWORD PTR \[\w+\+0x10\]$)");
  static const std::regex guard_load(R"(^mov\s+(\w+),QWORD PTR \[\w+\+0x10\]$)");
  static const std::regex branch(R"(^(jbe|je)\s+(?:0x)?([0-9a-f]+)\b)");
  PrologueCounts counts;
  for (const PclnFunction &fn : pcln->functions()) {
    const auto &insns = heads[fn.entry];
    std::optional<uint64_t> want;
    bool big = false;
    std::smatch m, b;
    for (size_t i = 0; i + 1 < insns.size() && !want; ++i) {
      const std::string &text = insns[i].second;
      if (std::regex_match(text, bound_compare) && std::regex_search(insns[i + 1].second, b, branch) &&
          b[1] == "jbe" && std::stoull(b[2], nullptr, 16) > insns[i + 1].first && i + 2 < insns.size())
        want = insns[i + 2].first;
      else if (std::regex_match(text, m, guard_load) && i + 2 < insns.size() &&
               insns[i + 1].second == "cmp    " + m[1].str() + ",0xfffffffffffffade" &&
               std::regex_search(insns[i + 2].second, b, branch) && b[1] == "je") {
        std::string morestack = b[2];
        for (size_t j = i + 3; j + 1 < insns.size() && !want; ++j)
          if (std::regex_search(insns[j].second, b, branch) && b[1] == "jbe" && b[2] == morestack) {
            want = insns[j + 1].first;
            big = true;
          }
      }
    }
    CodeFacts facts = analyze_x86_64(read_bytes(image, fn.entry, fn.end - fn.entry), fn.entry);
    CAPTURE(fn.name);
    CAPTURE(hex(fn.entry));
    if (!facts.error.empty()) {
      // Not code (crypto/internal/boring/sig's markers are bytes in TEXT): weave refuses to probe it.
      ++counts.undecodable;
      continue;
    }
    CHECK(facts.after_stack_check == want);
    ++counts.functions;
    counts.checked += want.has_value();
    counts.big += big;
  }
  MESSAGE(std::string(release.spec) << ": " << counts.functions << " functions, " << counts.checked
                       << " stack checks (" << counts.big
                       << " of the big-frame StackPreempt form) placed as objdump reads them; "
                       << counts.undecodable << " not code");
  return counts;
}

} // namespace

TEST_CASE("esbuild 0.8.57: Go 1.16, magic 0xfffffffa, ABI0, pointer-format build info") {
  check_release(kGo116);
}

TEST_CASE("esbuild 0.14.0: Go 1.17, magic 0xfffffffa, first register ABI") {
  check_release(kGo117);
}

TEST_CASE("esbuild 0.15.18: Go 1.19, magic 0xfffffff0") {
  check_release(kGo119);
}

TEST_CASE("esbuild 0.17.19: Go 1.20, magic 0xfffffff1") {
  check_release(kGo120);
}

TEST_CASE("esbuild 0.25.0: Go 1.23, magic 0xfffffff1, corostart in the funcID list") {
  check_release(kGo123);
}

TEST_CASE("esbuild 0.28.2: Go 1.26, .go.module, textStart 0, no .go.buildinfo") {
  check_release(kGo126);
}

TEST_CASE("fetch.sh reports an unreachable registry as skipped (77)") {
  // A registry address that refuses connections at once, an empty cache and an unknown version:
  // the script must say so and exit 77, not 0 or 1.
  std::string tmp = std::string(WEAVE_BINARY_DIR) + "/npm-bin/offline";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  int status = 0;
  run("npm_config_registry=http://127.0.0.1:9/ WEAVE_NPM_CACHE='" + tmp + "/cache' sh '" +
          WEAVE_SOURCE_DIR + "/tests/npm/fetch.sh' esbuild-linux-64@0.0.2 '" + tmp + "/out' 2>&1",
      &status);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    CHECK(!fs::exists(tmp + "/out/esbuild"));
  } else {
    // npm missing altogether is also a 77; anything else is a bug in the script.
    FAIL("fetch.sh exited " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1)
                            << " for an unreachable registry");
  }
  fs::remove_all(tmp);
}

TEST_CASE("Go 1.16 frames over 4 KB: the entry probe goes after the StackPreempt and frame-size checks") {
  // esbuild 0.11.23: bundler.parseFile and 34 more have `mov rsi,[rcx+0x10]; cmp rsi,$-0x522; je;
  // lea; sub; cmp; jbe`; a probe at their first instruction fires again on every stack growth.
  PrologueCounts counts = check_entry_placement(kGo116Big);
  CHECK(counts.big == 35);
  // bundler.parseFile at 0x794060: the body starts at 0x794091, after `jbe 0x7995a0` (objdump).
  BinaryImage image = load_binary(fetch(kGo116Big));
  auto pcln = Pclntab::load(image);
  REQUIRE(pcln);
  const PclnFunction *parse = pcln->find("github.com/evanw/esbuild/internal/bundler.parseFile");
  REQUIRE(parse);
  CHECK(parse->entry == 0x794060);
  CodeFacts facts = analyze_x86_64(read_bytes(image, parse->entry, parse->end - parse->entry), parse->entry);
  CHECK(facts.after_stack_check == std::optional<uint64_t>(0x794091));
  CHECK(counts.checked > counts.functions / 2);
  PrologueCounts older = check_entry_placement(kGo116);
  CHECK(older.big > 0);
}

TEST_CASE("entry placement agrees with objdump over every function, Go 1.17 to 1.26") {
  for (const Release *release : {&kGo117, &kGo119, &kGo123, &kGo126}) {
    PrologueCounts counts = check_entry_placement(*release);
    CHECK(counts.big == 0); // Go 1.17 dropped the StackPreempt compare: big frames compare SP-n
    CHECK(counts.checked > counts.functions / 2);
    CHECK(counts.undecodable < 5);
  }
}
