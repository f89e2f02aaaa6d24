// Golden tests: the generated probes.bpf.c, probes.h, Makefile.bpf and probes.json of each case in
// tests/golden/ are compared byte for byte with the checked-in copies. Run with
// WEAVE_UPDATE_GOLDEN=1 to rewrite them, then review the diff like code.
//
// Each case directory holds spec.yaml and a file `binary` naming the fixture it is generated
// against (built with the pinned Debian Go 1.19.8 and -trimpath, so offsets and build ids are the
// same on every machine). clang's output is never snapshotted, only weave's own text.
#include "binary/binary.h"
#include "binary/pclntab.h"
#include "codegen/codegen.h"
#include "debuginfo/debuginfo.h"
#include "plan/plan.h"
#include "spec/spec.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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
std::vector<weave::GeneratedFile> generate_case(const fs::path &dir) {
  std::string binary = trim(slurp(dir / "binary"));
  fs::path cwd = fs::current_path();
  fs::current_path(WEAVE_FIXTURE_DIR);
  weave::Spec spec = weave::parse_spec_file((dir / "spec.yaml").string());
  weave::BinaryImage image = weave::load_binary("./" + binary);
  auto debug = weave::DebugInfo::open(image.path, image.ptr_size);
  auto pcln = weave::Pclntab::load(image);
  weave::Plan plan = weave::make_plan(spec, image, debug.get(), pcln ? &*pcln : nullptr);
  fs::current_path(cwd);
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
