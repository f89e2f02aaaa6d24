// Unit tests for `weave check` (the line diff, the manifest's semantic diff, the report) and for
// `weave run`'s cache key (SHA-256 against the FIPS 180-4 / NIST CAVP vectors).
#include "check/check.h"
#include "plan/plan.h"
#include "common/diag.h"
#include "payload.h"
#include "run/run.h"

#include <doctest/doctest.h>

#include <sstream>

#include <filesystem>
#include <fstream>
#include <random>

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

std::vector<std::string_view> lines_of(const std::vector<std::string> &lines) {
  return {lines.begin(), lines.end()};
}

// Length of the longest common subsequence, by the textbook O(NM) table: the oracle for Myers.
size_t lcs_length(const std::vector<std::string> &a, const std::vector<std::string> &b) {
  std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
  return t[a.size()][b.size()];
}

bool has(const std::vector<std::string> &lines, const std::string &line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

std::string text(const std::vector<std::string> &lines) {
  std::string out;
  for (const auto &line : lines)
    out += line + "\n";
  return out;
}

// A small manifest in the shape codegen writes.
json manifest() {
  return json::parse(R"({
    "format": 1, "weave_version": "0.1.0",
    "target": {"path": "./svc", "build_id": "AAA/BBB", "go_version": "go1.19.8", "arch": "amd64",
               "pointer_size": 8},
    "probes": [
      {"id": 0, "name": "main.(*Server).Handle", "function": "main.(*Server).Handle",
       "attach": [{"kind": "entry", "vaddr": "0x4827e0", "file_offset": "0x827e0", "cookie": 0}],
       "captures": [
         {"expr": "req.Header.Port", "type": "uint16", "fault_bit": 0,
          "fields": [{"name": "", "kind": "uint", "go_type": "uint16", "size": 2, "offset": 48,
                      "read": {"base": "bx", "loads": [{"offset": 16, "size": 8},
                                                       {"offset": 0, "size": 2}]}}]},
         {"expr": "deadline", "type": "int64", "fault_bit": 1,
          "fields": [{"name": "", "kind": "int", "go_type": "int64", "size": 8, "offset": 120,
                      "read": {"base": "cx", "loads": []}}]}]},
      {"id": 1, "name": "main.Ints", "function": "main.Ints",
       "attach": [{"kind": "entry", "vaddr": "0x4a3b20", "file_offset": "0xa3b20", "cookie": 0}],
       "captures": [
         {"expr": "j", "type": "uint", "fault_bit": 0,
          "fields": [{"name": "", "kind": "uint", "go_type": "uint", "size": 8, "offset": 48,
                      "read": {"base": "sp", "loads": [{"offset": 8, "size": 8}]}}]}]}
    ]})");
}

fs::path fresh_dir(const std::string &name) {
  fs::path dir = fs::path(WEAVE_BINARY_DIR) / "unit-tmp" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path &path, const std::string &content) {
  std::ofstream(path, std::ios::binary) << content;
}

} // namespace

// ---- SHA-256 ----------------------------------------------------------------------------------

TEST_CASE("SHA-256 gives the FIPS 180-4 example digests") {
  // FIPS 180-4 / NIST CSRC "Examples with intermediate values": SHA256.pdf, SHA256_2.pdf.
  CHECK(weave::Sha256::hex("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(weave::Sha256::hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(weave::Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(weave::Sha256::hex(
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
            "klmnopqrlmnopqrsmnopqrstnopqrstu") ==
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  // One million 'a' (the long-message vector).
  CHECK(weave::Sha256::hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("SHA-256 pads correctly at every block boundary") {
  // Digests from Python's hashlib: 55 bytes is the longest message whose padding fits one block,
  // 56..63 need a second, 64 is exactly one block.
  const std::pair<size_t, const char *> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"}};
  for (const auto &entry : cases) {
    // Named, not a structured binding: clang 14 (the asan preset) cannot capture one in CAPTURE.
    auto n = entry.first;
    const auto &digest = entry.second;
    CAPTURE(n);
    CHECK(weave::Sha256::hex(std::string(n, 'a')) == digest);
  }
}

TEST_CASE("SHA-256 gives the same digest however the input is split") {
  std::string data;
  for (int i = 0; i < 5; ++i)
    for (int b = 0; b < 256; ++b)
      data += static_cast<char>(b);
  const char *expected = "d414b085826eb06778483ba35564dc849e643359f69ed9747878ba6e54985bed";
  CHECK(weave::Sha256::hex(data) == expected);
  for (size_t chunk : {1, 3, 63, 64, 65, 200}) {
    CAPTURE(chunk);
    weave::Sha256 h;
    for (size_t i = 0; i < data.size(); i += chunk)
      h.update(std::string_view(data).substr(i, chunk));
    CHECK(h.hex_digest() == expected);
  }
}

TEST_CASE("the cache key changes with every input and cannot be forged by moving bytes") {
  std::string key = weave::cache_key("spec", "buildid", "0.1.0", "rt");
  CHECK(key.size() == 64);
  CHECK(key == weave::cache_key("spec", "buildid", "0.1.0", "rt"));
  CHECK(key != weave::cache_key("spec ", "buildid", "0.1.0", "rt"));
  CHECK(key != weave::cache_key("spec", "buildie", "0.1.0", "rt"));
  CHECK(key != weave::cache_key("spec", "buildid", "0.1.1", "rt"));
  CHECK(key != weave::cache_key("spec", "buildid", "0.1.0", "rt2"));
  // Length prefixes: the same concatenation split differently is another key.
  CHECK(weave::cache_key("ab", "c", "", "") != weave::cache_key("a", "bc", "", ""));
}

TEST_CASE("the cache lives under XDG_CACHE_HOME, else ~/.cache") {
  std::string saved_xdg = getenv("XDG_CACHE_HOME") ? getenv("XDG_CACHE_HOME") : "";
  std::string saved_home = getenv("HOME") ? getenv("HOME") : "";
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  CHECK(weave::default_cache_root() == "/tmp/xdg/weave");
  setenv("XDG_CACHE_HOME", "relative", 1); // the XDG spec says to ignore relative paths
  setenv("HOME", "/home/u", 1);
  CHECK(weave::default_cache_root() == "/home/u/.cache/weave");
  unsetenv("XDG_CACHE_HOME");
  CHECK(weave::default_cache_root() == "/home/u/.cache/weave");
  unsetenv("HOME");
  CHECK_THROWS_AS(weave::default_cache_root(), weave::UserError);
  if (!saved_xdg.empty())
    setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  if (!saved_home.empty())
    setenv("HOME", saved_home.c_str(), 1);
}

TEST_CASE("weave run's tracer command line") {
  weave::RunOptions o;
  o.binary_path = "svc";
  o.start_program = true;
  o.program_args = {"-port", "80"};
  CHECK(weave::tracer_argv("/c/tracer", o) ==
        std::vector<std::string>{"/c/tracer", "--", "./svc", "-port", "80"}); // not a $PATH lookup
  o.format = "json";
  o.binary_path = "/srv/svc";
  o.program_args = {};
  CHECK(weave::tracer_argv("/c/tracer", o) ==
        std::vector<std::string>{"/c/tracer", "--format", "json", "--", "/srv/svc"});
  o.start_program = false;
  o.format = "";
  CHECK(weave::tracer_argv("/c/tracer", o) ==
        std::vector<std::string>{"/c/tracer", "--binary", "/srv/svc"}); // every process
  o.pid = 42;
  CHECK(weave::tracer_argv("/c/tracer", o) ==
        std::vector<std::string>{"/c/tracer", "--pid", "42", "--binary", "/srv/svc"});
  o.output = "events.jsonl";
  CHECK(weave::tracer_argv("/c/tracer", o) ==
        std::vector<std::string>{"/c/tracer", "-o", "events.jsonl", "--pid", "42", "--binary", "/srv/svc"});
  o.tracer_flags = {"--otlp", "http://127.0.0.1:4318", "--metrics", "127.0.0.1:9464"}; // as given, in order
  CHECK(weave::tracer_argv("/c/tracer", o) ==
        std::vector<std::string>{"/c/tracer", "-o", "events.jsonl", "--otlp", "http://127.0.0.1:4318", "--metrics",
                                 "127.0.0.1:9464", "--pid", "42", "--binary", "/srv/svc"});
  // A --binary of the user's replaces weave's.
  o.output = "";
  o.tracer_flags = {"--binary", "/proc/42/exe", "--graph"};
  CHECK(weave::tracer_argv("/c/tracer", o) ==
        std::vector<std::string>{"/c/tracer", "--binary", "/proc/42/exe", "--graph", "--pid", "42"});
  o.pid = 0;
  CHECK(weave::tracer_argv("/c/tracer", o) ==
        std::vector<std::string>{"/c/tracer", "--binary", "/proc/42/exe", "--graph"});
}

TEST_CASE("weave trace's spec: what each option adds, and where each value came from") {
  weave::QuickSpecArgs args;
  args.functions = {"main.(*S).Get", "pkg.it's"};
  args.captures = {"r.URL.Path", "len(xs)"};
  args.when = "r.Method == \"GET\"";
  args.min_duration = "5ms";
  args.stack = 8;
  args.inlined = true;
  weave::QuickSpec spec = weave::quick_spec(args);
  CHECK(spec.text == "# weave trace: these values, and the results at every RET\n"
                     "probes:\n"
                     "  - function: 'main.(*S).Get'\n"
                     "    capture:\n"
                     "      - 'r.URL.Path'\n"
                     "      - 'len(xs)'\n"
                     "    return: true\n"
                     "    when: 'r.Method == \"GET\"'\n"
                     "    min_duration: '5ms'\n"
                     "    stack: 8\n"
                     "    inlined: true\n"
                     "  - function: 'pkg.it''s'\n"
                     "    capture:\n"
                     "      - 'r.URL.Path'\n"
                     "      - 'len(xs)'\n"
                     "    return: true\n"
                     "    when: 'r.Method == \"GET\"'\n"
                     "    min_duration: '5ms'\n"
                     "    stack: 8\n"
                     "    inlined: true\n");
  // Each origin is where its value's text starts, inside the quotes.
  std::vector<std::string> lines;
  std::istringstream in(spec.text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  REQUIRE(spec.origins.size() == 10);
  for (const weave::QuickSpecOrigin &o : spec.origins) {
    CAPTURE(o.value);
    REQUIRE(o.line >= 1);
    REQUIRE(o.line <= static_cast<int>(lines.size()));
    const std::string &line = lines[o.line - 1];
    CHECK(line[o.column - 2] == '\'');
    std::string quoted;
    for (char c : o.value)
      quoted += c == '\'' ? std::string("''") : std::string(1, c);
    CHECK(line.substr(o.column - 1, quoted.size()) == quoted);
  }
  // A stripped binary without declarations: calls and durations only.
  weave::QuickSpecArgs timed;
  timed.functions = {"main.F"};
  timed.values = false;
  CHECK(weave::quick_spec(timed).text ==
        "# weave trace: calls and their durations (no DWARF: no values)\nprobes:\n  - function: 'main.F'\n    return: true\n");
}

TEST_CASE("cached_tracer builds on a miss only, and keeps the 32 most recently used entries") {
  fs::path dir = fresh_dir("run-cache");
  weave::RunOptions o;
  o.spec_path = (dir / "spec.yaml").string();
  o.binary_path = "/bin/true"; // any ELF with a build id
  o.runtime_path = "/bin/true";
  o.cache_root = (dir / "cache").string();
  int builds = 0;
  auto build = [&](const std::string &out) {
    ++builds;
    fs::create_directories(out);
    write(fs::path(out) / "probes.json", "{}");
    write(fs::path(out) / "tracer", "#!/bin/sh\n");
    fs::permissions(fs::path(out) / "tracer", fs::perms::owner_all);
  };
  write(o.spec_path, "spec 0");
  std::string first = weave::cached_tracer(o, build);
  CHECK(builds == 1);
  CHECK(fs::path(first).parent_path().parent_path() == dir / "cache");
  CHECK(weave::cached_tracer(o, build) == first); // a hit
  CHECK(builds == 1);
  for (int i = 1; i <= 33; ++i) {
    write(o.spec_path, "spec " + std::to_string(i)); // other spec bytes: another entry
    weave::cached_tracer(o, build);
  }
  CHECK(builds == 34);
  CHECK(std::distance(fs::directory_iterator(dir / "cache"), fs::directory_iterator()) == 32);
  CHECK_FALSE(fs::exists(first)); // the least recently used went first
  // A binary that cannot be read is an error, not a cache entry.
  o.binary_path = (dir / "missing").string();
  CHECK_THROWS_AS(weave::cached_tracer(o, build), weave::UserError);
}

// ---- Line diff --------------------------------------------------------------------------------

TEST_CASE("unified diff: equal texts give nothing") {
  CHECK(weave::unified_diff("a\nb\n", "a\nb\n", "old", "new").empty());
  CHECK(weave::unified_diff("", "", "old", "new").empty());
}

TEST_CASE("unified diff: one changed line with context, in diff -u format") {
  std::string a = text({"1", "2", "3", "4", "5", "6", "7", "8", "9"});
  std::string b = text({"1", "2", "3", "4", "five", "6", "7", "8", "9"});
  CHECK(weave::unified_diff(a, b, "a/f", "b/f") == "--- a/f\n"
                                                   "+++ b/f\n"
                                                   "@@ -2,7 +2,7 @@\n"
                                                   " 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
}

TEST_CASE("unified diff: insertions, deletions, empty sides and a missing final newline") {
  CHECK(weave::unified_diff("", "x\ny\n", "a", "b") == "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n");
  CHECK(weave::unified_diff("x\n", "", "a", "b") == "--- a\n+++ b\n@@ -1 +0,0 @@\n-x\n");
  CHECK(weave::unified_diff("x\n", "x\ny\n", "a", "b") == "--- a\n+++ b\n@@ -1 +1,2 @@\n x\n+y\n");
  CHECK(weave::unified_diff("x\n", "x", "a", "b") ==
        "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n");
}

TEST_CASE("unified diff: changes close together share a hunk, far apart get their own") {
  std::vector<std::string> base;
  for (int i = 1; i <= 30; ++i)
    base.push_back(std::to_string(i));
  auto changed = base;
  changed[4] = "x";  // line 5
  changed[10] = "y"; // line 11: 5 kept lines between, within 2*3 -> one hunk
  changed[25] = "z"; // line 26: far -> second hunk
  std::string diff = weave::unified_diff(text(base), text(changed), "a", "b");
  CHECK(diff.find("@@ -2,13 +2,13 @@") != std::string::npos);
  CHECK(diff.find("@@ -23,7 +23,7 @@") != std::string::npos);
  CHECK(std::count(diff.begin(), diff.end(), '@') == 8); // two hunks
}

TEST_CASE("line diff: the script rebuilds both sides and is minimal (against an LCS table)") {
  std::mt19937 rng(1234);
  for (int round = 0; round < 300; ++round) {
    std::uniform_int_distribution<int> len(0, 25), sym(0, 3);
    std::vector<std::string> a(len(rng)), b(len(rng));
    for (auto &s : a)
      s = std::string(1, char('a' + sym(rng)));
    for (auto &s : b)
      s = std::string(1, char('a' + sym(rng)));
    auto script = weave::diff_lines(lines_of(a), lines_of(b));
    std::vector<std::string> got_a, got_b;
    size_t kept = 0;
    for (const auto &d : script) {
      if (d.op != '+')
        got_a.push_back(a[d.old_index]);
      if (d.op != '-')
        got_b.push_back(b[d.new_index]);
      if (d.op == ' ') {
        CHECK(a[d.old_index] == b[d.new_index]);
        ++kept;
      }
    }
    CAPTURE(round);
    REQUIRE(got_a == a);
    REQUIRE(got_b == b);
    CHECK(kept == lcs_length(a, b));
  }
}

TEST_CASE("unified diff: output is bounded") {
  std::string a, b;
  for (int i = 0; i < 1000; ++i) {
    a += "a" + std::to_string(i) + "\n";
    b += "b" + std::to_string(i) + "\n";
  }
  std::string diff = weave::unified_diff(a, b, "a", "b", 3, 50);
  CHECK(std::count(diff.begin(), diff.end(), '\n') == 51);
  CHECK(diff.find("... 1953 more diff lines") != std::string::npos);
}

// ---- Manifest diff ----------------------------------------------------------------------------

TEST_CASE("manifest diff: nothing for equal manifests") {
  CHECK(weave::manifest_changes(manifest(), manifest()).empty());
}

TEST_CASE("manifest diff: build id, attach offsets, field offsets, event offsets") {
  json a = manifest(), b = manifest();
  b["target"]["build_id"] = "CCC/DDD";
  b["probes"][0]["attach"][0]["file_offset"] = "0x828a0";
  b["probes"][0]["attach"][0]["vaddr"] = "0x4828a0";
  b["probes"][0]["captures"][0]["fields"][0]["read"]["loads"][1]["offset"] = 8;
  b["probes"][0]["captures"][1]["fields"][0]["offset"] = 128;
  b["probes"][1]["captures"][0]["fields"][0]["read"]["loads"][0]["offset"] = 16;
  auto changes = weave::manifest_changes(a, b);
  INFO(text(changes));
  CHECK(changes.size() == 5);
  CHECK(has(changes, "target build id AAA/BBB -> CCC/DDD"));
  CHECK(has(changes, "probe main.(*Server).Handle: entry file offset 0x827e0 -> 0x828a0 "
                     "(vaddr 0x4827e0 -> 0x4828a0)"));
  CHECK(has(changes, "probe main.(*Server).Handle: capture req.Header.Port: field offset 0 -> 8 "
                     "(load 2 of 2)"));
  CHECK(has(changes, "probe main.(*Server).Handle: capture deadline: event offset 120 -> 128"));
  CHECK(has(changes, "probe main.Ints: capture j: stack offset 8 -> 16 (load 1 of 1)"));
}

TEST_CASE("manifest diff: probes and captures added, removed and reordered by name") {
  json a = manifest(), b = manifest();
  // Swap the probes (ids follow), drop a capture, add a probe.
  std::swap(b["probes"][0], b["probes"][1]);
  b["probes"][0]["id"] = 0;
  b["probes"][1]["id"] = 1;
  b["probes"][1]["captures"].erase(1);
  json extra = a["probes"][1];
  extra["name"] = "main.New";
  extra["id"] = 2;
  b["probes"].push_back(extra);
  a["probes"].push_back(a["probes"][1]);
  a["probes"][2]["name"] = "main.Old";
  auto changes = weave::manifest_changes(a, b);
  INFO(text(changes));
  CHECK(has(changes, "probe main.(*Server).Handle: id 0 -> 1"));
  CHECK(has(changes, "probe main.Ints: id 1 -> 0"));
  CHECK(has(changes, "probe main.(*Server).Handle: capture deadline removed"));
  CHECK(has(changes, "probe main.Old removed"));
  CHECK(has(changes, "probe main.New added"));
  CHECK(changes.size() == 5); // no cascade from the reordering
}

TEST_CASE("manifest diff: a probe's return event is matched by name and kind, not by position") {
  // return: true makes two entries of one name: the entry event, then the return event.
  json with_return = manifest();
  json &entry = with_return["probes"][0];
  entry["kind"] = "entry";
  entry["program"] = "probe_0_entry";
  json ret = entry;
  ret["id"] = 1;
  ret["kind"] = "return";
  ret["program"] = "probe_0_return";
  ret["attach"] = json::parse(R"([{"kind": "return", "vaddr": "0x4827f7", "file_offset": "0x827f7",
                                   "cookie": 0}])");
  ret["captures"] = json::array();
  ret["duration_offset"] = 48;
  with_return["probes"] = json::array({entry, ret});
  json without = with_return;
  without["probes"].erase(1);
  // The truth in one line, either way: no "kind return -> entry", no captures added.
  CHECK(weave::manifest_changes(with_return, without) ==
        std::vector<std::string>{"probe main.(*Server).Handle: return event removed"});
  CHECK(weave::manifest_changes(without, with_return) ==
        std::vector<std::string>{"probe main.(*Server).Handle: return event added"});
  // A change inside the return event is named by it.
  json moved = with_return;
  moved["probes"][1]["duration_offset"] = 56;
  CHECK(weave::manifest_changes(with_return, moved) ==
        std::vector<std::string>{"probe main.(*Server).Handle: return event: duration offset 48 -> 56"});
}

TEST_CASE("manifest diff: return attach points and keys it does not know") {
  json a = manifest(), b = manifest();
  for (json *m : {&a, &b}) {
    (*m)["probes"][1]["attach"].push_back(
        {{"kind", "return"}, {"vaddr", "0x4a3b40"}, {"file_offset", "0xa3b40"}, {"cookie", 1}});
  }
  b["probes"][1]["attach"][1]["file_offset"] = "0xa3b44";
  b["probes"][1]["attach"][1]["vaddr"] = "0x4a3b44";
  b["probes"][1]["attach"].push_back(
      {{"kind", "return"}, {"vaddr", "0x4a3b60"}, {"file_offset", "0xa3b60"}, {"cookie", 2}});
  b["probes"][1]["ringbuf_pages"] = 64; // a key added to the format later
  b["options"] = {{"string_max", 32}};
  auto changes = weave::manifest_changes(a, b);
  INFO(text(changes));
  CHECK(has(changes, "probe main.Ints: return #1 file offset 0xa3b40 -> 0xa3b44 (vaddr 0x4a3b40 -> "
                     "0x4a3b44)"));
  CHECK(has(changes, "probe main.Ints: return #2 added (file offset 0xa3b60)"));
  CHECK(has(changes, "probe main.Ints: ringbuf pages added: 64"));
  CHECK(has(changes, "options added: {\"string_max\":32}"));
}

// ---- check_output and its report ---------------------------------------------------------------

TEST_CASE("check_output: identical, changed, missing, and a stale tracer") {
  fs::path dir = fresh_dir("check-output");
  json m = manifest();
  std::vector<weave::GeneratedFile> files = {{"probes.bpf.c", "int a;\nint b;\nint c;\n"},
                                             {"probes.h", "#pragma once\n"},
                                             {"probes.json", m.dump(2) + "\n"}};
  for (const auto &f : files)
    write(dir / f.name, f.content);

  weave::CheckResult clean = weave::check_output(files, dir.string());
  CHECK(clean.clean());
  CHECK(clean.compared.size() == 3);
  CHECK(weave::format_check_report(clean).find("is up to date (3 files compared)") !=
        std::string::npos);

  write(dir / "probes.bpf.c", "int a;\nint B;\nint c;\n");
  fs::remove(dir / "probes.h");
  json old = m;
  old["target"]["build_id"] = "OLD/ID";
  write(dir / "probes.json", old.dump(2) + "\n");
  // A tracer built from yet another manifest, on the runtime of this build (check reads its ELF
  // note: any other bytes are not a tracer).
  fs::copy_file(fs::path(WEAVE_BINARY_DIR) / "weave-tracer", dir / "runtime", fs::copy_options::overwrite_existing);
  std::string error;
  json embedded = m;
  embedded["probes"][0]["attach"][0]["file_offset"] = "0x1";
  REQUIRE(weave::append_payload((dir / "runtime").string(), "obj", embedded.dump(2) + "\n",
                                (dir / "tracer").string(), error));

  weave::CheckResult drift = weave::check_output(files, dir.string());
  REQUIRE(drift.drift.size() == 4);
  std::string report = weave::format_check_report(drift);
  INFO(report);
  CHECK(report.find("has drifted: 4 of 4 files differ, 1 missing") != std::string::npos);
  CHECK(report.find("probes.h: missing") != std::string::npos);
  CHECK(report.find("-int B;\n+int b;\n") != std::string::npos);
  CHECK(report.find("+++ probes.bpf.c (regenerated)") != std::string::npos);
  CHECK(report.find("  target build id OLD/ID -> AAA/BBB\n") != std::string::npos);
  CHECK(report.find("tracer:\n  its embedded manifest is not the regenerated probes.json") !=
        std::string::npos);
  CHECK(report.find("entry file offset 0x1 -> 0x827e0") != std::string::npos);

  // A tracer built from the checked-in probes.json matches the tree: a note, not drift, and not
  // the same changes twice.
  REQUIRE(weave::append_payload((dir / "runtime").string(), "obj", old.dump(2) + "\n",
                                (dir / "tracer").string(), error));
  weave::CheckResult consistent = weave::check_output(files, dir.string());
  report = weave::format_check_report(consistent);
  INFO(report);
  CHECK(consistent.drift.size() == 3);
  CHECK(report.find("has drifted: 3 of 4 files differ, 1 missing") != std::string::npos);
  CHECK(report.find("\ntracer: carries the checked-in probes.json, so `weave build` rebuilds it "
                    "along with the files above\n") != std::string::npos);
  CHECK(report.find("\ntracer:\n") == std::string::npos);
  CHECK(report.find("OLD/ID") == report.rfind("OLD/ID"));
}

TEST_CASE("check_output: a probes.json that differs only in formatting gets a line diff") {
  fs::path dir = fresh_dir("check-format");
  json m = manifest();
  std::vector<weave::GeneratedFile> files = {{"probes.json", m.dump(2) + "\n"}};
  write(dir / "probes.json", m.dump() + "\n");
  weave::CheckResult result = weave::check_output(files, dir.string());
  REQUIRE(result.drift.size() == 1);
  std::string report = weave::format_check_report(result);
  CHECK(report.find("same content, different text") != std::string::npos);
  CHECK(report.find("@@ ") != std::string::npos);

  write(dir / "probes.json", "{ not json");
  report = weave::format_check_report(weave::check_output(files, dir.string()));
  CHECK(report.find("not valid JSON") != std::string::npos);
}

TEST_CASE("check_output: a missing directory is drift of every file") {
  std::vector<weave::GeneratedFile> files = {{"probes.bpf.c", "x\n"}, {"probes.json", "{}\n"}};
  weave::CheckResult result = weave::check_output(
      files, (fs::path(WEAVE_BINARY_DIR) / "unit-tmp" / "no-such-dir").string());
  CHECK(result.drift.size() == 2);
  CHECK(result.drift[0].missing);
}

TEST_CASE("the recorded binary path: absolute as given, else relative to the output directory") {
  fs::path cwd = fs::current_path();
  fs::path root = fs::path(WEAVE_BINARY_DIR) / "unit-tmp" / "recorded-path";
  fs::create_directories(root / "sub");
  fs::current_path(root);
  // Every name of one file from one directory records the same path...
  for (const char *binary : {"myapp", "./myapp", "sub/../myapp", "./sub/./../myapp"})
    for (const char *out : {"weave-out", "weave-out/", "./weave-out", "sub/../weave-out"}) {
      CAPTURE(binary);
      CAPTURE(out);
      CHECK(weave::recorded_target_path(binary, out) == "../myapp");
    }
  CHECK(weave::recorded_target_path("bin/svc", "deploy/probes") == "../../bin/svc");
  CHECK(weave::recorded_target_path("svc", ".") == "svc");
  CHECK(weave::recorded_target_path("../svc", "out") == "../../svc");
  // ...and an absolute path is kept, normalized, wherever the output goes.
  CHECK(weave::recorded_target_path("/usr/local/bin/svc", "out") == "/usr/local/bin/svc");
  CHECK(weave::recorded_target_path("/usr/local/bin/../bin/./svc", "/tmp/x") == "/usr/local/bin/svc");
  // From another working directory, the same layout records the same text.
  fs::current_path(root / "sub");
  CHECK(weave::recorded_target_path("myapp", "weave-out") == "../myapp");
  // Through a directory that is a symbolic link, the path leads from where the tracer really is:
  // lnk/out is elsewhere/out, and the binary beside lnk is ../../sub/myapp from there.
  fs::create_directories(root / "elsewhere");
  fs::remove(root / "sub" / "lnk");
  fs::create_directory_symlink(root / "elsewhere", root / "sub" / "lnk");
  CHECK(weave::recorded_target_path("myapp", "lnk/out") == "../../sub/myapp");
  CHECK(weave::recorded_target_path("lnk/../myapp", "out") == "../../myapp"); // lnk/.. is root
  fs::current_path(cwd);
}

TEST_CASE("check reads the recorded path of a tree, and notes it when it is not this one") {
  fs::path dir = fs::path(WEAVE_BINARY_DIR) / "unit-tmp" / "checked-path";
  fs::remove_all(dir);
  fs::create_directories(dir);
  CHECK_FALSE(weave::checked_in_target_path(dir.string()));
  std::ofstream(dir / "probes.json") << "{\"target\": {\"path\": \"../svc\"}}";
  CHECK(weave::checked_in_target_path(dir.string()) == std::optional<std::string>("../svc"));
  std::ofstream(dir / "probes.json") << "{\"target\": {\"path\": 3}}";
  CHECK_FALSE(weave::checked_in_target_path(dir.string()));
  std::string note = weave::target_path_note("../svc", "../../b/svc");
  CHECK(note.find("not compared") != std::string::npos);
  CHECK(note.find("records ../svc") != std::string::npos);
  CHECK(note.find("--binary") != std::string::npos);
}
