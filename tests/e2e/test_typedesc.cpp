// End to end, for real: stripped binaries (no symbols, no DWARF) traced with parameters declared by
// type name alone — `*net/http.Request`, the program's own `*main.Order` — whose layouts weave reads
// from the runtime's type descriptors; every captured value compared with what the program recorded
// before the call. Built by the pinned Go 1.19 (amd64 and 386) and by the machine's newer Go.
#include "harness.h"

#include <doctest/doctest.h>

#include <fstream>

using nlohmann::json;

namespace {

// Builds tests/e2e/typedesc.yaml for `binary`, traces it, and compares every captured value with the
// program's truth. Returns how many values were compared.
size_t trace_and_compare(const std::string &binary) {
  std::string dir = e2e::temp_dir("typedesc-" + binary);
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/typedesc.yaml"), e2e::fixture(binary), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "--", e2e::fixture(binary), "-truth",
                          dir + "/truth.jsonl"});
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::map<std::string, std::vector<json>> truth, seen;
  for (auto &t : e2e::json_lines(e2e::read_file(dir + "/truth.jsonl")))
    truth[t["function"]].push_back(t["args"]);
  for (auto &e : e2e::json_lines(traced.out))
    if (e["kind"] == "entry")
      seen[e["function"]].push_back(e["args"]);
  size_t values = 0;
  for (const char *function : {"main.Handle", "main.Place"}) {
    CAPTURE(function);
    REQUIRE(seen[function].size() == truth[function].size());
    REQUIRE(!truth[function].empty());
    for (size_t i = 0; i < truth[function].size(); ++i)
      for (auto &[key, value] : truth[function][i].items()) {
        CAPTURE(key);
        CHECK(seen[function][i][key] == value);
        ++values;
      }
  }
  return values;
}

} // namespace

TEST_CASE("stripped Go 1.19 binaries: *net/http.Request and *main.Order declared by name, values matched") {
  e2e::require_bpf();
  for (const char *binary : {"typedesc_stripped", "typedesc_386_stripped"}) {
    CAPTURE(binary);
    CHECK(trace_and_compare(binary) == 3 * 9 + 2 * 9);
  }
}

TEST_CASE("a type the binary has no descriptor for is refused by name, with a near miss") {
  std::string dir = e2e::temp_dir("typedesc-unknown");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Handle\n"
                                       "    params: [{name: r, type: \"*net/http.Requests\"}]\n"
                                       "    capture: [r.Method]\n";
  auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("typedesc_stripped"), "-o", dir + "/out"});
  CHECK(r.status == 1);
  CHECK(r.err.find("error[unknown-type]") != std::string::npos);
  CHECK(r.err.find("spec.yaml:3:") != std::string::npos);
  CHECK(r.err.find("no type descriptor named net/http.Requests") != std::string::npos);
  CHECK(r.err.find("did you mean net/http.Request") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir + "/out"));
}

namespace {

// r *http.Request declared as a struct whose URL field points at a layout declared for net/url.URL,
// fields in the order given.
std::string url_layout_spec(const std::vector<std::string> &url_fields) {
  std::string text = "probes:\n  - function: main.Handle\n    params:\n      - name: r\n        type:\n"
                     "          pointer:\n            struct:\n              - {name: Method, type: string}\n"
                     "              - name: URL\n                type:\n                  pointer:\n"
                     "                    name: net/url.URL\n                    struct:\n";
  for (const std::string &f : url_fields)
    text += "                      - {name: " + f + "}\n";
  return text + "    capture: [r.URL.Path]\n";
}

} // namespace

TEST_CASE("a layout declared for a named type is checked against its descriptor, the difference in one line") {
  // Go 1.19's net/url.URL starts Scheme, Opaque, User, Host, Path, RawPath.
  std::vector<std::string> right = {"Scheme, type: string", "Opaque, type: string", "User, type: \"*net/url.Userinfo\"",
                                    "Host, type: string", "Path, type: string", "RawPath, type: string"};
  std::string dir = e2e::temp_dir("typedesc-layout-ok");
  std::ofstream(dir + "/spec.yaml") << url_layout_spec(right);
  auto ok = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("typedesc_stripped"), "-o", dir + "/out"});
  INFO(ok.err);
  CHECK(ok.status == 0);

  std::vector<std::string> swapped = right;
  std::swap(swapped[3], swapped[4]); // Path before Host
  std::string bad_dir = e2e::temp_dir("typedesc-layout-swapped");
  std::ofstream(bad_dir + "/spec.yaml") << url_layout_spec(swapped);
  auto bad = e2e::run({e2e::weave(), bad_dir + "/spec.yaml", e2e::fixture("typedesc_stripped"), "-o", bad_dir + "/out"});
  CHECK(bad.status == 1);
  CHECK(bad.err.find("error[layout-mismatch]") != std::string::npos);
  CHECK(bad.err.find("field Path of net/url.URL is at offset 56 in the binary, at 40 as declared") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(bad_dir + "/out"));

  std::vector<std::string> retyped = right;
  retyped[2] = "User, type: unsafe.Pointer";
  std::string retyped_dir = e2e::temp_dir("typedesc-layout-retyped");
  std::ofstream(retyped_dir + "/spec.yaml") << url_layout_spec(retyped);
  auto wrong = e2e::run(
      {e2e::weave(), retyped_dir + "/spec.yaml", e2e::fixture("typedesc_stripped"), "-o", retyped_dir + "/out"});
  CHECK(wrong.status == 1);
  CHECK(wrong.err.find("field User of net/url.URL is a *net/url.Userinfo (8 bytes) in the binary, declared "
                       "unsafe.Pointer (8 bytes)") != std::string::npos);

  std::vector<std::string> unknown = right;
  unknown[5] = "RawPth, type: string";
  std::string unknown_dir = e2e::temp_dir("typedesc-layout-unknown-field");
  std::ofstream(unknown_dir + "/spec.yaml") << url_layout_spec(unknown);
  auto missing = e2e::run(
      {e2e::weave(), unknown_dir + "/spec.yaml", e2e::fixture("typedesc_stripped"), "-o", unknown_dir + "/out"});
  CHECK(missing.status == 1);
  CHECK(missing.err.find("net/url.URL has no field RawPth in the binary") != std::string::npos);
  CHECK(missing.err.find("did you mean RawPath") != std::string::npos);
}

// Last: without a newer Go it exits with ctest's skip code, and the cases after it would not run.
TEST_CASE("a stripped binary of the newer Go (internal/abi.Type, swiss maps): the same, values matched") {
  e2e::require_bpf();
  if (!std::filesystem::exists(e2e::fixture("typedesc_newer_stripped"))) {
    MESSAGE("skipped: no newer Go than the pinned one to build the fixture with (WEAVE_GO_NEWER)");
    std::exit(77);
  }
  CHECK(trace_and_compare("typedesc_newer_stripped") == 3 * 9 + 2 * 9);
  // Go 1.26 moved Fragment before RawQuery and RawPath: the layout of earlier Go is refused.
  std::string dir = e2e::temp_dir("typedesc-layout-newer");
  std::ofstream(dir + "/spec.yaml") << url_layout_spec({"Scheme, type: string", "Opaque, type: string",
                                                        "User, type: \"*net/url.Userinfo\"", "Host, type: string",
                                                        "Path, type: string", "RawPath, type: string"});
  auto old = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("typedesc_newer_stripped"), "-o", dir + "/out"});
  CHECK(old.status == 1);
  CHECK(old.err.find("field RawPath of net/url.URL is at offset 104 in the binary, at 72 as declared") !=
        std::string::npos);
}
