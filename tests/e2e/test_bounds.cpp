// End to end: what a spec may ask for is bounded before it reaches clang or the verifier.
//  - capture paths: at most 64 steps, said with the spec location; a 10,000-step path is answered at
//    once (its resolution was cubic: 3,000 `.Next` steps took 18 s).
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

namespace {

void write(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

} // namespace

TEST_CASE("capture paths: 64 steps at most, a located error past that, and a 10,000-step path answered at once") {
  std::string dir = e2e::temp_dir("long-path");
  auto build = [&](const std::string &name, const std::string &capture, const std::string &key = "capture") {
    std::string spec = dir + "/" + name + ".yaml";
    write(spec, "probes:\n  - function: main.Nested\n    " + key + ": " + capture + "\n");
    return e2e::run({e2e::weave(), "build", spec, e2e::fixture("fixture"), "-o", dir + "/" + name + "-out"});
  };
  std::string steps64 = "r";
  for (int i = 0; i < 64; ++i)
    steps64 += ".Next";
  // 64 steps pass the parser: the error is the type's (Request has no field Next), not the length.
  auto r = build("s64", "[" + steps64 + "]");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[unknown-field]") != std::string::npos);
  // The 65th step is refused where it starts: the capture begins at column 15, the step 321 further.
  r = build("s65", "[" + steps64 + ".Next]");
  CAPTURE(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("s65.yaml:3:" + std::to_string(15 + 1 + 64 * 5) + ": error[expression-too-long]") !=
        std::string::npos);
  CHECK(r.err.find("more than 64 steps") != std::string::npos);
  // And as many '*'s.
  r = build("derefs", "['" + std::string(65, '*') + "r']");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[expression-too-long]") != std::string::npos);
  // 10,000 steps: the same error, at once (the ctest timeout bounds it; before, this never finished).
  std::string steps10k = "r";
  for (int i = 0; i < 10000; ++i)
    steps10k += ".Next";
  r = build("s10k", "[" + steps10k + "]");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[expression-too-long]") != std::string::npos);
  // In a when: condition too.
  r = build("when10k", "'" + steps10k + " == 1'\n    capture: [r.Size]", "when");
  CHECK(r.status == 1);
  CHECK(r.err.find("error[expression-too-long]") != std::string::npos);
}
