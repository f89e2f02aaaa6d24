// End to end, for real: type assertions in capture paths. The fixture (tests/e2e/assert) passes
// interfaces and returns errors whose dynamic type changes call by call, and prints each one's %T
// and fields; every value the tracer shows behind x.(T) must be the program's own, a value of
// another dynamic type must print as <not T: its type> (never a reinterpretation of its bytes),
// a nil one as <nil>, and a when: condition over an asserted value holds only for that type. On
// amd64 (registers), 386 (the stack, itab._type at +4) and a PIE (descriptors moved by the load
// bias, which the BPF program adds from its attach point's address).
#include "contents_maps.h"
#include "harness.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using nlohmann::json;

namespace {

const char *kSpec = "probes:\n"
                    "  - function: main.Open\n"
                    "    capture: [k]\n"
                    "    return: true\n"
                    "    capture_at_return: ['err.(*io/fs.PathError).Path', 'err.(*io/fs.PathError).Op',\n"
                    "                        '*err.(*main.QuotaError)']\n"
                    "  - function: main.Measure\n"
                    "    capture: [k, 's.(main.Point).X', 's.(main.Point).Y', 's.(*main.Box).Label', 's.(*main.Box).W',\n"
                    "              's.(main.Circle)']\n"
                    "  - function: main.Keep\n"
                    "    capture: [k, 'v.(main.Point)', 'v.(*main.Box).H']\n"
                    "    when: 'v.(*main.Box).Label == \"keep\" || v.(main.Point).Y != 6'\n";

// kSpec for a stripped binary: the signatures declared (main.Shape by name, laid out from its
// descriptor), each asserted type's layout and descriptor from the runtime type descriptors.
const char *kStrippedSpec =
    "probes:\n"
    "  - function: main.Open\n"
    "    params: [{name: name, type: string}, {name: k, type: int}]\n"
    "    results: [{name: n, type: int}, {name: err, type: error}]\n"
    "    capture: [k]\n"
    "    return: true\n"
    "    capture_at_return: ['err.(*io/fs.PathError).Path', 'err.(*io/fs.PathError).Op',\n"
    "                        '*err.(*main.QuotaError)']\n"
    "  - function: main.Measure\n"
    "    params: [{name: s, type: main.Shape}, {name: k, type: int}]\n"
    "    results: [{name: ~r0, type: int}]\n"
    "    capture: [k, 's.(main.Point).X', 's.(main.Point).Y', 's.(*main.Box).Label', 's.(*main.Box).W',\n"
    "              's.(main.Circle)']\n"
    "  - function: main.Keep\n"
    "    params: [{name: v, type: 'interface {}'}, {name: k, type: int}]\n"
    "    results: [{name: ~r0, type: int}]\n"
    "    capture: [k, 'v.(main.Point)', 'v.(*main.Box).H']\n"
    "    when: 'v.(*main.Box).Label == \"keep\" || v.(main.Point).Y != 6'\n";

std::string build(const std::string &dir, const std::string &fixture, const char *spec = kSpec) {
  std::ofstream(dir + "/spec.yaml") << spec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  return dir + "/out/tracer";
}

// The tracer's name for a type the program's %T prints: full package paths ("*fs.PathError" is
// "*io/fs.PathError"), and "<nil>" for a nil interface.
std::string full_name(const std::string &go_t) {
  if (go_t == "*fs.PathError")
    return "*io/fs.PathError";
  if (go_t == "*errors.errorString")
    return "*errors.errorString";
  return go_t;
}

// What a capture x.(T).F must show for a value whose dynamic type is `actual`: the value when the
// type is T (`want`), else the marker.
json expected(const json &truth, const std::string &type, const json &want) {
  if (truth["nil"] == true)
    return nullptr;
  std::string actual = full_name(truth["type"].get<std::string>());
  if (actual == type)
    return want;
  return json{{"not", type}, {"type", actual}};
}

void check_assertions(const std::string &fixture, const char *spec = kSpec) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir(fixture + "-assert");
  std::string tracer = build(dir, fixture, spec);
  auto traced = e2e::run({tracer, "--format", "json", "-o", dir + "/events.jsonl", "--", e2e::fixture(fixture),
                          "-rounds", "3", "-dir", "/nonexistent-weave"},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(traced.out);
  REQUIRE(truth.size() == 3 * 8 * 3);
  std::map<std::pair<std::string, int>, json> by_call; // (fn, k) -> what the program recorded
  for (const json &t : truth)
    by_call[{t["fn"].get<std::string>(), t["k"].get<int>()}] = t;
  std::vector<json> events = e2e::json_lines(e2e::read_file(dir + "/events.jsonl"));

  int opens = 0, measures = 0, path_errors = 0, quota_errors = 0, points = 0, boxes = 0, others = 0;
  std::set<int> kept;
  std::map<std::string, json> last_entry; // function -> its last entry event (returns follow their entries)
  for (const json &e : events) {
    INFO(e.dump());
    std::string fn = e["function"].get<std::string>();
    CHECK(!e.contains("faults"));
    CHECK(!e.contains("truncated")); // the paths Open fails on are short: /nonexistent-weave/missing-N.txt
    if (e["kind"] == "entry") {
      last_entry[fn] = e;
    }
    if (fn == "main.Open" && e["kind"] == "return") {
      ++opens;
      int k = last_entry[fn]["args"]["k"].get<int>();
      const json &t = by_call.at({"Open", k});
      const json &r = e["results"];
      CHECK(r["err.(*io/fs.PathError).Path@return"] == expected(t, "*io/fs.PathError", t.value("path", json())));
      CHECK(r["err.(*io/fs.PathError).Op@return"] == expected(t, "*io/fs.PathError", t.value("op", json())));
      json quota = t["type"] == "*main.QuotaError" ? json{{"User", t["user"]}, {"Limit", t["limit"]}} : json();
      CHECK(r["*err.(*main.QuotaError)@return"] == expected(t, "*main.QuotaError", quota));
      path_errors += t["type"] == "*fs.PathError";
      quota_errors += t["type"] == "*main.QuotaError";
    } else if (fn == "main.Measure") {
      ++measures;
      int k = e["args"]["k"].get<int>();
      const json &t = by_call.at({"Measure", k});
      const json &a = e["args"];
      CHECK(a["s.(main.Point).X"] == expected(t, "main.Point", t.value("x", json())));
      CHECK(a["s.(main.Point).Y"] == expected(t, "main.Point", t.value("y", json())));
      CHECK(a["s.(*main.Box).Label"] == expected(t, "*main.Box", t.value("label", json())));
      CHECK(a["s.(*main.Box).W"] == expected(t, "*main.Box", t.value("w", json())));
      CHECK(a["s.(main.Circle)"] == expected(t, "main.Circle", json{{"R", t.value("r", json())}}));
      points += t["type"] == "main.Point";
      boxes += t["type"] == "*main.Box";
      others += t["type"] == "main.Circle";
    } else if (fn == "main.Keep") {
      int k = e["args"]["k"].get<int>();
      kept.insert(k);
      const json &t = by_call.at({"Keep", k});
      const json &a = e["args"];
      json point = t["type"] == "main.Point" ? json{{"X", t["x"]}, {"Y", t["y"]}} : json();
      CHECK(a["v.(main.Point)"] == expected(t, "main.Point", point));
      CHECK(a["v.(*main.Box).H"] == expected(t, "*main.Box", t.value("h", json())));
    }
  }
  CHECK(opens == 3 * 8);
  CHECK(measures == 3 * 8);
  CHECK(path_errors == 6);
  CHECK(quota_errors == 6);
  CHECK(points == 6);
  CHECK(boxes == 6);
  CHECK(others == 6);
  // when: 'v.(*main.Box).Label == "keep" || v.(main.Point).Y != 6': a *Box, or a Point whose Y is
  // not 6; a string (another type) matches neither comparison, != included.
  std::set<int> want_kept;
  for (const json &t : truth)
    if (t["fn"] == "Keep" && ((t["type"] == "*main.Box" && t["label"] == "keep") ||
                              (t["type"] == "main.Point" && t["y"] != 6)))
      want_kept.insert(t["k"].get<int>());
  CHECK(want_kept.size() >= 8);
  CHECK(kept == want_kept);
}

} // namespace

TEST_CASE("type assertions: the asserted type's fields, <not T: actual> and <nil> otherwise, and in when:") {
  check_assertions("assert");
}

TEST_CASE("type assertions on 386: the itab's _type at +4, every value on the stack") {
  check_assertions("assert_386");
}

TEST_CASE("type assertions in a PIE: the descriptor's address moved by the load bias") {
  check_assertions("assert_pie");
}

TEST_CASE("type assertions stripped: the asserted type's layout and descriptor from the runtime type descriptors") {
  for (const char *fixture : {"assert_stripped", "assert_386_stripped", "assert_pie_stripped", "assert_newer_stripped"}) {
    CAPTURE(fixture);
    if (!std::filesystem::exists(e2e::fixture(fixture))) {
      MESSAGE("skipped: no " << std::string(fixture) << " (WEAVE_GO_NEWER is not installed, or a matrix row)");
      continue;
    }
    check_assertions(fixture, kStrippedSpec);
  }
}

TEST_CASE("type assertions in text: the value, or the marker naming the actual type") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("assert-text");
  std::string tracer = build(dir, "assert");
  auto traced = e2e::run({tracer, "-o", dir + "/events.txt", "--", e2e::fixture("assert"), "-rounds", "1", "-dir", "/nonexistent-weave"},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::string text = e2e::read_file(dir + "/events.txt");
  INFO(text);
  std::vector<json> truth = e2e::json_lines(traced.out);
  for (const json &t : truth) {
    if (t["fn"] != "Measure")
      continue;
    int k = t["k"].get<int>();
    std::string type = t["type"].get<std::string>();
    // Each capture: its value when the type is the asserted one, else the marker.
    auto shown = [&](const std::string &asserted, const std::string &value) {
      if (t["nil"] == true)
        return std::string("<nil>");
      return type == asserted ? value : "<not " + asserted + ": " + type + ">";
    };
    std::string want = fmt::format(
        "k={}, s.(main.Point).X={}, s.(main.Point).Y={}, s.(*main.Box).Label={}, s.(*main.Box).W={}, s.(main.Circle)={})", k,
        shown("main.Point", std::to_string(t.value("x", 0))), shown("main.Point", std::to_string(t.value("y", 0))),
        shown("*main.Box", "\"" + t.value("label", std::string()) + "\""), shown("*main.Box", std::to_string(t.value("w", 0))),
        shown("main.Circle", fmt::format("{{R={}}}", t.value("r", 0))));
    CAPTURE(k);
    CHECK(text.find(want) != std::string::npos);
  }
}

TEST_CASE("type assertions: mistakes are refused where they are written, with the names that are near") {
  std::string dir = e2e::temp_dir("assert-refused");
  struct Case {
    std::string capture, message, hint;
  };
  for (const Case &c : {
           Case{"'err.(*os.PathError).Path'", "spec.yaml:5:14: error[unknown-type]: err.(*os.PathError): the binary has no type *os.PathError",
                "did you mean *io/fs.PathError?"},
           Case{"'k.(main.Point).X'", "spec.yaml:5:12: error[not-an-interface]: k.(main.Point): k is int (int), not an interface",
                "a type assertion .(T) applies to an interface or error value"},
           Case{"'err.(main.Pont).X'", "spec.yaml:5:14: error[unknown-type]: err.(main.Pont): the binary has no type main.Pont",
                "did you mean main.Point"},
           Case{"'err.(*main.QuotaError).Usr'", "spec.yaml:5:32: error[unknown-field]: err.(*main.QuotaError) (main.QuotaError) has no field Usr", "User"},
           Case{"'err.(*main.QuotaError'", "spec.yaml:5:30: error[bad-expression]: expected ')' to close the type assertion", ""},
       }) {
    CAPTURE(c.capture);
    std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Open\n    return: true\n"
                                         "    capture_at_return:\n      - " +
                                             c.capture + "\n";
    auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("assert"), "-o", dir + "/out"});
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.err.find(c.hint) != std::string::npos);
  }
}

TEST_CASE("when_return over asserted results: the calls whose error is of that type and matches, at every RET") {
  e2e::require_bpf();
  for (const char *fixture : {"assert", "assert_386", "assert_pie"}) {
    CAPTURE(fixture);
    std::string dir = e2e::temp_dir(std::string(fixture) + "-assert-return");
    std::ofstream(dir + "/spec.yaml")
        << "probes:\n  - function: main.Open\n    capture: [k]\n    return: true\n"
           "    when_return: 'err.(*io/fs.PathError).Op == \"open\" || err.(*main.QuotaError).Limit > 110'\n";
    auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
    INFO(built.err);
    REQUIRE(built.status == 0);
    auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "-o", dir + "/events.jsonl", "--",
                            e2e::fixture(fixture), "-rounds", "3", "-dir", "/nonexistent-weave"},
                           120000);
    INFO(traced.err);
    REQUIRE(traced.status == 0);
    std::set<int> want, got;
    for (const json &t : e2e::json_lines(traced.out))
      if (t["fn"] == "Open" && ((t["type"] == "*fs.PathError" && t["op"] == "open") ||
                                (t["type"] == "*main.QuotaError" && t["limit"] > 110)))
        want.insert(t["k"].get<int>());
    int k = -1;
    for (const json &e : e2e::json_lines(e2e::read_file(dir + "/events.jsonl"))) {
      INFO(e.dump());
      if (e["kind"] == "entry") {
        k = e["args"]["k"].get<int>();
        continue;
      }
      got.insert(k);
      const json &r = e["results"];
      CHECK(!e.contains("faults"));
      bool path = r["err.(*io/fs.PathError).Op"] == "open";
      bool quota = r["err.(*main.QuotaError).Limit"].is_number() && r["err.(*main.QuotaError).Limit"] > 110;
      CHECK(path != quota); // one of them held, and the other shows the marker
      CHECK((path ? r["err.(*main.QuotaError).Limit"] : r["err.(*io/fs.PathError).Op"]).contains("not"));
    }
    CHECK(want.size() >= 6);
    CHECK(got == want);
  }
}

// contents: true: the value behind an error or an any, shown as its dynamic type's, compared with
// what the program itself saw by reflection (its %#v is in the record, for the reader): a custom
// error behind a pointer, one wrapped with %w (its message, and the wrapped error's type), a
// *fs.PathError, an error struct held by value, a nil *QuotaError in a non-nil error (nil), a nil
// error; a struct, a pointer and a string behind an any, a type contents_types names, and one no
// itab names, which prints as the marker and is never read.
namespace {

const char *kContentsSpec = "probes:\n"
                            "  - function: main.Fail\n"
                            "    capture: [k]\n"
                            "    return: true\n"
                            "    contents: true\n"
                            "  - function: main.Hold\n"
                            "    capture: [k, v]\n"
                            "    contents: true\n"
                            "    contents_types: [main.Listed]\n";

// The value the tracer must show for what the program recorded (JSON output).
json expected_contents(const json &t) {
  if (t["nil"] == true)
    return nullptr;
  std::string type = t["type"].get<std::string>();
  if (type == "main.Lonely") // in no itab and not listed: its bytes are not read
    return json{{"type", type}, {"contents", "not known"}};
  if (t.contains("nilptr"))
    return json{{"type", type}, {"value", nullptr}};
  if (t.contains("value")) // a string behind an any: shown by its descriptor's kind
    return json{{"type", type}, {"value", t["value"]}};
  json fields = json::object();
  for (const auto &[name, v] : t["fields"].items())
    fields[name] = v;
  return json{{"type", type}, {"value", fields}};
}

// Interface fields inside the value show their dynamic type (and, for an error, its message):
// compared by type, which is what the program recorded of them.
void compare_contents(const json &got, const json &want) {
  if (!want.is_object() || !want.contains("value") || !want["value"].is_object()) {
    CHECK(got == want);
    return;
  }
  REQUIRE(got.is_object());
  CHECK(got["type"] == want["type"]);
  REQUIRE(got.contains("value"));
  const json &value = got["value"];
  CHECK(value.size() == want["value"].size());
  for (const auto &[name, v] : want["value"].items()) {
    CAPTURE(name);
    REQUIRE(value.contains(name));
    if (v.is_object())
      CHECK(value[name]["type"] == v["type"]);
    else
      CHECK(value[name] == v);
  }
}

// The same probes for a stripped binary (no DWARF, no .symtab): the signatures declared, the
// candidate types from moduledata.itablinks, their layouts from the runtime's type descriptors.
const char *kContentsStrippedSpec = "probes:\n"
                                    "  - function: main.Fail\n"
                                    "    params: [{name: k, type: int}]\n"
                                    "    results: [{name: ~r0, type: error}]\n"
                                    "    capture: [k]\n"
                                    "    return: true\n"
                                    "    contents: true\n"
                                    "  - function: main.Hold\n"
                                    "    params: [{name: v, type: 'interface {}'}, {name: k, type: int}]\n"
                                    "    results: [{name: ~r0, type: int}]\n"
                                    "    capture: [k, v]\n"
                                    "    contents: true\n"
                                    "    contents_types: [main.Listed]\n";

// Traces the fixture's contents calls and compares every value with the program's record; returns
// the tracer's events.
std::vector<json> check_contents(const std::string &fixture, const char *spec = kContentsSpec) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir(fixture + "-contents");
  std::ofstream(dir + "/spec.yaml") << spec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", "json", "-o", dir + "/events.jsonl", "--",
                          e2e::fixture(fixture), "-contents", "-rounds", "3"},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::vector<json> truth = e2e::json_lines(traced.out);
  REQUIRE(truth.size() == 3 * 6 * 2);
  std::map<std::pair<std::string, int>, json> by_call;
  for (const json &t : truth)
    by_call[{t["fn"].get<std::string>(), t["k"].get<int>()}] = t;
  int fails = 0, holds = 0;
  std::set<std::string> seen;
  int k = -1;
  for (const json &e : e2e::json_lines(e2e::read_file(dir + "/events.jsonl"))) {
    INFO(e.dump());
    CHECK(!e.contains("faults"));
    std::string fn = e["function"].get<std::string>();
    if (fn == "main.Fail" && e["kind"] == "entry") {
      k = e["args"]["k"].get<int>();
      continue;
    }
    const json &t = fn == "main.Fail" ? by_call.at({"Fail", k}) : by_call.at({"Hold", e["args"]["k"].get<int>()});
    INFO("the program's own %#v: " << t["gov"].get<std::string>());
    if (fn == "main.Fail") {
      ++fails;
      compare_contents(e["results"]["~r0"], expected_contents(t));
    } else {
      ++holds;
      compare_contents(e["args"]["v"], expected_contents(t));
    }
    seen.insert(t.value("type", std::string("nil")));
  }
  CHECK(fails == 3 * 6);
  CHECK(holds == 3 * 6);
  CHECK(seen == std::set<std::string>{"nil", "*main.QuotaError", "*fmt.wrapError", "*io/fs.PathError", "main.Plain",
                                      "main.Point", "string", "*main.Box", "main.Listed", "main.Lonely"});
  return e2e::json_lines(e2e::read_file(dir + "/events.jsonl"));
}

} // namespace

TEST_CASE("contents: an error's and an any's value as its dynamic type, equal to the program's own") {
  check_contents("assert");
}

TEST_CASE("contents on 386: the itab's _type at +4, interfaces on the stack") {
  check_contents("assert_386");
}

TEST_CASE("contents in a PIE: candidate descriptors moved by the load bias") {
  check_contents("assert_pie");
}

namespace {

// The text printer's contents, in its own output or in --graph's call lines (`graph`), which print
// values the same way: the fixture's values for k = 1..6 are fixed by construction.
void check_contents_text(bool graph) {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir(graph ? "contents-graph" : "contents-text");
  std::ofstream(dir + "/spec.yaml") << kContentsSpec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("assert"), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::vector<std::string> argv = {dir + "/out/tracer", "-o", dir + "/events.txt"};
  if (graph)
    argv.push_back("--graph");
  for (const std::string &arg : {std::string("--"), e2e::fixture("assert"), std::string("-contents"),
                                 std::string("-rounds"), std::string("1")})
    argv.push_back(arg);
  auto traced = e2e::run(argv, 120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  std::string text = e2e::read_file(dir + "/events.txt");
  INFO(text);
  // k = 1..6 once each, as the fixture makes them.
  for (const std::string &want : {
           std::string("~r0=*fmt.wrapError{msg=\"open x1: quota of w: -1\", err=*main.QuotaError(0x"),
           std::string("~r0=*io/fs.PathError{Op=\"stat\", Path=\"/p/2\", Err=*errors.errorString(\"file does not "
                       "exist\")}"),
           std::string("~r0=nil"),
           std::string("~r0=main.Plain{Code=404, Text=\"plain 4\", Ok=true}"),
           std::string("~r0=*main.QuotaError(nil)"),
           std::string("~r0=*main.QuotaError{User=\"bob6\", Limit=6}"),
           std::string("v=string(\"any1\")"),
           std::string("v=*main.Box{W=2, H=4, Label=\"b2\"}"),
           std::string("v=main.Listed{Name=\"l3\", Count=9}"),
           std::string("v=<contents not known for main.Lonely>"),
           std::string("v=nil"),
           std::string("v=main.Point{X=6, Y=-6}"),
       }) {
    CAPTURE(want);
    CHECK(text.find(want) != std::string::npos);
  }
}

} // namespace

TEST_CASE("contents in text: *T{fields}, the wrapped error's type and message, the marker") {
  check_contents_text(false);
}

TEST_CASE("contents in --graph: the call lines show the same values as the text output") {
  check_contents_text(true);
}

TEST_CASE("contents_types: a type the binary does not have is refused where it is written") {
  std::string dir = e2e::temp_dir("contents-refused");
  std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Hold\n    capture: [v]\n    contents: true\n"
                                       "    contents_types: [main.Lonly]\n";
  auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("assert"), "-o", dir + "/out"});
  INFO(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.find("spec.yaml:5:21: error[unknown-type]: contents_types: the binary has no type main.Lonly (") !=
        std::string::npos);
  CHECK(r.err.find("name it as the binary does, by its full package path") != std::string::npos);
}

TEST_CASE("stripped: a type the binary has no descriptor of is refused where it is written, with the names near") {
  std::string dir = e2e::temp_dir("contents-refused-stripped");
  struct Case {
    std::string lines, message, hint;
  };
  for (const Case &c : {
           Case{"    capture: ['v.(*os.PathError).Path']\n",
                "spec.yaml:5:19: error[unknown-type]: v.(*os.PathError): the binary has no type *os.PathError",
                "did you mean *io/fs.PathError?"},
           Case{"    capture: [v]\n    contents: true\n    contents_types: [main.Lonly]\n",
                "spec.yaml:7:21: error[unknown-type]: contents_types: the binary has no type main.Lonly (",
                "name it as the binary does, by its full package path"},
       }) {
    CAPTURE(c.lines);
    std::ofstream(dir + "/spec.yaml") << "probes:\n  - function: main.Hold\n"
                                         "    params: [{name: v, type: 'interface {}'}, {name: k, type: int}]\n"
                                         "    results: [{name: ~r0, type: int}]\n" +
                                             c.lines;
    auto r = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture("assert_stripped"), "-o", dir + "/out"});
    INFO(r.err);
    CHECK(r.status == 1);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.err.find(c.hint) != std::string::npos);
  }
}

TEST_CASE("weave trace --contents --when-return: contents: true, and ~r0 != nil still compares the type word") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("contents-trace");
  auto r = e2e::run({"env", "XDG_CACHE_HOME=" + dir + "/cache", e2e::weave(), "trace", "--format", "json", "-o",
                     dir + "/events.jsonl", e2e::fixture("assert"), "main.Fail", "--contents", "--when-return",
                     "~r0 != nil", "--", "-contents",
                     "-rounds", "1"},
                    120000);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("    contents: true\n") != std::string::npos); // the spec it printed
  std::map<int, json> truth;
  for (const json &t : e2e::json_lines(r.out))
    if (t["fn"] == "Fail")
      truth[t["k"].get<int>()] = t;
  REQUIRE(truth.size() == 6);
  int k = -1, returns = 0;
  for (const json &e : e2e::json_lines(e2e::read_file(dir + "/events.jsonl"))) {
    INFO(e.dump());
    if (e["kind"] == "entry") {
      k = e["args"]["k"].get<int>();
      continue;
    }
    ++returns;
    CHECK(truth.at(k)["nil"] == false);
    compare_contents(e["results"]["~r0"], expected_contents(truth.at(k)));
  }
  CHECK(returns == 5); // every call but k = 3's, whose error is nil (k = 5's is a nil *QuotaError: not nil)
}

// contents: true with maps and slices: behind an any (named by contents_types: an unnamed map or
// slice type is never converted to a non-empty interface, so no itab names it) and as fields of a
// struct shown by value and behind a pointer. The fixture prints each value's %#v, which sorts a
// map's keys; the tracer prints a map's pairs sorted by key too, so each value it shows, turned into
// Go's syntax here, must be the program's %#v exactly. A value with more pairs or elements than
// slice_max (4) is cut: then every pair it shows must be one the program had, with its value, as
// many as the bound allows, in key order, and a slice's elements must be its first ones.
namespace {

const std::string kMapsSpec = contents_maps::spec(false);
using contents_maps::cut;
using contents_maps::go_syntax;
using contents_maps::kMapsSliceMax;
using contents_maps::map_types;
using contents_maps::without_nil;
using ojson = contents_maps::ojson;

// A value the tracer shows cut, against all the program had (`all`: [key %#v, value %#v] pairs of
// a map, element %#v of a slice): as many as the bound allows, each the program's, a map's pairs
// in the order of their keys.
void check_cut(const std::string &type, const ojson &v, const json &all) {
  REQUIRE(all.is_array());
  CHECK(v["len"].get<size_t>() == all.size());
  CHECK(v["items"].size() == std::min(all.size(), kMapsSliceMax));
  int cuts = 0;
  if (type.starts_with("[]")) {
    for (size_t i = 0; i < v["items"].size(); ++i)
      CHECK(go_syntax(type.substr(2), v["items"][i], cuts) == all[i].get<std::string>());
    return;
  }
  auto [key, value] = map_types(type);
  std::map<std::string, std::string> pairs;
  for (const json &p : all)
    pairs[p[0].get<std::string>()] = p[1].get<std::string>();
  std::set<std::string> shown;
  for (size_t i = 0; i < v["items"].size(); ++i) {
    std::string k = go_syntax(key, v["items"][i]["key"], cuts);
    CAPTURE(k);
    REQUIRE(pairs.count(k));
    CHECK(go_syntax(value, v["items"][i]["value"], cuts) == pairs[k]);
    CHECK(shown.insert(k).second); // each pair once
    if (i > 0) // in key order, as fmt sorts them
      CHECK(v["items"][i - 1]["key"] < v["items"][i]["key"]);
  }
}

// A copy of the tracer's value with the first element or pair of its first non-empty map or slice
// changed, as a tracer that read one element wrong would show it.
bool mutate(ojson &v) {
  if (v.is_object() && v.contains("items") && !v["items"].empty()) {
    ojson &item = v["items"][0];
    ojson &leaf = item.is_object() && item.contains("value") ? item["value"] : item;
    if (leaf.is_number())
      leaf = leaf.get<int64_t>() + 1;
    else if (leaf.is_string())
      leaf = leaf.get<std::string>() + "!";
    else if (leaf.is_object() && leaf.contains("X"))
      leaf["X"] = leaf["X"].get<int64_t>() + 1;
    else
      return false;
    return true;
  }
  if (v.is_object())
    for (auto &[name, member] : v.items())
      if (mutate(member))
        return true;
  return false;
}

struct MapsRun {
  std::vector<json> truth;
  std::string events;
};

MapsRun run_maps(const std::string &fixture, const std::string &format, int rounds,
                 const std::string &spec = kMapsSpec) {
  std::string dir = e2e::temp_dir(fixture + "-contents-maps-" + format);
  std::ofstream(dir + "/spec.yaml") << spec;
  auto built = e2e::run({e2e::weave(), dir + "/spec.yaml", e2e::fixture(fixture), "-o", dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  auto traced = e2e::run({dir + "/out/tracer", "--format", format, "-o", dir + "/events", "--", e2e::fixture(fixture),
                          "-maps", "-rounds", std::to_string(rounds)},
                         120000);
  INFO(traced.err);
  REQUIRE(traced.status == 0);
  return {e2e::json_lines(traced.out), e2e::read_file(dir + "/events")};
}

// Checks every value against the program's own; returns the events, each with whether a value of
// it was cut (which pairs a cut map shows depends on the run's hash seed).
std::vector<std::pair<ojson, bool>> check_contents_maps(const std::string &fixture, const std::string &spec = kMapsSpec) {
  e2e::require_bpf();
  std::vector<std::pair<ojson, bool>> shown;
  MapsRun run = run_maps(fixture, "json", 3, spec);
  REQUIRE(run.truth.size() == 3 * 10 * 2);
  std::map<std::pair<std::string, int>, json> by_call;
  for (const json &t : run.truth)
    by_call[{t["fn"].get<std::string>(), t["k"].get<int>()}] = t;
  int whole = 0, cut_values = 0, mutations = 0, events = 0;
  std::set<std::string> types;
  std::istringstream lines(run.events);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty())
      continue;
    ojson e = ojson::parse(line);
    INFO(line);
    CHECK(!e.contains("faults"));
    ++events;
    std::string fn = e["function"].get<std::string>() == "main.Stash" ? "Stash" : "Shelve";
    const json &t = by_call.at({fn, e["args"]["k"].get<int>()});
    INFO("the program's own %#v: " << t["gov"].get<std::string>());
    const ojson &v = e["args"]["v"];
    REQUIRE(v.is_object());
    std::string type = t["type"].get<std::string>();
    types.insert(type);
    CHECK(v["type"] == type);
    REQUIRE(v.contains("value"));
    int cuts = 0;
    std::string text = go_syntax(type, v["value"], cuts);
    shown.push_back({e, cuts > 0});
    if (cuts == 0) {
      ++whole;
      CHECK(text == without_nil(t["gov"].get<std::string>()));
      // The comparison fails on a wrong element: the same value with one element changed.
      ojson wrong = v["value"];
      if (mutate(wrong)) {
        ++mutations;
        CHECK(go_syntax(type, wrong, cuts) != without_nil(t["gov"].get<std::string>()));
      }
      continue;
    }
    ++cut_values;
    const ojson &value = v["value"];
    if (fn == "Stash") {
      check_cut(type, value, t["all"]);
      continue;
    }
    // Inventory: its Name whole, each of Tags and Counts whole or cut.
    CHECK(value["Name"].get<std::string>() == t["fields"]["Name"].get<std::string>());
    for (const char *field : {"Tags", "Counts"}) {
      CAPTURE(field);
      std::string field_type = field == std::string("Tags") ? "map[string]int" : "[]int";
      if (cut(value[field]))
        check_cut(field_type, value[field], t["all"][field]);
      else
        CHECK(value[field]["items"].size() == (t["all"][field].is_null() ? 0 : t["all"][field].size()));
    }
  }
  CHECK(events == 3 * 10 * 2);
  CHECK(whole >= 30);
  CHECK(cut_values >= 12);
  CHECK(mutations >= 20);
  CHECK(types == std::set<std::string>{"map[string]string", "[]int", "[]string", "map[int]main.Point",
                                       "main.Inventory", "*main.Inventory"});
  return shown;
}

} // namespace

TEST_CASE("contents with maps and slices: each value is the program's own %#v, pairs sorted by key, cut ones a subset") {
  check_contents_maps("assert");
}

TEST_CASE("contents with maps and slices on 386: the same values, read from the stack with 4-byte words") {
  check_contents_maps("assert_386");
}

TEST_CASE("contents with maps and slices in text: pairs in key order, and ... where the bound cut a value") {
  e2e::require_bpf();
  MapsRun run = run_maps("assert", "text", 1);
  INFO(run.events);
  // k = 1..10 once each, fixed by construction (tests/e2e/assert: stashed, shelved).
  for (const std::string &want : {
           std::string("v=map[string]string{len=3, items=[{key=\"a\", value=\"x\"}, {key=\"b\", value=\"v10\"}, "
                       "{key=\"c\", value=\"70\"}]})"),
           std::string("v=map[string]string{len=0, items=[]})"),
           std::string("v=[]int{len=3, cap=3, items=[4, -4, 12]})"),
           std::string("v=[]int{len=9, cap=9, items=[500, 501, 502, 503, ...]})"),
           std::string("v=[]string{len=3, cap=3, items=[\"s6\", \"\", \"z\"]})"),
           std::string("v=[]int{len=0, cap=0, items=[]})"),
           std::string("v=map[int]main.Point{len=3, items=[{key=-8, value={X=2, Y=-8}}, {key=0, value={X=0, Y=0}}, "
                       "{key=8, value={X=8, Y=1}}]})"),
           std::string("v=main.Inventory{Name=\"inv3\", Tags={len=2, items=[{key=\"blue\", value=-3}, {key=\"red\", "
                       "value=3}]}, Counts={len=2, cap=2, items=[3, 4]}})"),
           std::string("v=*main.Inventory{Name=\"inv8\", Tags={len=0, items=[]}, Counts={len=2, cap=2, items=[8, 9]}})"),
       }) {
    CAPTURE(want);
    CHECK(run.events.find(want) != std::string::npos);
  }
  // The 11 pairs of k = 1's map: 4 shown, sorted, then the marker.
  size_t at = run.events.find("k=1, v=map[string]string{len=11, items=[{key=\"key");
  REQUIRE(at != std::string::npos);
  CHECK(run.events.find("}, ...]})", at) < run.events.find('\n', at));
}

namespace {

// An event's values with the addresses the two runs may place differently (a pointer shown by its
// address, an interface's data word) made one: every other value, each type name and each field
// included, must be the same.
json without_addresses(const json &v) {
  if (v.is_string() && v.get<std::string>().starts_with("0x"))
    return "0x";
  if (v.is_string()) { // "*main.QuotaError(0x...)" in text-like values
    std::string s = v.get<std::string>();
    for (size_t at = s.find("(0x"); at != std::string::npos; at = s.find("(0x", at + 1))
      s.erase(at + 3, s.find_first_not_of("0123456789abcdef", at + 3) - (at + 3));
    return s;
  }
  json out = v;
  if (v.is_object() || v.is_array())
    for (auto it = out.begin(); it != out.end(); ++it)
      *it = without_addresses(*it);
  return out;
}

// The stripped build's contents as the DWARF build's: the same events in the same order, value for
// value (the fixture's calls are one goroutine's, fixed by construction).
void check_stripped_equals_dwarf(const std::vector<json> &stripped, const std::vector<json> &dwarf) {
  REQUIRE(stripped.size() == dwarf.size());
  for (size_t i = 0; i < stripped.size(); ++i) {
    INFO("stripped: " << stripped[i].dump());
    INFO("DWARF:    " << dwarf[i].dump());
    CHECK(stripped[i]["function"] == dwarf[i]["function"]);
    CHECK(stripped[i]["kind"] == dwarf[i]["kind"]);
    for (const char *part : {"args", "results"})
      CHECK(without_addresses(stripped[i].value(part, json())) == without_addresses(dwarf[i].value(part, json())));
  }
}

} // namespace

TEST_CASE("contents stripped: candidates from moduledata.itablinks, layouts from the type descriptors, as with DWARF") {
  struct Pair {
    const char *stripped, *dwarf;
  };
  for (const Pair &p : {Pair{"assert_stripped", "assert"}, Pair{"assert_386_stripped", "assert_386"},
                        Pair{"assert_pie_stripped", "assert_pie"}, Pair{"assert_newer_stripped", "assert_newer"}}) {
    CAPTURE(p.stripped);
    if (!std::filesystem::exists(e2e::fixture(p.stripped))) {
      MESSAGE("skipped: no " << std::string(p.stripped) << " (WEAVE_GO_NEWER is not installed, or a matrix row)");
      continue;
    }
    std::vector<json> stripped = check_contents(p.stripped, kContentsStrippedSpec);
    std::vector<json> dwarf = check_contents(p.dwarf);
    check_stripped_equals_dwarf(stripped, dwarf);
  }
}

TEST_CASE("contents with maps and slices stripped: pairs walked from the type descriptors, as with DWARF") {
  struct Pair {
    const char *stripped, *dwarf;
  };
  for (const Pair &p : {Pair{"assert_stripped", "assert"}, Pair{"assert_386_stripped", "assert_386"},
                        Pair{"assert_newer_stripped", "assert_newer"}}) {
    CAPTURE(p.stripped);
    if (!std::filesystem::exists(e2e::fixture(p.stripped))) {
      MESSAGE("skipped: no " << std::string(p.stripped) << " (WEAVE_GO_NEWER is not installed, or a matrix row)");
      continue;
    }
    auto stripped = check_contents_maps(p.stripped, contents_maps::spec(false, true));
    auto dwarf = check_contents_maps(p.dwarf);
    // Value for value where neither run cut the value (the calls are one goroutine's, in one order).
    REQUIRE(stripped.size() == dwarf.size());
    int same = 0;
    for (size_t i = 0; i < stripped.size(); ++i) {
      if (stripped[i].second || dwarf[i].second)
        continue;
      INFO("stripped: " << stripped[i].first.dump());
      INFO("DWARF:    " << dwarf[i].first.dump());
      CHECK(without_addresses(json::parse(stripped[i].first["args"].dump())) ==
            without_addresses(json::parse(dwarf[i].first["args"].dump())));
      ++same;
    }
    MESSAGE(std::string(p.stripped) << ": " << same << " events value for value as DWARF's");
    CHECK(same >= 30);
  }
}
