// What `cmake --install` puts in a prefix, used from there: the installed weave finds its runtime
// relative to itself and traces the example value for value (also after the prefix is moved), the
// man pages render without a warning and weave-spec(5) documents every key of the schema, and the
// shell completions complete commands and the function names of a binary.
#include "harness.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

bool has(const std::string &text, const std::string &needle) { return text.find(needle) != std::string::npos; }

e2e::Result shell(const std::string &script, int timeout_ms = 60000) {
  return e2e::run({"/bin/bash", "-c", script}, timeout_ms);
}

std::string quote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Installs the build tree into a fresh prefix once per test process.
const std::string &installed_prefix() {
  static std::string prefix = [] {
    // Per process: ctest runs test cases in parallel processes, each with its own prefix.
    std::string dir = e2e::temp_dir("install-" + std::to_string(getpid()));
    auto r = e2e::run({WEAVE_CMAKE, "--install", WEAVE_BINARY_DIR, "--prefix", dir + "/prefix"}, 120000);
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    return dir + "/prefix";
  }();
  return prefix;
}

// The example prints each call it makes ("hello: Handle(req.Path=...)"); the tracer prints the
// same arguments ("main.(*Server).Handle(req.Path=...)"): both lists, in order.
void check_traced_example(const std::string &output) {
  std::vector<std::string> printed, traced;
  std::regex said(R"(^hello: Handle\((.*)\)$)"), event(R"(goid=\d+ main\.\(\*Server\)\.Handle\((.*)\)$)");
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, said))
      printed.push_back(m[1]);
    else if (std::regex_search(line, m, event))
      traced.push_back(m[1]);
  }
  INFO(output);
  CHECK(printed.size() == 3);
  CHECK(traced == printed);
}

} // namespace

TEST_CASE("cmake --install lays out weave, its runtime, man pages, completions, schema and example") {
  const std::string &p = installed_prefix();
  for (const char *file : {"bin/weave", "libexec/weave/weave-tracer", "share/man/man1/weave.1.gz",
                           "share/man/man1/weave-tracer.1.gz", "share/man/man5/weave-spec.5.gz",
                           "share/bash-completion/completions/weave", "share/zsh/vendor-completions/_weave",
                           "share/fish/vendor_completions.d/weave.fish", "share/weave/weave.schema.json",
                           "share/doc/weave/examples/hello/main.go", "share/doc/weave/examples/hello/spec.yaml"})
    CHECK_MESSAGE(fs::exists(p + "/" + file), file);
  if (fs::exists(std::string(WEAVE_BINARY_DIR) + "/weave-tracer-arm64"))
    CHECK(fs::exists(p + "/libexec/weave/weave-tracer-arm64"));
  // The schema installed is the one weave embeds and validates with.
  CHECK(e2e::read_file(p + "/share/weave/weave.schema.json") == e2e::read_file(e2e::source("specs/weave.schema.json")));
}

TEST_CASE("the installed weave runs the README's first lines on the example and traces it value for value") {
  e2e::require_bpf();
  std::string dir = e2e::temp_dir("install-readme");
  // Moved after installing: the runtime is found relative to weave, wherever the prefix is.
  fs::rename(installed_prefix(), dir + "/moved");
  std::string bin = dir + "/moved/bin";
  fs::copy_file(e2e::fixture("hello"), dir + "/bin");
  fs::copy_file(dir + "/moved/share/doc/weave/examples/hello/spec.yaml", dir + "/spec.yaml");
  auto r = shell("cd " + quote(dir) + " && export PATH=" + quote(bin) + ":$PATH && " +
                 "weave spec.yaml ./bin && weave-out/tracer -- ./bin");
  fs::rename(dir + "/moved", installed_prefix());
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(has(r.err, "weave: wrote weave-out/ (1 probe on ./bin)"));
  check_traced_example(r.out);
}

TEST_CASE("the man pages render without a warning, and weave(1) carries each command's help") {
  for (const std::string page : {"man1/weave.1.gz", "man1/weave-tracer.1.gz", "man5/weave-spec.5.gz"}) {
    CAPTURE(page);
    std::string path = installed_prefix() + "/share/man/" + page;
    auto groff = shell("zcat " + quote(path) + " | groff -man -Tutf8 -ww -z");
    CHECK(groff.status == 0);
    CHECK(groff.err.empty());
    auto man = shell("MANWIDTH=120 man --warnings -l " + quote(path) + " 2>&1 >/dev/null");
    CHECK(man.status == 0);
    CHECK(man.out.empty());
  }
  auto text = shell("MANWIDTH=200 man -l " + quote(installed_prefix() + "/share/man/man1/weave.1.gz") + " | col -b");
  for (const std::string command : {"build", "check", "run", "trace", "funcs"}) {
    auto help = e2e::run({e2e::weave(), command, "--help"});
    // Each example line of the help, as the page renders it (tabs for runs of spaces aside).
    std::istringstream in(help.out);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("  weave " + command, 0) == 0) {
        std::string words = line.substr(2, line.find("  #", 2) - 2);
        words.erase(words.find_last_not_of(' ') + 1);
        CHECK_MESSAGE(has(text.out, words), words);
      }
  }
  CHECK(has(text.out, "SYNOPSIS\n       weave SPEC BIN [-o DIR]\n       weave COMMAND [OPTIONS] ARGS..."));
  auto tracer = shell("MANWIDTH=200 man -l " + quote(installed_prefix() + "/share/man/man1/weave-tracer.1.gz") +
                      " | col -b");
  CHECK(has(tracer.out, "--stats [SECONDS]"));
  // weave trace is documented with every option it passes on to the tracer.
  CHECK(has(text.out, "weave trace"));
  CHECK(has(text.out, "--folded-weight"));
  CHECK(has(text.out, "--when-return"));
  // Markdown would read <optimized out> as an HTML tag, and drop it.
  auto spec = shell("MANWIDTH=200 man -l " + quote(installed_prefix() + "/share/man/man5/weave-spec.5.gz") + " | col -b");
  CHECK(std::regex_search(spec.out, std::regex(R"(<optimized\s+out>)"))); // justified: blanks may widen
}

TEST_CASE("weave-spec(5) documents every key of the schema with its type, bounds and default") {
  auto page = shell("MANWIDTH=250 man -l " + quote(installed_prefix() + "/share/man/man5/weave-spec.5.gz") +
                    " | col -b");
  REQUIRE(page.status == 0);
  nlohmann::json schema = nlohmann::json::parse(e2e::read_file(e2e::source("specs/weave.schema.json")));
  // Every key, at every level: top, probe, options, parameter.
  std::vector<std::pair<std::string, nlohmann::json>> keys;
  for (auto &[key, value] : schema["properties"].items())
    keys.push_back({key, value});
  for (auto &[key, value] : schema["properties"]["probes"]["items"]["properties"].items())
    keys.push_back({key, value});
  for (auto &[key, value] : schema["properties"]["options"]["properties"].items())
    keys.push_back({key, value});
  for (auto &[key, value] : schema["$defs"]["params"]["items"]["properties"].items())
    keys.push_back({key, value});
  CHECK(keys.size() == 30); // with contents and contents_types
  for (auto &[key, value] : keys) {
    CAPTURE(key);
    CHECK(has(page.out, key));
    if (value.contains("minimum")) {
      std::string bounds = "(integer, " + std::to_string(value["minimum"].get<int>()) + " to " +
                           std::to_string(value["maximum"].get<int>());
      if (value.contains("default"))
        bounds += ", default " + std::to_string(value["default"].get<int>());
      CHECK(has(page.out, "       " + key + " " + bounds + ")"));
    }
  }
  for (const std::string required : schema["properties"]["probes"]["items"]["required"])
    CHECK(has(page.out, "       " + required + " (string, required)"));
  CHECK(has(page.out, "       args (the string all)"));
  CHECK(schema["properties"]["probes"]["items"]["properties"]["args"]["enum"] == nlohmann::json::array({"all"}));
}

TEST_CASE("the bash completion completes a command, an option and a function name of the binary") {
  std::string completion = installed_prefix() + "/share/bash-completion/completions/weave";
  std::string hello = e2e::fixture("hello");
  // As bash calls it: COMP_WORDS split at COMP_WORDBREAKS (so "(" is a word of its own), with and
  // without bash-completion's helpers loaded.
  auto complete = [&](const std::string &line, const std::string &words, bool with_helpers) {
    std::string script = std::string(with_helpers ? "source /usr/share/bash-completion/bash_completion || exit 77\n" : "") +
                         "export PATH=" + quote(installed_prefix() + "/bin") + ":$PATH\n" +
                         "source " + quote(completion) + "\n" + "COMP_LINE=" + quote(line) +
                         "; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(" + words +
                         "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_weave weave\n((${#COMPREPLY[@]})) && printf '%s\\n' \"${COMPREPLY[@]}\"\nexit 0\n";
    return shell(script);
  };
  for (bool helpers : {false, true}) {
    CAPTURE(helpers);
    auto command = complete("weave fu", "weave fu", helpers);
    if (command.status == 77) {
      MESSAGE("bash-completion is not installed: its helpers are not tried");
      continue;
    }
    CHECK(command.out == "funcs\n");
    auto option = complete("weave funcs --na", "weave funcs --na", helpers);
    CHECK(option.out == "--names\n");
    auto name = complete("weave funcs " + hello + " main.", "weave funcs " + quote(hello) + " main.", helpers);
    CHECK(name.out == "main.(*Server).Handle\nmain.main\n");
    // A name typed further, quoted or escaped as the shell needs it ("(" unquoted is shell syntax: bash
    // does not even call the completion there); readline re-quotes the reply (-o filenames).
    auto quoted = complete("weave funcs " + hello + " 'main.(*Se", "weave funcs " + quote(hello) + " \"'main.(*Se\"", helpers);
    CHECK(quoted.out == "main.(*Server).Handle\n");
    auto escaped = complete("weave funcs " + hello + " main.\\(\\*Se", "weave funcs " + quote(hello) + " 'main.\\(\\*Se'", helpers);
    CHECK(escaped.out == "main.(*Server).Handle\n");
    // weave trace BIN FUNC...: every argument after the binary is a function name.
    auto traced = complete("weave trace " + hello + " main.main main.", "weave trace " + quote(hello) + " main.main main.", helpers);
    CHECK(traced.out == "main.(*Server).Handle\nmain.main\n");
    auto dump = complete("weave build --dump probes.b", "weave build --dump probes.b", helpers);
    CHECK(dump.out == "probes.bpf.c\n");
  }
}

// The option names a command's --help lists (the options table CLI11 prints), without --help.
std::vector<std::string> help_options(const std::string &command) {
  auto help = e2e::run({e2e::weave(), command, "--help"});
  std::vector<std::string> names;
  std::istringstream in(help.out);
  std::regex option(R"(^  (?:-\w,\s*)?(--[a-z][a-z-]*))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, option) && m[1] != "--help")
      names.push_back(m[1]);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("weave run --<TAB> and weave trace --<TAB> complete every option their --help lists, the tracer's too") {
  std::string completion = installed_prefix() + "/share/bash-completion/completions/weave";
  for (const std::string command : {"build", "check", "run", "trace", "funcs"}) {
    CAPTURE(command);
    std::vector<std::string> wanted = help_options(command);
    REQUIRE(wanted.size() >= 1);
    auto r = shell("source " + quote(completion) + "\nCOMP_LINE='weave " + command +
                   " --'; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(weave " + command +
                   " --); COMP_CWORD=2\n_weave weave\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n");
    std::vector<std::string> offered;
    std::istringstream in(r.out);
    for (std::string word; in >> word;)
      if (word != "--help")
        offered.push_back(word);
    std::sort(offered.begin(), offered.end());
    CHECK(offered == wanted);
  }
  // The tracer's options among them, as the issue that asked for them named them.
  std::vector<std::string> run = help_options("run");
  for (const std::string option : {"--otlp", "--metrics", "--service-name", "--perfetto", "--folded", "--graph", "--stats"})
    CHECK_MESSAGE(std::find(run.begin(), run.end(), option) != run.end(), option);
  // fish and zsh list the same tracer options.
  for (const std::string file : {"share/fish/vendor_completions.d/weave.fish", "share/zsh/vendor-completions/_weave"}) {
    std::string text = e2e::read_file(installed_prefix() + "/" + file);
    for (const std::string &option : help_options("trace"))
      CHECK_MESSAGE(has(text, option.substr(2)), file << ": " << option);
  }
}

TEST_CASE("the fish and zsh completions complete a command and a function name") {
  std::string prefix = installed_prefix();
  std::string hello = e2e::fixture("hello");
  if (system("command -v fish >/dev/null") == 0) {
    std::string setup = "set PATH " + quote(prefix + "/bin") + " $PATH; source " +
                        quote(prefix + "/share/fish/vendor_completions.d/weave.fish") + "; ";
    auto command = e2e::run({"fish", "--no-config", "-c", setup + "complete -C 'weave fu'"});
    INFO(command.err);
    CHECK(has(command.out, "funcs\t"));
    auto name = e2e::run({"fish", "--no-config", "-c", setup + "complete -C 'weave funcs " + hello + " main.'"});
    INFO(name.err);
    CHECK(name.out == "main.(*Server).Handle\nmain.main\n");
  } else {
    MESSAGE("fish is not installed: its completion is not tried");
  }
  if (system("command -v zsh >/dev/null") == 0) {
    auto parse = e2e::run({"zsh", "-n", prefix + "/share/zsh/vendor-completions/_weave"});
    CHECK(parse.status == 0);
    CHECK(parse.err.empty());
    // In an interactive zsh on a pseudo-terminal, as typed: tests/package/zsh_complete.zsh.
    auto typed = e2e::run({"zsh", e2e::source("tests/package/zsh_complete.zsh"), prefix, hello});
    INFO(typed.out << typed.err);
    if (typed.status == 77)
      MESSAGE("zsh has no zpty module: the zsh completion is only parsed");
    else
      CHECK(typed.status == 0);
  } else {
    MESSAGE("zsh is not installed: its completion is not tried");
  }
}
