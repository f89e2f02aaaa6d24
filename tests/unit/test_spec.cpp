// Tests for stage 1 (spec): YAML and JSON parsing, validation against specs/weave.schema.json, the
// messages users see, and the tests/specs corpus: every ok_* spec must parse, and every fail_* spec
// must fail with exactly the first line of format_error it expects.
#include "support/resources.h"
#include "spec/schema.h"
#include "spec/spec.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace weave;

namespace {

const fs::path kCorpus = fs::path(WEAVE_SOURCE_DIR) / "tests" / "specs";

// Expectations of the corpus files that cannot carry a "# expect:" comment: JSON has no comments,
// and an empty file has nothing at all. {file, first line of format_error, hint}.
struct Expectation {
  std::string first_line;
  std::string hint;
};
const std::map<std::string, Expectation> kUncommentedExpectations = {
    {"fail_empty_file.yaml",
     {"fail_empty_file.yaml: error[spec-schema]: the spec is empty",
      "a spec lists the functions to trace, e.g. probes: [{function: main.main}]"}},
    {"fail_json_missing_comma.json",
     {"fail_json_missing_comma.json:5:7: error[spec-syntax]: expected ',' or '}' before this",
      "the entries of a {...} mapping are separated by commas"}},
    {"fail_json_unclosed.json",
     {"fail_json_unclosed.json:7:4: error[spec-syntax]: missing '}' at the end of the file",
      "a '{' above is never closed"}},
    {"fail_json_extra_bracket.json",
     {"fail_json_extra_bracket.json:7:1: error[spec-syntax]: unexpected '}'",
      "every '[' is closed by ']', and every '{' by '}'"}},
    {"fail_json_trailing.json",
     {"fail_json_trailing.json:4:1: error[spec-syntax]: unexpected content after the end of the "
      "spec",
      "a spec file holds one document; remove this, or the \"---\" before it"}},
    {"fail_json_unterminated.json",
     {"fail_json_unterminated.json:3:18: error[spec-syntax]: unterminated string",
      "the string's closing quote is missing"}},
    {"fail_json_bad_escape.json",
     {"fail_json_bad_escape.json:3:30: error[spec-syntax]: unknown escape character: q",
      "write a backslash as \\\\ in a double-quoted string"}},
    {"fail_json_unknown_key.json",
     {"fail_json_unknown_key.json:5:7: error[spec-schema]: unknown key \"capure\" in probe",
      "did you mean capture?"}},
    {"fail_json_duplicate_key.json",
     {"fail_json_duplicate_key.json:6:3: error[duplicate-key]: duplicate key \"probes\"",
      "\"probes\" is first given at line 2"}},
    {"fail_json_wrong_type.json",
     {"fail_json_wrong_type.json:5:18: error[spec-schema]: capture must be a list of expressions, "
      "found \"req.Path\"",
      "Values to record when the function is called: a parameter or the receiver, optionally "
      "followed by .Field selectors, e.g. [req.Path, req.Header.Port, deadline, s.Name]; a leading "
      "* follows a pointer. Each expression is also its key in the output."}},
    {"fail_elf.yaml",
     {"fail_elf.yaml: error[spec-not-text]: this is an ELF file (a compiled program), not a probe spec",
      "the spec comes first, then the binary: weave build SPEC BINARY"}},
    {"fail_json_duplicate_probe.json",
     {"fail_json_duplicate_probe.json:4:18: error[duplicate-probe]: duplicate probe name "
      "\"main.handle\"",
      "the first probe named \"main.handle\" is at line 3; set a different \"name\" on one of "
      "them"}},
};

// Runs `f` and returns the UserError it throws; a test fails if it throws nothing.
UserError error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const UserError &e) {
    return e;
  }
  throw std::runtime_error("expected a UserError, but nothing was thrown");
}

UserError text_error(const std::string &text, const std::string &path = "spec.yaml") {
  return error_of([&] { parse_spec_text(text, path); });
}

std::string where(const UserError &e) {
  return e.loc.file + ":" + std::to_string(e.loc.line) + ":" + std::to_string(e.loc.column);
}

std::string first_line(const std::string &text) {
  return text.substr(0, text.find('\n'));
}

std::string read(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A scratch directory for spec files, removed at the end of the test.
class TempDir {
public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "weave-test-spec-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string write(const std::string &name, const std::string &text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return (path_ / name).string();
  }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

const char *const kYaml = R"(# The example server's probes.
probes:
  - function: main.(*Server).Handle
    name: handle
    capture: [req.Path, req.Header.Port, deadline, s.Name]
  - function: main.parse
    capture:
      - input
options:
  string_max: 128
)";

const char *const kJson = R"({
  "probes": [
    {
      "function": "main.(*Server).Handle",
      "name": "handle",
      "capture": ["req.Path", "req.Header.Port", "deadline", "s.Name"]
    },
    {"function": "main.parse", "capture": ["input"]}
  ],
  "options": {"string_max": 128}
}
)";

const char *const kDump = R"(probes[0].name = "handle"
probes[0].function = "main.(*Server).Handle"
probes[0].capture[0] = "req.Path"
probes[0].capture[1] = "req.Header.Port"
probes[0].capture[2] = "deadline"
probes[0].capture[3] = "s.Name"
probes[1].name = "main.parse"
probes[1].function = "main.parse"
probes[1].capture[0] = "input"
options.string_max = 128
)";

} // namespace

TEST_CASE("a YAML spec and the equivalent JSON spec give the same Spec") {
  Spec yaml = parse_spec_text(kYaml, "spec.yaml");
  Spec json = parse_spec_text(kJson, "spec.json");
  CHECK(dump_spec(yaml) == kDump);
  CHECK(dump_spec(json) == kDump);
  CHECK(yaml.path == "spec.yaml");
  CHECK(json.path == "spec.json");
}

TEST_CASE("defaults: the probe is named after its function, no captures, string_max 64") {
  Spec spec = parse_spec_text("probes:\n  - function: main.main\n", "spec.yaml");
  REQUIRE(spec.probes.size() == 1);
  CHECK(spec.probes[0].name == "main.main");
  CHECK(spec.probes[0].function == "main.main");
  CHECK(spec.probes[0].captures.empty());
  CHECK(spec.options.string_max == 64);
  CHECK(dump_spec(spec) == "probes[0].name = \"main.main\"\n"
                           "probes[0].function = \"main.main\"\n"
                           "options.string_max = 64\n");
  // An options mapping without string_max keeps the default too.
  CHECK(parse_spec_text("{probes: [{function: f}], options: {}}", "s").options.string_max == 64);
}

TEST_CASE("every function and capture keeps its location") {
  Spec spec = parse_spec_text("probes:\n"
                              "  - function: main.a\n"
                              "    capture:\n"
                              "      - x.Y\n"
                              "  - {function: \"main.b\", capture: [p, q.R]}\n",
                              "spec.yaml");
  REQUIRE(spec.probes.size() == 2);
  auto at = [](const SourceLoc &loc) {
    return loc.file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column);
  };
  CHECK(at(spec.probes[0].loc) == "spec.yaml:2:15");
  CHECK(at(spec.probes[0].captures.at(0).loc) == "spec.yaml:4:9");
  CHECK(at(spec.probes[1].loc) == "spec.yaml:5:16");
  CHECK(at(spec.probes[1].captures.at(0).loc) == "spec.yaml:5:36");
  CHECK(at(spec.probes[1].captures.at(1).loc) == "spec.yaml:5:39");
  CHECK(spec.probes[1].captures.at(1).expr == "q.R");

  Spec json = parse_spec_text("{\"probes\": [\n  {\"function\": \"main.a\",\n"
                              "   \"capture\": [\"x.Y\"]}]}",
                              "spec.json");
  CHECK(at(json.probes.at(0).loc) == "spec.json:2:16");
  // A capture's location is where its text starts, inside the quotes: errors point into it.
  CHECK(at(json.probes.at(0).captures.at(0).loc) == "spec.json:3:17");
}

TEST_CASE("the embedded schema is a documented draft 2020-12 schema the validator implements") {
  const auto &schema = spec_schema::spec_schema();
  CHECK(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  CHECK(schema.contains("$id"));
  CHECK(schema.contains("title"));
  CHECK(resource("specs/weave.schema.json") ==
        read(fs::path(WEAVE_SOURCE_DIR) / "specs" / "weave.schema.json"));
  // The C++ default is what the schema documents.
  CHECK(schema["properties"]["options"]["properties"]["string_max"]["default"] ==
        SpecOptions{}.string_max);

  // Every property, wherever it is, says what it is for.
  std::vector<std::string> undocumented;
  std::function<void(const spec_schema::Schema &, const std::string &)> walk =
      [&](const spec_schema::Schema &s, const std::string &at) {
        if (s.contains("properties"))
          for (auto &[key, sub] : s["properties"].items()) {
            if (!sub.contains("description"))
              undocumented.push_back(at + key);
            walk(sub, at + key + ".");
          }
        if (s.contains("items"))
          walk(s["items"], at + "[].");
        if (s.contains("$defs"))
          for (auto &[key, sub] : s["$defs"].items())
            walk(sub, "$defs." + key + ".");
      };
  walk(schema, "");
  CHECK(undocumented == std::vector<std::string>{});
}

TEST_CASE("the validator refuses a schema with a keyword it does not implement") {
  using spec_schema::Schema;
  CHECK_NOTHROW(spec_schema::check_supported(spec_schema::spec_schema()));
  CHECK_THROWS_AS(spec_schema::check_supported(Schema::parse(R"({"type": "string",
                  "pattern": "^main\\."})")),
                  std::logic_error);
  CHECK_THROWS_AS(
      spec_schema::check_supported(Schema::parse(R"({"type": "object", "properties": {"a":
                  {"type": "array", "items": {"anyOf": []}}}})")),
      std::logic_error);
  CHECK_THROWS_AS(spec_schema::check_supported(Schema::parse(R"({"type": "number"})")),
                  std::logic_error);
  CHECK_THROWS_AS(spec_schema::check_supported(Schema::parse(R"({"$ref": "#/$defs/missing"})")),
                  std::logic_error);
  CHECK_THROWS_AS(
      spec_schema::check_supported(Schema::parse(R"({"type": "object", "required": ["a"]})")),
      std::logic_error);
  CHECK_THROWS_AS(spec_schema::check_supported(Schema::parse(R"({"minLength": 1})")),
                  std::logic_error);
  CHECK_THROWS_AS(spec_schema::check_supported(Schema::parse(
                      R"({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}})")),
                  std::logic_error);
  CHECK_THROWS_AS(spec_schema::check_supported(
                      Schema::parse(R"({"type": "object", "additionalProperties": {}})")),
                  std::logic_error);
}

TEST_CASE("validator keywords the spec schema does not use yet") {
  using spec_schema::Schema;
  auto schema = Schema::parse(R"({
    "type": "object",
    "properties": {
      "mode": {"enum": ["entry", "return"], "description": "When to fire."},
      "stack": {"type": "boolean"},
      "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 3}},
      "free": {"type": "object"}
    }
  })");
  spec_schema::check_supported(schema);
  auto check = [&](const std::string &text) {
    return error_of([&] { spec_schema::validate(YAML::Load(text), schema, "s.yaml"); });
  };
  CHECK_NOTHROW(spec_schema::validate(
      YAML::Load("{mode: return, stack: false, tags: [a, bcd], free: {x: 1}, other: 1}"), schema,
      "s.yaml"));

  auto e = check("mode: retrun");
  CHECK(where(e) == "s.yaml:1:7");
  CHECK(e.what() == std::string("mode must be one of \"entry\" or \"return\", found \"retrun\""));
  CHECK(e.hint == "did you mean return?");
  e = check("mode: [entry]");
  CHECK(e.what() == std::string("mode must be one of \"entry\" or \"return\", found a list"));
  CHECK(e.hint == "When to fire.");
  e = check("stack: yes");
  CHECK(e.what() == std::string("stack must be true or false, found \"yes\""));
  e = check("tags: [a, b, c]");
  CHECK(e.what() == std::string("tags must list at most 2 strings, found a list of 3 strings"));
  e = check("tags: [abcd]");
  CHECK(where(e) == "s.yaml:1:8");
  CHECK(e.what() ==
        std::string("tags[0] must be a string of at most 3 characters, found \"abcd\""));
}

TEST_CASE("[spec-unreadable] says which file and why") {
  auto e = error_of([] { parse_spec_file("no/such/spec.yaml"); });
  CHECK(e.id == "spec-unreadable");
  CHECK(e.loc.file == "no/such/spec.yaml");
  CHECK(e.loc.line == 0);
  CHECK(e.what() == "cannot open the spec file: " + std::string(std::strerror(ENOENT)));
  CHECK(e.hint == "the path is relative to the current directory, " + fs::current_path().string());
  CHECK(first_line(format_error(e)) ==
        "no/such/spec.yaml: error[spec-unreadable]: cannot open the spec file: No such file or "
        "directory");

  TempDir dir;
  e = error_of([&] { parse_spec_file(dir.path().string()); });
  CHECK(e.id == "spec-unreadable");
  CHECK(e.what() == "cannot read the spec file: " + std::string(std::strerror(EISDIR)));
  CHECK(e.hint == "give the path of a spec file (YAML or JSON), not of a directory");

  // Root reads any file, so the permission case can only be seen as another user.
  if (::geteuid() != 0) {
    std::string path = dir.write("secret.yaml", "probes: [{function: f}]\n");
    fs::permissions(path, fs::perms::none);
    e = error_of([&] { parse_spec_file(path); });
    CHECK(e.what() == "cannot open the spec file: " + std::string(std::strerror(EACCES)));
  }
}

TEST_CASE("[spec-syntax] points at the broken text, in YAML and in JSON") {
  auto e = text_error("probes:\n  - function: main.a: b\n");
  CHECK(e.id == "spec-syntax");
  CHECK(where(e) == "spec.yaml:2:21");
  CHECK(e.what() == std::string("unexpected ':'"));

  e = text_error("probes:\n\t- function: main.a\n");
  CHECK(where(e) == "spec.yaml:2:1");
  CHECK(e.what() == std::string("tab in indentation"));
  CHECK(e.hint == "YAML indents with spaces only");

  e = text_error("{\"probes\": [{\"function\": \"f\" \"capture\": []}]}", "spec.json");
  CHECK(e.id == "spec-syntax");
  CHECK(where(e) == "spec.json:1:30");
  CHECK(e.what() == std::string("expected ',' or '}' before this"));

  e = text_error("{\"probes\": [{\"function\": \"f\"}\n", "spec.json");
  CHECK(where(e) == "spec.json:1:30");
  CHECK(e.what() == std::string("missing ']' at the end of the file"));

  e = text_error("probes:\n  - function: \"main.a\n");
  CHECK(where(e) == "spec.yaml:2:15");
  CHECK(e.what() == std::string("unterminated string"));

  e = text_error("probes:\n  - function: \"main.a");
  CHECK(where(e) == "spec.yaml:2:15");
  CHECK(e.what() == std::string("unterminated string"));

  e = text_error("probes: [{function: f}]\n---\nprobes: [{function: g}]\n");
  CHECK(where(e) == "spec.yaml:3:1");
  CHECK(e.what() == std::string("unexpected content after the end of the spec"));

  e = text_error("probes: &p [{function: f}, *p]\n");
  CHECK(where(e) == "spec.yaml:1:9");
  CHECK(e.what() == std::string("an alias refers to a node that contains it"));

  // Aliases of aliases expand exponentially; the spec stops counting at 100000 values.
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 5; ++level) {
    std::string alias = "*l" + std::to_string(level - 1);
    laughs += "l" + std::to_string(level) + ": &l" + std::to_string(level) + " [" + alias;
    for (int i = 1; i < 10; ++i)
      laughs += ", " + alias;
    laughs += "]\n";
  }
  e = text_error(laughs);
  CHECK(e.id == "spec-syntax");
  CHECK(e.what() == std::string("the spec has more than 100000 values once its aliases are "
                                "expanded"));

  // yaml-cpp 0.7 alone would loop forever on these (jbeder/yaml-cpp#1040).
  e = text_error(",");
  CHECK(where(e) == "spec.yaml:1:1");
  CHECK(e.what() == std::string("unexpected ','"));
  CHECK(where(text_error("probes: [{function: f}]\n\n,\n")) == "spec.yaml:3:1");
  e = text_error("- ,\n");
  CHECK(where(e) == "spec.yaml:1:3");
  CHECK(e.what() == std::string("unexpected ','"));

  // A tab is fine where YAML allows it: inside flow (JSON) and in separating spaces.
  CHECK_NOTHROW(parse_spec_text("{\n\t\"probes\": [{\"function\": \"f\"}]\n}\n", "spec.json"));
  CHECK_NOTHROW(parse_spec_text("probes:\n  - function:\tf\n", "spec.yaml"));
}

TEST_CASE("an empty spec is an error that says so") {
  for (const char *text : {"", "\n\n", "# nothing yet\n", "---\n", "---\n...\n"}) {
    CAPTURE(text);
    auto e = text_error(text);
    CHECK(e.id == "spec-schema");
    CHECK(e.what() == std::string("the spec is empty"));
    CHECK(e.loc.line == 0);
    CHECK(e.hint == "a spec lists the functions to trace, e.g. probes: [{function: main.main}]");
  }
  auto e = text_error("- function: main.main\n");
  CHECK(where(e) == "spec.yaml:1:1");
  CHECK(e.what() == std::string("the spec must be a mapping with a \"probes\" list, found a list"));
}

TEST_CASE("[spec-schema] names what was expected and what was found, at the node") {
  struct Case {
    std::string text, where, message;
  };
  const Case cases[] = {
      {"probes:\n  - function: f\n    captures: [a]\n", "spec.yaml:3:5",
       "unknown key \"captures\" in probe"},
      {"probes: [{function: f}]\noptions: {strin_max: 8}\n", "spec.yaml:2:11",
       "unknown key \"strin_max\" in options"},
      {"probes: [{function: f}]\nprobe: []\n", "spec.yaml:2:1",
       "unknown key \"probe\" at the top level"},
      {"probes:\n  - name: a\n    capture: [x]\n", "spec.yaml:2:5",
       "missing required key \"function\" in probe"},
      {"options: {string_max: 8}\n", "spec.yaml:1:1",
       "missing required key \"probes\" at the top level"},
      {"probes: [{function: f}]\noptions: {string_max: abc}\n", "spec.yaml:2:23",
       "options.string_max must be an integer between 1 and 4096, found \"abc\""},
      {"probes: [{function: f}]\noptions: {string_max: 4097}\n", "spec.yaml:2:23",
       "options.string_max must be an integer between 1 and 4096, found 4097"},
      {"probes: [{function: f}]\noptions: {string_max: 0x40}\n", "spec.yaml:2:23",
       "options.string_max must be an integer between 1 and 4096, found \"0x40\""},
      {"probes: [{function: f}]\noptions:\n  string_max:\n", "spec.yaml:3:3",
       "options.string_max must be an integer between 1 and 4096, found null"},
      {"probes:\n  - function: f\n    capture: {a: b}\n", "spec.yaml:3:14",
       "capture must be a list of expressions, found a mapping"},
      {"probes:\n  - function: f\n    capture: [a, \"\"]\n", "spec.yaml:3:18",
       "capture[1] must be a non-empty string, found \"\""},
      {"probes:\n  - function: \"\"\n", "spec.yaml:2:15",
       "function must be a non-empty string, found \"\""},
      {"probes:\n  - function:\n    name: x\n", "spec.yaml:2:5",
       "function must be a non-empty string, found null"},
      {"probes:\n  - function: [f]\n", "spec.yaml:2:15",
       "function must be a non-empty string, found a list"},
      {"probes: []\n", "spec.yaml:1:9", "probes must list at least 1 probe, found an empty list"},
      {"probes: {function: f}\n", "spec.yaml:1:9",
       "probes must be a list of probes, found a mapping"},
      {"probes:\n  - main.f\n", "spec.yaml:2:5", "probes[0] must be a mapping, found \"main.f\""},
      {"probes: [{function: f}]\noptions: 64\n", "spec.yaml:2:10",
       "options must be a mapping, found 64"},
      {"probes: [{function: f, name: \"\"}]\n", "spec.yaml:1:30",
       "name must be a non-empty string, found \"\""},
      {"probes: [{function: f, [a]: b}]\n", "spec.yaml:1:24",
       "a key must be a name, found a list in probe"},
  };
  for (const auto &c : cases) {
    CAPTURE(c.text);
    auto e = text_error(c.text);
    CHECK(e.id == "spec-schema");
    CHECK(where(e) == c.where);
    CHECK(e.what() == c.message);
  }
}

TEST_CASE("schema hints: did you mean, the valid keys, or the property's description") {
  auto e = text_error("probes:\n  - function: f\n    captures: [a]\n");
  CHECK(e.hint == "did you mean capture?");
  e = text_error("probes: [{function: f}]\noptions: {stringmax: 8}\n");
  CHECK(e.hint == "did you mean string_max?");
  e = text_error("probe:\n  - function: f\n");
  CHECK(e.hint == "did you mean probes?");
  e = text_error("probes:\n  - function: f\n    outputs: [a]\n");
  CHECK(e.hint == "valid keys here: function, name, when, exclude, capture, args, return, contents, contents_types, min_duration, when_return, capture_at_return, params, results, limits, stack, stack_mode, stack_bytes, line, locals, inlined");
  e = text_error("probes:\n  - capture: [a]\n");
  CHECK(e.hint == "function: The Go symbol name of the function, as the linker writes it, e.g. "
                 "main.(*Server).Handle; or a shell glob such as main.* or github.com/org/svc/*, which "
                 "makes one probe per matching function (runtime, internal and compiler-generated "
                 "functions only when the pattern names them).");
  e = text_error("probes: [{function: f}]\noptions: {string_max: 0}\n");
  CHECK(e.hint == "Bytes copied from each captured string; longer strings are truncated.");
}

TEST_CASE("integers are decimal, and strings accept any scalar") {
  auto string_max = [](const std::string &value) {
    return parse_spec_text("probes: [{function: f}]\noptions: {string_max: " + value + "}\n", "s")
        .options.string_max;
  };
  CHECK(string_max("1") == 1);
  CHECK(string_max("4096") == 4096);
  CHECK(string_max("+64") == 64);
  // Quoted, it is a string (as in JSON), which a schema integer is not.
  CHECK(text_error("probes: [{function: f}]\noptions: {string_max: \"32\"}\n").hint ==
        "write 32 without quotes: a quoted value is a string");
  for (const char *bad : {"0", "-1", "64.0", "1e3", "0x40", "99999999999999999999", "true"}) {
    CAPTURE(bad);
    CHECK(text_error(std::string("probes: [{function: f}]\noptions: {string_max: ") + bad + "}\n")
              .id == "spec-schema");
  }
  Spec spec = parse_spec_text("probes: [{function: 123, name: true, capture: [null1]}]", "s");
  CHECK(spec.probes[0].function == "123");
  CHECK(spec.probes[0].name == "true");
  CHECK(spec.probes[0].captures[0].expr == "null1");
}

TEST_CASE("[duplicate-key] is found in YAML and JSON, at the second key") {
  auto e = text_error("probes:\n  - function: f\n    function: g\n");
  CHECK(e.id == "duplicate-key");
  CHECK(where(e) == "spec.yaml:3:5");
  CHECK(e.what() == std::string("duplicate key \"function\""));
  CHECK(e.hint == "\"function\" is first given at line 2");

  e = text_error("{\"probes\": [{\"function\": \"f\"}],\n \"options\": {},\n \"options\": {}}",
                 "spec.json");
  CHECK(e.id == "duplicate-key");
  CHECK(where(e) == "spec.json:3:2");
  CHECK(e.hint == "\"options\" is first given at line 2");
}

TEST_CASE("[duplicate-probe] names the second probe and where the first is") {
  auto e =
      text_error("probes:\n  - function: main.f\n  - function: main.g\n  - function: main.f\n");
  CHECK(e.id == "duplicate-probe");
  CHECK(where(e) == "spec.yaml:4:15");
  CHECK(e.what() == std::string("duplicate probe name \"main.f\""));
  CHECK(e.hint ==
        "the first probe named \"main.f\" is at line 2; set a different \"name\" on one of them");

  // An explicit name collides with another probe's default name; the error is at the name.
  e = text_error("probes:\n  - function: main.f\n  - function: main.g\n    name: main.f\n");
  CHECK(e.id == "duplicate-probe");
  CHECK(where(e) == "spec.yaml:4:11");

  // The same function twice is fine under different names.
  Spec spec = parse_spec_text("probes:\n  - {function: main.f, name: a}\n"
                              "  - {function: main.f, name: b}\n",
                              "spec.yaml");
  CHECK(spec.probes.size() == 2);
}

TEST_CASE("format_error shows the location, the source line, a caret and the hint") {
  TempDir dir;
  std::string path = dir.write("spec.yaml", "probes:\n"
                                            "  - function: main.(*Server).Handle\n"
                                            "    captures: [req.Path]\n");
  auto e = error_of([&] { parse_spec_file(path); });
  CHECK(format_error(e) == path + ":3:5: error[spec-schema]: unknown key \"captures\" in probe\n"
                                  "      captures: [req.Path]\n"
                                  "      ^\n"
                                  "  hint: did you mean capture?\n");

  path = dir.write("spec.json", "{\"probes\": [{\"function\": \"f\"}],\n"
                                " \"options\": {\"string_max\": 0}}\n");
  e = error_of([&] { parse_spec_file(path); });
  CHECK(format_error(e) ==
        path + ":2:28: error[spec-schema]: options.string_max must be an integer between 1 and "
               "4096, found 0\n"
               "   \"options\": {\"string_max\": 0}}\n"
               "                             ^\n"
               "  hint: Bytes copied from each captured string; longer strings are truncated.\n");

  // The caret lines up under a tab as the terminal shows it.
  path = dir.write("tab.yaml", "probes:\n\t- function: f\n");
  e = error_of([&] { parse_spec_file(path); });
  CHECK(format_error(e) == path + ":2:1: error[spec-syntax]: tab in indentation\n"
                                  "  \t- function: f\n"
                                  "  ^\n"
                                  "  hint: YAML indents with spaces only\n");
}

TEST_CASE("dump_spec quotes strings so that every fact stays on one line") {
  Spec spec = parse_spec_text("probes: [{function: \"main.\\\"odd\\\"\\nname\"}]", "s");
  CHECK(dump_spec(spec) == "probes[0].name = \"main.\\\"odd\\\"\\nname\"\n"
                           "probes[0].function = \"main.\\\"odd\\\"\\nname\"\n"
                           "options.string_max = 64\n");
}

TEST_CASE("corpus: tests/specs/ok_* parse, and a YAML and JSON pair give the same Spec") {
  REQUIRE(fs::is_directory(kCorpus));
  std::map<std::string, std::string> dumps; // file -> dump_spec
  for (const auto &entry : fs::directory_iterator(kCorpus)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("ok_"))
      continue;
    CAPTURE(name);
    try {
      dumps[name] = dump_spec(parse_spec_file(entry.path().string()));
    } catch (const UserError &e) {
      FAIL_CHECK(format_error(e));
    }
  }
  CHECK(dumps.size() >= 5);
  int pairs = 0;
  for (const auto &entry : dumps) {
    // Named, not a structured binding: clang 14 (the asan preset) cannot capture one in CAPTURE.
    const std::string &name = entry.first;
    const std::string &dump = entry.second;
    if (!name.ends_with(".yaml"))
      continue;
    auto twin = dumps.find(name.substr(0, name.size() - 5) + ".json");
    if (twin == dumps.end())
      continue;
    CAPTURE(name);
    CHECK(dump == twin->second);
    ++pairs;
  }
  CHECK(pairs >= 1);
}

TEST_CASE("corpus: tests/specs/fail_* fail with the error they expect") {
  REQUIRE(fs::is_directory(kCorpus));
  std::vector<fs::path> files;
  for (const auto &entry : fs::directory_iterator(kCorpus))
    if (entry.path().filename().string().starts_with("fail_"))
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 12);

  for (const auto &file : files) {
    std::string name = file.filename().string();
    CAPTURE(name);
    Expectation expected;
    if (auto it = kUncommentedExpectations.find(name); it != kUncommentedExpectations.end()) {
      expected = it->second;
    } else {
      // "# expect: <first line of format_error>", optionally followed by "# hint: <hint>".
      std::istringstream in(read(file));
      std::string line;
      std::getline(in, line);
      if (!line.starts_with("# expect: ")) {
        FAIL_CHECK("no \"# expect:\" line and no entry in kUncommentedExpectations");
        continue;
      }
      expected.first_line = line.substr(10);
      if (std::getline(in, line) && line.starts_with("# hint: "))
        expected.hint = line.substr(8);
    }
    try {
      parse_spec_file(file.string());
      FAIL_CHECK("parsed without error");
    } catch (const UserError &e) {
      std::string shown = first_line(format_error(e));
      std::string dir = kCorpus.string() + "/";
      if (shown.starts_with(dir))
        shown = shown.substr(dir.size());
      CHECK(shown == expected.first_line);
      CHECK(e.hint == expected.hint);
    }
  }
  for (const auto &entry : kUncommentedExpectations) {
    const std::string &name = entry.first;
    CAPTURE(name);
    CHECK(fs::exists(kCorpus / name));
  }
}

// ---- Hostile input: encodings, tags, quoted scalars, several errors at once ------------------

TEST_CASE("invalid_utf8 finds the first byte outside well-formed UTF-8") {
  CHECK(invalid_utf8("") == std::string::npos);
  CHECK(invalid_utf8("main.F caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == std::string::npos);
  CHECK(invalid_utf8("ab\xff") == 2);
  CHECK(invalid_utf8("a\xc0\x80") == 1);         // overlong NUL
  CHECK(invalid_utf8("a\xe0\x80\xaf") == 1);     // overlong '/'
  CHECK(invalid_utf8("a\xed\xa0\x80") == 1);     // a surrogate (CESU-8)
  CHECK(invalid_utf8("a\xf4\x90\x80\x80") == 1); // above U+10FFFF
  CHECK(invalid_utf8("ab\xe2\x82") == 2);        // cut short at the end
  CHECK(invalid_utf8("ab\xe2\x82x") == 2);       // cut short by ASCII
  CHECK(invalid_utf8("\x80") == 0);              // a lone continuation byte
}

TEST_CASE("bytes that are not UTF-8 are a located error, never a JSON exception later") {
  UserError e = text_error("probes:\n  - function: main.F\n    name: caf\xe9\n");
  CHECK(e.id == "spec-encoding");
  CHECK(where(e) == "spec.yaml:3:14");
  CHECK(std::string(e.what()) == "invalid UTF-8 (byte 0xe9)");
  // One error per line, with the rest of the spec still checked.
  e = text_error("probes:\n  - function: main.\xff\n    name: \xfe\n    captur: [a]\n");
  REQUIRE(e.others.size() == 2);
  CHECK(where(e) == "spec.yaml:2:20");
  CHECK(where(e.others[0]) == "spec.yaml:3:11");
  CHECK(e.others[1].id == "spec-schema");
  // What parses is valid UTF-8 all through: nlohmann::json (probes.json) accepts every string.
  Spec spec = parse_spec_text("probes:\n  - function: \"main.caf\\u00e9\"\n    capture: [\"\\u20ac\"]\n", "s");
  CHECK(nlohmann::json(spec.probes[0].function).dump() == "\"main.caf\xc3\xa9\"");
  CHECK_NOTHROW((void)nlohmann::json(spec.probes[0].captures[0].expr).dump());
}

TEST_CASE("the escapes yaml-cpp decodes to a lone byte (\\N, \\_) are a located error, never a JSON exception") {
  // Found by fuzz_spec: {"function": "main.handle\NULL"} in a UTF-8 file.
  for (std::string escape : {"\\N", "\\_"}) {
    UserError e = text_error("{\n  \"probes\": [\n    {\"function\": \"main.handle" + escape + "x\"}\n  ]\n}\n");
    CHECK(e.id == "spec-encoding");
    CHECK(where(e) == "spec.yaml:3:18"); // the string's opening quote
  }
  // The same characters written as \u escapes parse, and are UTF-8 all through.
  Spec spec = parse_spec_text("probes:\n  - function: \"main.a\\u0085b\\u00a0c\"\n", "s");
  CHECK(spec.probes[0].function == "main.a\xc2\x85" "b\xc2\xa0" "c");
  CHECK_NOTHROW((void)nlohmann::json(spec.probes[0].function).dump());
}

TEST_CASE("format_error shows a source line's stray bytes as '?', keeping the caret in place") {
  TempDir dir;
  std::string path = dir.write("bad.yaml", "probes:\n  - function: main.F\n    name: a\xffz\n");
  UserError e = error_of([&] { parse_spec_file(path); });
  std::string shown = format_error(e);
  CHECK(shown.find("\n      name: a?z\n             ^\n") != std::string::npos);
  CHECK(invalid_utf8(shown) == std::string::npos);
}

TEST_CASE("a binary file where the spec belongs is named, not quoted back") {
  std::string elf = std::string("\x7f" "ELF\x02\x01\x01", 7) + std::string(4096, '\xcc');
  UserError e = text_error(elf, "./bin");
  CHECK(e.id == "spec-not-text");
  CHECK(std::string(e.what()) == "this is an ELF file (a compiled program), not a probe spec");
  CHECK(e.hint == "the spec comes first, then the binary: weave build SPEC BINARY");
  CHECK(format_error(e).size() < 200);
  e = text_error(std::string("probes: []\n\0\0\0", 14));
  CHECK(e.id == "spec-not-text");
  CHECK(std::string(e.what()).find("NUL byte at offset 11") != std::string::npos);
}

TEST_CASE("quoted booleans and integers are strings: refused where true/false or a number belongs") {
  UserError e = text_error("probes:\n  - function: main.F\n    return: \"true\"\n");
  CHECK(where(e) == "spec.yaml:3:13");
  CHECK(std::string(e.what()) == "return must be true or false, found \"true\"");
  CHECK(e.hint == "write true without quotes: a quoted value is a string");
  e = text_error("{\"probes\": [{\"function\": \"main.F\", \"stack\": \"4\"}]}", "spec.json");
  CHECK(std::string(e.what()) == "stack must be an integer between 1 and 64, found \"4\"");
  e = text_error("probes: [{function: main.F}]\noptions: {string_max: '32'}\n");
  CHECK(std::string(e.what()).find("found \"32\"") != std::string::npos);
  // Unquoted they are what they look like, in YAML and JSON alike.
  CHECK(parse_spec_text("probes:\n  - function: main.F\n    return: true\n    stack: 4\n", "s").probes[0].capture_return);
  CHECK(parse_spec_text("{\"probes\": [{\"function\": \"main.F\", \"return\": false}]}", "s").probes[0].capture_return == false);
  // A string may look like a number or a boolean.
  CHECK(parse_spec_text("probes:\n  - function: main.F\n    name: true\n", "s").probes[0].name == "true");
}

TEST_CASE("YAML tags are refused, located, on any node") {
  UserError e = text_error("probes:\n  - function: !custom main.F\n");
  CHECK(where(e) == "spec.yaml:2:15");
  CHECK(std::string(e.what()) == "unexpected YAML tag \"!custom\": a spec's values carry no tags");
  e = text_error("probes: !!seq\n  - !foo {function: main.F}\n");
  CHECK(std::string(e.what()).find("\"!!seq\"") != std::string::npos);
  REQUIRE(e.others.size() == 1);
  CHECK(where(e.others[0]) == "spec.yaml:2:5");
  // The non-specific tag "!" only says "a string", as quotes do.
  CHECK(parse_spec_text("probes:\n  - function: ! main.F\n", "s").probes[0].function == "main.F");
}

TEST_CASE("every independent error of a spec is reported in one run, in the order of the text") {
  UserError e = text_error("probes:\n"
                           "  - function: main.F\n"
                           "    captur: [a]\n"          // 3:5 unknown key
                           "  - function: main.G\n"
                           "    return: \"false\"\n"    // 5:13 quoted boolean
                           "  - name: g\n"              // 6:5 no function
                           "  - function: main.H\n"
                           "    stack: 0\n"             // 8:12 out of range
                           "    stack: 2\n"             // 9:5 duplicate key
                           "options: {string_max: x}\n"); // 10:23 not an integer
  std::vector<std::string> at = {where(e)};
  for (const auto &other : e.others)
    at.push_back(where(other));
  CHECK(at == std::vector<std::string>{"spec.yaml:3:5", "spec.yaml:5:13", "spec.yaml:6:5", "spec.yaml:8:12",
                                       "spec.yaml:9:5", "spec.yaml:10:23"});
  std::string shown = format_error(e);
  CHECK(shown.ends_with("6 errors\n"));
  CHECK(shown.find("error[duplicate-key]") != std::string::npos);
  // Errors found once the schema holds (types, duplicate names) are gathered too.
  e = text_error("probes:\n"
                 "  - function: main.F\n"
                 "    params: [{name: a, type: {slice: int, pointer: int}}, {name: b, type: {array: int}}]\n"
                 "  - function: main.F\n");
  REQUIRE(e.others.size() == 2);
  CHECK(e.id == "spec-schema");
  CHECK(e.others[0].id == "spec-schema");
  CHECK(e.others[1].id == "duplicate-probe");
}

TEST_CASE("a flood of errors prints the first 20, then how many more") {
  std::string text = "probes:\n";
  for (int i = 0; i < 30; ++i)
    text += "  - {function: main.F" + std::to_string(i) + ", captur: [a]}\n";
  UserError e = text_error(text);
  CHECK(e.others.size() == 29);
  std::string shown = format_error(e);
  size_t errors = 0;
  for (size_t pos = 0; (pos = shown.find("error[spec-schema]", pos)) != std::string::npos; ++pos)
    ++errors;
  CHECK(errors == kMaxErrorsShown);
  CHECK(shown.find("... and 10 more errors\n30 errors\n") != std::string::npos);
}

TEST_CASE("durations: a decimal number and a unit, exact in nanoseconds") {
  CHECK(weave::parse_duration("500us") == 500'000u);
  CHECK(weave::parse_duration("5ms") == 5'000'000u);
  CHECK(weave::parse_duration("1.5s") == 1'500'000'000u);
  CHECK(weave::parse_duration("250ns") == 250u);
  CHECK(weave::parse_duration("0.25ms") == 250'000u);
  CHECK(weave::parse_duration("2\u00b5s") == 2'000u);
  for (const char *bad : {"", "5", "ms", "5 ms", "5m", "0ms", "1.5ns", "-1ms", "1e3ms", "3601s", ".ms", "5ms "})
    CHECK_MESSAGE(!weave::parse_duration(bad), bad);
}
