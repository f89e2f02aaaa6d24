// Golden tests: the generated probes.bpf.c, probes.h, Makefile.bpf and probes.json of each case in
// tests/golden/ are compared byte for byte with the checked-in copies. Run with
// WEAVE_UPDATE_GOLDEN=1 to rewrite them, then review the diff like code.
//
// Each case directory holds spec.yaml and a file `binary` naming the fixture it is generated
// against (built with the pinned Debian Go 1.19.8 and -trimpath, so offsets and build ids are the
// same on every machine). clang's output is never snapshotted, only weave's own text.
#include "gobinary/binary.h"
#include "gobinary/pclntab.h"
#include "codegen/codegen.h"
#include "debuginfo/debuginfo.h"
#include "plan/plan.h"
#include "spec/spec.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

// Runs the pipeline from the fixture directory with a relative binary path, as a user would, so
// that the recorded target path carries no machine-specific prefix.
weave::Plan plan_case(const fs::path &spec_path, const std::string &binary) {
  fs::path cwd = fs::current_path();
  fs::current_path(WEAVE_FIXTURE_DIR);
  weave::Spec spec = weave::parse_spec_file(spec_path.string());
  weave::BinaryImage image = weave::load_binary("./" + binary);
  auto debug = weave::DebugInfo::open(image.path, image.ptr_size);
  auto pcln = weave::Pclntab::load(image);
  weave::Plan plan = weave::make_plan(spec, image, debug.get(), pcln ? &*pcln : nullptr);
  // As `weave build spec.yaml ./fixture` records it: relative to the output directory weave-out.
  plan.target.path = weave::recorded_target_path(image.path, "weave-out");
  fs::current_path(cwd);
  return plan;
}

std::vector<weave::GeneratedFile> generate_case(const fs::path &dir) {
  weave::Plan plan = plan_case(dir / "spec.yaml", trim(slurp(dir / "binary")));
  auto files = weave::generate(plan);
  // weave_bpf.h and weave_event.h are copied verbatim from templates/: nothing to snapshot.
  std::erase_if(files, [](auto &f) { return f.name == "weave_bpf.h" || f.name == "weave_event.h"; });
  return files;
}

} // namespace

TEST_CASE("generated files match the golden copies") {
  bool update = std::getenv("WEAVE_UPDATE_GOLDEN") != nullptr;
  fs::path root = fs::path(WEAVE_SOURCE_DIR) / "tests" / "golden";
  int cases = 0;
  for (const auto &entry : fs::directory_iterator(root)) {
    if (!entry.is_directory())
      continue;
    ++cases;
    CAPTURE(entry.path().filename().string());
    auto files = generate_case(entry.path());
    for (const auto &file : files) {
      fs::path golden = entry.path() / file.name;
      CAPTURE(file.name);
      if (update) {
        std::ofstream(golden, std::ios::binary) << file.content;
        continue;
      }
      REQUIRE_MESSAGE(fs::exists(golden), "missing golden file; run with WEAVE_UPDATE_GOLDEN=1");
      CHECK_MESSAGE(slurp(golden) == file.content,
                    "generated text differs; review and run with WEAVE_UPDATE_GOLDEN=1");
    }
  }
  CHECK(cases >= 2);
}

TEST_CASE("generating twice gives identical bytes") {
  fs::path dir = fs::path(WEAVE_SOURCE_DIR) / "tests" / "golden" / "fixture";
  auto first = generate_case(dir);
  auto second = generate_case(dir);
  REQUIRE(first.size() == second.size());
  for (size_t i = 0; i < first.size(); ++i) {
    CHECK(first[i].name == second[i].name);
    CHECK(first[i].content == second[i].content);
  }
}

// Program sharing rests on plan.cpp's shape key naming everything the generated code depends on.
// Ground truth for it: each event a shared program serves, rendered as a program of its own, must
// give the same code (comments aside, which name each event's own values).
TEST_CASE("every event of a shared program would get the same code on its own") {
  const std::regex comments(R"(/\*[\s\S]*?\*/|//[^\n]*)");
  fs::path root = fs::path(WEAVE_SOURCE_DIR) / "tests" / "e2e";
  struct Case {
    fs::path spec;
    std::string binary;
  } cases[] = {{root / "wildcard.yaml", "fixture"},        // every main.* function, args and results
               {root / "wildcard.yaml", "fixture_386"},    // the same on the stack ABI
               {root / "compile" / "ssa.yaml", "compile_amd64"}}; // ~3,700 functions of a real package
  for (const Case &c : cases) {
    CAPTURE(c.binary);
    weave::Plan plan = plan_case(c.spec, c.binary);
    const std::vector<weave::ProgramPlan> programs = plan.programs;
    size_t shared = 0, compared = 0;
    for (const weave::ProgramPlan &program : programs) {
      if (program.events.size() < 2)
        continue;
      ++shared;
      std::string first;
      for (int id : program.events) {
        plan.programs = {{program.name, program.struct_name, {id}}};
        std::string code = std::regex_replace(weave::render_bpf_source(plan), comments, "");
        CAPTURE(plan.probe_of_event(id).function);
        if (first.empty())
          first = code;
        else
          CHECK(code == first);
        ++compared;
      }
    }
    CHECK(shared >= 2);
    MESSAGE(c.binary << ": " << programs.size() << " programs for " << plan.event_count() << " events, "
                     << shared << " shared; " << compared << " events rendered alone");
  }
}
