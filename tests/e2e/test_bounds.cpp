// End to end: what a spec may ask for is bounded before it reaches clang or the verifier.
//  - when: conditions, random but seeded (the same 48 specs every run): every spec weave accepts
//    compiles; none fails in clang (two string literals of string_max bytes once needed more than
//    BPF's 512 bytes of stack).
//  - capture paths: at most 64 steps, said with the spec location; a 10,000-step path is answered at
//    once (its resolution was cubic: 3,000 `.Next` steps took 18 s).
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>
#include <random>
#include <string>

namespace {

void write(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

// One random condition over main.(*Server).Handle's values: two strings (req.Path, s.Name), a
// uint16, an int64 and an int, compared with literals of the lengths that matter (0, a word's
// edges, string_max and one less), combined with && || ! and parentheses: `leaves` comparisons.
class Conditions {
public:
  Conditions(uint32_t seed, int string_max) : rng_(seed), string_max_(string_max) {}

  std::string make(int leaves) {
    if (leaves == 1)
      return leaf();
    int left = 1 + pick(leaves - 1);
    std::string text = "(" + make(left) + (pick(2) ? " && " : " || ") + make(leaves - left) + ")";
    return pick(5) == 0 ? "!" + text : text;
  }

private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  std::string literal() {
    const int lengths[] = {0, 1, 7, 8, 9, string_max_ - 1, string_max_, string_max_};
    int n = lengths[pick(8)];
    std::string text = "\"";
    for (int i = 0; i < n; ++i)
      text += pick(10) == 0 ? std::string("\\x41") : std::string(1, "abz/09_-"[pick(8)]);
    return text + "\"";
  }
  std::string leaf() {
    switch (pick(6)) {
    case 0:
    case 1: {
      const char *value = pick(2) ? "req.Path" : "s.Name";
      return std::string(value) + (pick(2) ? " == " : " != ") + literal();
    }
    case 2:
      return std::string("startsWith(") + (pick(2) ? "req.Path" : "s.Name") + ", " + literal() + ")";
    case 3:
      return std::string("req.Header.Port ") + (const char *[]){"==", "!=", "<", "<=", ">", ">="}[pick(6)] + " " +
             std::to_string(pick(65536));
    case 4:
      return "deadline " + std::string(pick(2) ? ">= " : "< ") + std::to_string(static_cast<int>(rng_() % 2000) - 1000);
    default:
      return "s.Hits " + std::string(pick(2) ? "> " : "== ") + std::to_string(pick(100));
    }
  }
  std::mt19937 rng_;
  int string_max_;
};

} // namespace

TEST_CASE("when: random 16-comparison conditions, seeded: every accepted spec compiles") {
  std::string dir = e2e::temp_dir("when-random");
  int accepted = 0, refused = 0;
  for (uint32_t seed = 1; seed <= 48; ++seed) {
    const int string_maxes[] = {8, 16, 32, 63, 64};
    int string_max = string_maxes[seed % 5];
    Conditions conditions(seed, string_max);
    std::string condition = conditions.make(16);
    std::string spec = dir + "/spec" + std::to_string(seed) + ".yaml";
    // Single-quoted YAML: the condition's double quotes and backslashes are taken as they are.
    write(spec, "probes:\n  - function: main.(*Server).Handle\n    capture: [req.Path, s.Name]\n    when: '" + condition +
                    "'\noptions: {string_max: " + std::to_string(string_max) + "}\n");
    auto r = e2e::run({e2e::weave(), "build", spec, e2e::fixture("fixture"), "-o", dir + "/out" + std::to_string(seed)},
                      120000);
    CAPTURE(seed);
    CAPTURE(condition);
    CAPTURE(r.err);
    CHECK((r.status == 0 || r.status == 1));
    CHECK(r.err.find("clang-failed") == std::string::npos);
    CHECK(r.err.find("internal error") == std::string::npos);
    (r.status == 0 ? accepted : refused)++;
  }
  MESSAGE(accepted << " of 48 random conditions accepted, " << refused << " refused");
  // The generator makes conditions weave can decide: most are accepted, so the test says something.
  CHECK(accepted >= 40);
}

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
