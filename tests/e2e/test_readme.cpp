// The README's promises under test, as executable documentation (Go's Example tests and Rust's doc
// tests, for a command line): every fenced block of README.md carries a marker on the line before
// it, `<!-- readme-test: ID -->`, naming its entry in tests/readme/blocks.yaml, or
// `<!-- readme-test: not run: REASON -->`. An entry runs the block's command lines for real against
// examples/hello (the built `hello` fixture, copied as ./bin beside examples/hello/spec.yaml), each
// with its expected exit status and output lines, or checks an output sample against the grammar of
// what the real command prints, or names the test that covers what it cannot run here. Every command
// line of a block must have its entry, and every entry its line: a README edit that changes a
// command fails here until the check changes with it.
//
// tests/readme/promises.md is the table of the README's other promises: each row quotes a README
// sentence and names the test that guards it; the second case fails when a quoted sentence is no
// longer in the README or a named test no longer exists.
#include "harness.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct Block {
  size_t line = 0;     // of the opening fence, 1-based
  std::string info;    // the fence's info string
  std::string marker;  // what the marker comment says, "" when there is none
  std::vector<std::string> lines;
};

std::vector<std::string> split_lines(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::vector<Block> fenced_blocks(const std::string &readme) {
  static const std::regex marker(R"(^<!-- readme-test: (.*) -->$)");
  std::vector<std::string> lines = split_lines(readme);
  std::vector<Block> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("```", 0) != 0)
      continue;
    Block b;
    b.line = i + 1;
    b.info = trim(lines[i].substr(3));
    std::smatch m;
    for (size_t j = i; j-- > 0;) {
      if (trim(lines[j]).empty())
        continue;
      if (std::regex_match(lines[j], m, marker))
        b.marker = trim(m[1]);
      break;
    }
    size_t k = i + 1;
    for (; k < lines.size() && lines[k].rfind("```", 0) != 0; ++k)
      b.lines.push_back(lines[k]);
    blocks.push_back(b);
    i = k;
  }
  return blocks;
}

// The commands of a block: a line without its "$ " prompt and trailing "  # comment", lines
// continued with '\' joined, comment-only lines left out.
std::vector<std::string> commands_of(const Block &b) {
  std::vector<std::string> commands;
  std::string pending;
  for (std::string line : b.lines) {
    if (line.rfind("$ ", 0) == 0)
      line = line.substr(2);
    if (trim(line).rfind("#", 0) == 0)
      continue;
    size_t comment = line.find("  #");
    if (comment != std::string::npos)
      line = line.substr(0, comment);
    line = trim(line);
    if (!line.empty() && line.back() == '\\') {
      pending += trim(line.substr(0, line.size() - 1)) + " ";
      continue;
    }
    line = pending + line;
    pending.clear();
    if (!line.empty())
      commands.push_back(line);
  }
  return commands;
}

std::string collapse(const std::string &text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty())
      out += ' ';
    space = false;
    out += c;
  }
  return out;
}

bool any_line_matches(const std::string &text, const std::string &pattern) {
  std::regex re(pattern);
  for (const std::string &line : split_lines(text))
    if (std::regex_search(line, re))
      return true;
  return false;
}

std::vector<std::string> strings(const YAML::Node &node) {
  std::vector<std::string> out;
  if (node)
    for (const auto &n : node)
      out.push_back(n.as<std::string>());
  return out;
}

// `covered_by: "FILE: TEXT"`: FILE (from the source tree) holds TEXT, say a TEST_CASE's name.
void check_covered_by(const std::string &reference) {
  CAPTURE(reference);
  size_t colon = reference.find(": ");
  REQUIRE(colon != std::string::npos);
  std::string file = e2e::source(reference.substr(0, colon));
  REQUIRE_MESSAGE(fs::exists(file), "no file " << file);
  CHECK_MESSAGE(e2e::read_file(file).find(reference.substr(colon + 2)) != std::string::npos,
                reference.substr(colon + 2) << " is not in " << file);
}

struct Sandbox {
  std::string dir;
};

// A fresh directory with ./bin (the hello example, built), spec.yaml (its spec) and the entry's
// other files: "hello" and "spec" name those two, anything else is the file's text.
Sandbox make_sandbox(const std::string &name, const YAML::Node &files) {
  Sandbox s{e2e::temp_dir("readme-" + name)};
  bool bin_dir = false; // a block whose program is bin/server has no ./bin
  if (files)
    for (const auto &f : files)
      bin_dir = bin_dir || f.first.as<std::string>().rfind("bin/", 0) == 0;
  if (!bin_dir)
    fs::copy_file(e2e::fixture("hello"), s.dir + "/bin");
  fs::copy_file(e2e::source("examples/hello/spec.yaml"), s.dir + "/spec.yaml");
  if (files)
    for (const auto &f : files) {
      std::string path = s.dir + "/" + f.first.as<std::string>();
      std::string what = f.second.as<std::string>();
      fs::create_directories(fs::path(path).parent_path());
      if (what == "hello")
        fs::copy_file(e2e::fixture("hello"), path);
      else if (what == "spec")
        fs::copy_file(e2e::source("examples/hello/spec.yaml"), path);
      else
        std::ofstream(path) << what;
    }
  return s;
}

// Runs one command of an entry in the sandbox and checks what it promised.
e2e::Result run_command(const Sandbox &s, const YAML::Node &c, const std::string &line) {
  fs::current_path(s.dir);
  e2e::Result r;
  if (c["with_program"]) {
    // The tracer on every process running the binary: started, then the program, then Ctrl-C.
    auto tracer = e2e::spawn({"/bin/sh", "-c", "exec " + line}, s.dir);
    bool tracing = tracer.wait_for_err("weave: tracing", 120000);
    INFO(tracer.read_err());
    REQUIRE_MESSAGE(tracing, "the tracer did not start: " << line);
    auto program = e2e::run({"/bin/sh", "-c", c["with_program"].as<std::string>()});
    REQUIRE(program.status == 0);
    kill(tracer.pid, SIGINT);
    r.status = tracer.wait();
    r.out = tracer.read_out();
    r.err = tracer.read_err();
  } else {
    r = e2e::run({"/bin/sh", "-c", line}, 120000);
  }
  INFO("$ " << line << "\nexit " << r.status << "\nstdout:\n" << r.out << "stderr:\n" << r.err);
  CHECK(r.status == c["exit"].as<int>(0));
  for (const std::string &re : strings(c["stdout"]))
    CHECK_MESSAGE(any_line_matches(r.out, re), "no stdout line matches " << re);
  for (const std::string &re : strings(c["stderr"]))
    CHECK_MESSAGE(any_line_matches(r.err, re), "no stderr line matches " << re);
  for (const std::string &re : strings(c["stdout_not"]))
    CHECK_MESSAGE(!any_line_matches(r.out, re), "a stdout line matches " << re);
  for (const std::string &re : strings(c["stderr_not"]))
    CHECK_MESSAGE(!any_line_matches(r.err, re), "a stderr line matches " << re);
  if (c["files"])
    for (const auto &f : c["files"]) {
      std::string path = s.dir + "/" + f.first.as<std::string>();
      REQUIRE_MESSAGE(fs::exists(path), "no file " << path);
      std::string text = e2e::read_file(path);
      for (const std::string &re : strings(f.second))
        CHECK_MESSAGE(any_line_matches(text, re), "no line of " << path << " matches " << re);
    }
  return r;
}

// Every line of `text` (those `select` matches, when given) is one of `grammar`'s forms.
void check_grammar(const std::vector<std::string> &lines, const std::vector<std::string> &grammar,
                   const std::string &what, const std::string &select = "") {
  std::vector<std::regex> forms;
  for (const std::string &g : grammar)
    forms.emplace_back(g);
  std::regex selected(select.empty() ? ".*" : select);
  size_t checked = 0;
  for (const std::string &line : lines) {
    if (!std::regex_search(line, selected))
      continue;
    ++checked;
    bool ok = false;
    for (const std::regex &f : forms)
      ok = ok || std::regex_match(line, f);
    CHECK_MESSAGE(ok, what << ": no form of the grammar matches \"" << line << "\"");
  }
  CHECK_MESSAGE(checked > 0, what << ": no line to check");
}

void check_block(const Block &b, const std::string &id, const YAML::Node &entry) {
  CAPTURE(id);
  if (entry["covered_by"])
    for (const std::string &ref : strings(entry["covered_by"]))
      check_covered_by(ref);
  if (entry["same_as"]) {
    std::string text, file;
    for (const std::string &l : b.lines)
      text += l + "\n";
    for (const std::string &l : split_lines(e2e::read_file(e2e::source(entry["same_as"].as<std::string>()))))
      if (l.rfind("#", 0) != 0)
        file += l + "\n";
    CHECK_MESSAGE(text == file, "the block is not " << entry["same_as"].as<std::string>());
  }
  if (entry["words_in"]) {
    std::string file = e2e::read_file(e2e::source(entry["words_in"].as<std::string>()));
    std::set<std::string> words;
    std::istringstream in(file);
    for (std::string w; in >> w;)
      words.insert(w);
    for (const std::string &l : b.lines) {
      std::istringstream ws(l);
      for (std::string w; ws >> w;)
        CHECK_MESSAGE(words.count(w), w << " is not in " << entry["words_in"].as<std::string>());
    }
  }
  if (entry["paths_exist"].as<bool>(false)) {
    size_t n = 0;
    for (const std::string &l : b.lines) {
      std::string first = l.substr(0, l.find(' '));
      if (first.empty() || first.back() != '/')
        continue;
      ++n;
      CHECK_MESSAGE(fs::is_directory(e2e::source(first)), first << " is not a directory of the tree");
    }
    CHECK(n > 0);
  }
  if (entry["grammar"])
    check_grammar(b.lines, strings(entry["grammar"]), "README block at line " + std::to_string(b.line));

  bool runs = entry["commands"] || entry["grammar_run"];
  if (!runs)
    return;
  e2e::require_bpf();
  Sandbox s = make_sandbox(id, entry["files"]);
  if (entry["write_block"]) {
    std::ofstream out(s.dir + "/" + entry["write_block"].as<std::string>());
    for (const std::string &l : b.lines)
      out << l << "\n";
  }
  for (const std::string &setup : strings(entry["setup"])) {
    fs::current_path(s.dir);
    auto r = e2e::run({"/bin/sh", "-c", setup}, 120000);
    INFO("setup $ " << setup << "\n" << r.out << r.err);
    REQUIRE(r.status == 0);
  }
  if (entry["commands"]) {
    // Each command line of the block has its entry, and each entry its line.
    std::vector<std::string> readme_commands = commands_of(b);
    std::set<std::string> listed;
    for (const auto &c : entry["commands"])
      if (c["line"])
        listed.insert(c["line"].as<std::string>());
    if (listed.empty())
      readme_commands.clear(); // not a block of commands (a spec, a .gitignore): steps of the test's own
    for (const std::string &command : readme_commands)
      CHECK_MESSAGE(listed.count(command),
                    "README line " << b.line << ": the command `" << command
                                   << "` has no check in tests/readme/blocks.yaml (" << id << ")");
    for (const std::string &line : listed)
      CHECK_MESSAGE(std::find(readme_commands.begin(), readme_commands.end(), line) != readme_commands.end(),
                    "tests/readme/blocks.yaml (" << id << ") checks `" << line
                                                 << "`, which the README block at line " << b.line
                                                 << " no longer has");
    for (const auto &c : entry["commands"]) {
      std::string line = c["line"] ? c["line"].as<std::string>() : c["run"].as<std::string>();
      CAPTURE(line);
      if (c["covered_by"]) {
        check_covered_by(c["covered_by"].as<std::string>());
        continue;
      }
      if (c["not_run"]) {
        CHECK(!c["not_run"].as<std::string>().empty());
        continue;
      }
      run_command(s, c, c["as"] ? c["as"].as<std::string>() : line);
    }
  }
  if (entry["grammar_run"]) {
    const YAML::Node &g = entry["grammar_run"];
    e2e::Result r = run_command(s, g, g["run"].as<std::string>());
    std::string stream = g["stream"].as<std::string>("stdout");
    check_grammar(split_lines(stream == "stderr" ? r.err : r.out), strings(entry["grammar"]),
                  "`" + g["run"].as<std::string>() + "`", g["select"].as<std::string>(""));
  }
}

} // namespace

TEST_CASE("README: every fenced block is checked, or says why it is not, and its commands run as promised") {
  std::string readme = e2e::read_file(e2e::source("README.md"));
  YAML::Node checks = YAML::LoadFile(e2e::source("tests/readme/blocks.yaml"));
  std::vector<Block> blocks = fenced_blocks(readme);
  REQUIRE(blocks.size() >= 20);
  std::set<std::string> used;
  // First the markers, all of them, so one run names every block left unmarked.
  for (const Block &b : blocks) {
    CAPTURE(b.line);
    if (b.marker.rfind("not run:", 0) == 0) {
      CHECK_MESSAGE(trim(b.marker.substr(8)).size() >= 10,
                    "README line " << b.line << ": say why the block is not run");
      continue;
    }
    CHECK_MESSAGE(!b.marker.empty(), "README line " << b.line
                                                    << ": a fenced block without `<!-- readme-test: ID -->` or "
                                                       "`<!-- readme-test: not run: REASON -->` on the line before it");
    if (b.marker.empty())
      continue;
    CHECK_MESSAGE(static_cast<bool>(checks[b.marker]), "README line " << b.line << ": no entry " << b.marker
                                                   << " in tests/readme/blocks.yaml");
    CHECK_MESSAGE(!used.count(b.marker), "README line " << b.line << ": " << b.marker << " marks two blocks");
    used.insert(b.marker);
  }
  for (const auto &entry : checks)
    CHECK_MESSAGE(used.count(entry.first.as<std::string>()),
                  "tests/readme/blocks.yaml: " << entry.first.as<std::string>() << " marks no README block");
  // Then each block, for real. WEAVE_README_BLOCK=ID runs one.
  const char *only = getenv("WEAVE_README_BLOCK");
  std::string bin = e2e::temp_dir("readme-path");
  fs::create_symlink(e2e::weave(), bin + "/weave");
  setenv("PATH", (bin + ":" + getenv("PATH")).c_str(), 1);
  setenv("XDG_CACHE_HOME", (bin + "/cache").c_str(), 1); // weave run's cache, this test's own
  unsetenv("NO_COLOR");
  for (const Block &b : blocks) {
    if (b.marker.empty() || b.marker.rfind("not run:", 0) == 0 || !checks[b.marker])
      continue;
    if (only && b.marker != only)
      continue;
    check_block(b, b.marker, checks[b.marker]);
  }
}

TEST_CASE("README: each promise in tests/readme/promises.md is still in the README, and its test exists") {
  std::string readme = collapse(e2e::read_file(e2e::source("README.md")));
  // Rows: | "quote" | `FILE: TEXT` + `FILE: TEXT` |, a '|' in a quote written "\|".
  std::vector<std::string> rows = split_lines(e2e::read_file(e2e::source("tests/readme/promises.md")));
  size_t promises = 0;
  for (const std::string &row : rows) {
    if (row.rfind("| \"", 0) != 0)
      continue;
    size_t end = row.find("\" |");
    REQUIRE(end != std::string::npos);
    std::string quote = row.substr(3, end - 3);
    for (size_t at; (at = quote.find("\\|")) != std::string::npos;)
      quote.erase(at, 1);
    quote = collapse(quote);
    CAPTURE(quote);
    ++promises;
    CHECK_MESSAGE(readme.find(quote) != std::string::npos,
                  "the README no longer says this: update the README or tests/readme/promises.md");
    std::string guards = row.substr(end + 3);
    size_t named = 0;
    for (size_t open = guards.find('`'); open != std::string::npos; open = guards.find('`', open)) {
      size_t close = guards.find('`', open + 1);
      REQUIRE(close != std::string::npos);
      check_covered_by(guards.substr(open + 1, close - open - 1));
      ++named;
      open = close + 1;
    }
    CHECK_MESSAGE(named > 0, "a promise without a test");
  }
  CHECK(promises >= 30);
}

TEST_CASE("the tracer's exit codes with -- CMD are the program's, 127 when it cannot run") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("readme-exit");
  auto built = e2e::run({e2e::weave(), e2e::source("tests/e2e/fixture.yaml"), e2e::fixture("fixture"), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  std::string tracer = dir + "/out/tracer";
  // N: the program's own status (the flag package exits 2 on a flag it does not know).
  auto own = e2e::run({tracer, "--no-summary", "--", e2e::fixture("fixture"), "-no-such-flag"});
  INFO(own.err);
  CHECK(own.status == 2);
  CHECK(own.err.find("flag provided but not defined: -no-such-flag") != std::string::npos);
  // 128 + the signal that killed it: the program waits for SIGUSR1, and gets SIGTERM.
  auto waiting = e2e::spawn({tracer, "--no-summary", "--", e2e::fixture("fixture"), "-wait-signal"}, dir);
  // The program says "ready" once it waits (the tracer attached before it started).
  REQUIRE_MESSAGE(waiting.wait_for_err("ready\n"), waiting.read_err());
  // The traced program is the tracer's child: /proc/PID/task/PID/children names it.
  std::string children;
  std::ifstream(fmt::format("/proc/{}/task/{}/children", waiting.pid, waiting.pid)) >> children;
  REQUIRE(!children.empty());
  int child = std::stoi(children);
  kill(child, SIGTERM);
  CHECK(waiting.wait() == 128 + SIGTERM);
  // 127: a CMD that cannot be run, as in a shell.
  auto missing = e2e::run({tracer, "--", dir + "/no-such-program"});
  INFO(missing.err);
  CHECK(missing.status == 127);
}

TEST_CASE("the tracer's size is the README's, to the 0.1 MB it states") {
  // The README said "about 3.6 MB" of a tracer of 4.5 MB: the size it states is what a build gives
  // (the runtime with its symbol table, and a few KB of probes), rounded to 0.1 MB.
  std::string readme = collapse(e2e::read_file(e2e::source("README.md")));
  std::smatch m;
  REQUIRE(std::regex_search(readme, m, std::regex(R"(no `PT_DYNAMIC`\. It is (\d+\.\d) MB)")));
  double stated = std::stod(m[1]);
  std::string dir = e2e::temp_dir("readme-size");
  auto built = e2e::run({e2e::weave(), e2e::source("examples/hello/spec.yaml"), e2e::fixture("hello"), "-o",
                         dir + "/out"});
  INFO(built.err);
  REQUIRE(built.status == 0);
  double size = static_cast<double>(fs::file_size(dir + "/out/tracer")) / 1e6;
  CAPTURE(size);
  CHECK(std::abs(size - stated) < 0.05 + 1e-9);
  CHECK(readme.find("and the " + std::string(m[1]) + " MB static tracer") != std::string::npos);
}
