// Stage 1 — spec: reads a probe spec, checks it against specs/weave.schema.json and builds the
// Spec.
//
// YAML and JSON go through the same parser, yaml-cpp (JSON is YAML's flow style), so every error in
// either points at a line and column. yaml-cpp 0.7 accepts a few things a spec must not contain
// (a key twice in one mapping, an unterminated quoted string at the end of the file, an alias
// inside its own anchor); Linter catches those before the schema is checked.
#include "spec/spec.h"

#include "common/safe_io.h"

#include "spec/schema.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace weave {

namespace {

using spec_schema::describe_found;
using spec_schema::location;
using spec_schema::text_location;
using spec_schema::quote;

const char *const kExample = "a spec lists the functions to trace, e.g. "
                             "probes: [{function: main.main}]";

std::string unreadable_hint(int error, const std::string &path) {
  switch (error) {
  case ENOENT:
    if (std::filesystem::path(path).is_relative()) {
      std::error_code ec;
      auto cwd = std::filesystem::current_path(ec);
      if (!ec)
        return "the path is relative to the current directory, " + cwd.string();
    }
    return {};
  case EACCES:
    return "weave needs read permission on the file and search permission on its directories";
  case EISDIR:
    return "give the path of a spec file (YAML or JSON), not of a directory";
  default:
    return {};
  }
}

[[noreturn]] void unreadable(const std::string &what, const std::string &path) {
  int error = errno;
  throw UserError("spec-unreadable", what + ": " + std::strerror(error), SourceLoc{path},
                  unreadable_hint(error, path));
}

void refuse_non_text(const std::string &text, const std::string &path);

std::string read_file(const std::string &path) {
  // A spec is a file a person wrote: a regular file of at most kMaxSpecBytes. A device, FIFO or
  // socket is refused before a byte is read (it could block, or never end).
  std::string text, error;
  switch (read_regular_file(path, kMaxSpecBytes, true, text, error)) {
  case ReadStatus::Ok:
    return text;
  case ReadStatus::NotRegular:
    if (error.find("directory") == std::string::npos)
      throw UserError("spec-unreadable", "the spec file " + error, SourceLoc{path},
                      "give the path of a spec file (YAML or JSON); weave reads regular files only");
    errno = EISDIR;
    unreadable("cannot read the spec file", path);
  case ReadStatus::TooLarge:
    // A compiled program is the usual too-large "spec" (the arguments swapped): say that.
    if (int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); fd >= 0) {
      std::string head(4096, '\0');
      ssize_t n = ::read(fd, head.data(), head.size());
      ::close(fd);
      head.resize(n > 0 ? static_cast<size_t>(n) : 0);
      refuse_non_text(head, path);
    }
    throw UserError("spec-too-large", "the spec file " + error, SourceLoc{path},
                    "a spec is at most 1 MiB; give fewer probes, or patterns (main.*) instead of lists");
  default:
    errno = 0;
    {
      int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); // for errno and its hint
      if (fd >= 0)
        ::close(fd);
    }
    if (errno == 0)
      throw UserError("spec-unreadable", "cannot read the spec file: " + error, SourceLoc{path});
    unreadable("cannot open the spec file", path);
  }
}

SourceLoc loc_at(const std::string &text, size_t pos, const std::string &path) {
  SourceLoc loc{path, 1, 1};
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.column = 1;
    } else {
      ++loc.column;
    }
  }
  return loc;
}

std::string line_at(const std::string &text, int line) {
  std::istringstream in(text);
  std::string content;
  for (int n = 1; std::getline(in, content); ++n)
    if (n == line)
      return content;
  return {};
}

// The end of the quoted scalar whose opening quote is at `open`, or nullopt when the file ends
// first.
std::optional<size_t> closing_quote(const std::string &text, size_t open) {
  char quote_char = text[open];
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (quote_char == '"' && text[i] == '\\')
      ++i;
    else if (text[i] == quote_char && quote_char == '\'' && i + 1 < text.size() &&
             text[i + 1] == '\'')
      ++i; // '' is an escaped quote in a single-quoted scalar
    else if (text[i] == quote_char)
      return i;
  }
  return std::nullopt;
}

// Where a quoted scalar starts that is never closed, found by a rough scan that knows quotes begin
// a node. Only asked when yaml-cpp already failed at the end of the file, to explain why.
std::optional<size_t> unterminated_quote(const std::string &text) {
  bool node_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if ((c == '"' || c == '\'') && node_start) {
      auto end = closing_quote(text, i);
      if (!end)
        return i;
      i = *end;
      node_start = false;
    } else if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1])))) {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
    } else if (std::string_view("\n:,[{-?").find(c) != std::string_view::npos) {
      node_start = true;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      node_start = false;
    }
  }
  return std::nullopt;
}

// The character at `pos` as a message shows it: "','", "the end of the line".
std::string shown_char(const std::string &text, size_t pos) {
  if (pos >= text.size())
    return "the end of the file";
  if (text[pos] == '\n' || text[pos] == '\r')
    return "the end of the line";
  size_t end = pos + 1;
  while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    ++end;
  return "'" + text.substr(pos, end - pos) + "'";
}

// yaml-cpp's messages name its parser's states ("end of map flow not found"); say instead what is
// wrong in the text, and how it is usually fixed.
UserError syntax_error(const YAML::Exception &e, const std::string &text, const std::string &path) {
  auto error = [&](std::string message, SourceLoc loc, std::string hint = {}) {
    return UserError("spec-syntax", std::move(message), std::move(loc), std::move(hint));
  };
  if (e.mark.is_null())
    return error(e.msg, SourceLoc{path});
  SourceLoc loc{path, e.mark.line + 1, e.mark.column + 1};
  size_t pos = std::min(static_cast<size_t>(e.mark.pos), text.size());
  std::string here = shown_char(text, pos);
  const std::string &msg = e.msg;
  const char *indent_hint = "the keys of one mapping, and the \"-\" items of one list, must start "
                            "in the same column";

  std::string line = line_at(text, loc.line);
  size_t indent = std::min(line.find_first_not_of(" \t"), line.size());
  size_t tab = line.find('\t');
  if (tab < indent)
    return error("tab in indentation", {path, loc.line, static_cast<int>(tab) + 1},
                 "YAML indents with spaces only");

  bool at_end = text.find_first_not_of(" \t\r\n", pos) == std::string::npos;
  if (at_end && (msg == YAML::ErrorMsg::END_OF_MAP_FLOW || msg == YAML::ErrorMsg::END_OF_SEQ_FLOW ||
                 msg == YAML::ErrorMsg::EOF_IN_SCALAR)) {
    if (auto open = unterminated_quote(text))
      return error("unterminated string", loc_at(text, *open, path),
                   "the string's closing quote is missing");
  }
  if (at_end &&
      (msg == YAML::ErrorMsg::END_OF_MAP_FLOW || msg == YAML::ErrorMsg::END_OF_SEQ_FLOW)) {
    size_t last = text.find_last_not_of(" \t\r\n");
    bool map = msg == YAML::ErrorMsg::END_OF_MAP_FLOW;
    return error(std::string("missing '") + (map ? "}" : "]") + "' at the end of the file",
                 loc_at(text, last == std::string::npos ? 0 : last + 1, path),
                 std::string("a '") + (map ? "{" : "[") + "' above is never closed");
  }
  if (msg == YAML::ErrorMsg::END_OF_MAP_FLOW)
    return error("expected ',' or '}' before this", loc,
                 "the entries of a {...} mapping are separated by commas");
  if (msg == YAML::ErrorMsg::END_OF_SEQ_FLOW)
    return error("expected ',' or ']' before this", loc,
                 "the items of a [...] list are separated by commas");
  if (msg == YAML::ErrorMsg::FLOW_END)
    return error("unexpected " + here, loc, "every '[' is closed by ']', and every '{' by '}'");
  if (msg == YAML::ErrorMsg::END_OF_MAP || msg == YAML::ErrorMsg::END_OF_SEQ) {
    // At the start of a line the indentation is at fault; within one, the token itself.
    if (static_cast<size_t>(loc.column) == indent + 1)
      return error("unexpected indentation", loc, indent_hint);
    return error("unexpected " + here, loc);
  }
  if (msg == YAML::ErrorMsg::BLOCK_ENTRY)
    return error("unexpected list item", loc, indent_hint);
  if (msg == YAML::ErrorMsg::MAP_VALUE)
    return error("unexpected " + here, loc,
                 "a value containing \": \" must be quoted; a key must line up with the keys "
                 "above it");
  if (msg.starts_with(YAML::ErrorMsg::INVALID_ESCAPE)) {
    // yaml-cpp marks the character after the escape; point at its backslash.
    size_t backslash = text.rfind('\\', pos);
    if (backslash != std::string::npos && text.find('\n', backslash) >= pos)
      loc = loc_at(text, backslash, path);
    return error(msg, loc, "write a backslash as \\\\ in a double-quoted string");
  }
  if (msg.starts_with(YAML::ErrorMsg::INVALID_UNICODE)) {
    // An escape that names no character ("\ud800", half of a surrogate pair): yaml-cpp refuses it
    // (\N and \_, which it decodes to one byte, are caught in load()). Point at the escape's
    // backslash.
    size_t backslash = text.rfind('\\', pos);
    if (backslash != std::string::npos && text.find('\n', backslash) >= pos)
      loc = loc_at(text, backslash, path);
    return error("this escape names no Unicode character", loc,
                 "\\u and \\U take a code point up to 10FFFF that is not a surrogate (D800 to DFFF); "
                 "write a character beyond FFFF as \\U0001F600, not as a surrogate pair");
  }
  if (msg == YAML::ErrorMsg::UNKNOWN_TOKEN)
    return error("unexpected " + here, loc,
                 here == "'@'" || here == "'`'" ? "YAML reserves '@' and '`': quote a value that "
                                                  "starts with one"
                                                : "");
  return error(msg, loc);
}

// Sees where each document of the stream starts and where its content is, from parser events alone.
class DocumentScan : public YAML::EventHandler {
public:
  struct Document {
    YAML::Mark start;
    std::optional<YAML::Mark> content; // first node that is not null, if any
  };
  std::vector<Document> documents;

  void OnDocumentStart(const YAML::Mark &mark) override { documents.push_back({mark, {}}); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark &, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark &mark, YAML::anchor_t) override { note(mark); }
  // The first scalar whose decoded text is not UTF-8 although the file is: yaml-cpp decodes the
  // escapes \N and \_ (U+0085, U+00A0) to a lone Latin-1 byte, which nlohmann::json would refuse
  // when probes.json is written.
  std::optional<YAML::Mark> not_utf8;

  void OnScalar(const YAML::Mark &mark, const std::string &, YAML::anchor_t,
                const std::string &value) override {
    note(mark);
    if (!not_utf8 && invalid_utf8(value) != std::string::npos)
      not_utf8 = mark;
  }
  void OnSequenceStart(const YAML::Mark &mark, const std::string &, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    note(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark &mark, const std::string &, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    note(mark);
  }
  void OnMapEnd() override {}

private:
  void note(const YAML::Mark &mark) {
    if (!documents.empty() && !documents.back().content)
      documents.back().content = mark;
  }
};

// The one document of the spec; a null node when there is none or it is empty ("---" alone, or only
// comments).
//
// yaml-cpp 0.7's LoadAll loops forever, allocating, on some malformed input such as a lone ",": its
// parser reports an empty document without consuming the token (jbeder/yaml-cpp#1040, fixed
// upstream by #1319). So the documents are first scanned by events, where a document that starts
// where the previous one did is that bug and reported as a syntax error; once the scan ends,
// LoadAll on the same text ends too.
YAML::Node load(const std::string &text, const std::string &path) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentScan scan;
    while (parser.HandleNextDocument(scan)) {
      auto &docs = scan.documents;
      if (docs.size() >= 2 && docs[docs.size() - 2].start.pos == docs.back().start.pos) {
        int pos = docs.back().start.pos;
        throw UserError("spec-syntax", "unexpected " + shown_char(text, static_cast<size_t>(pos)),
                        loc_at(text, static_cast<size_t>(pos), path));
      }
    }
    if (scan.not_utf8 && invalid_utf8(text) == std::string::npos) // else utf8_errors said it
      throw UserError("spec-encoding", "an escape in this string gives a byte that is not UTF-8",
                      SourceLoc{path, scan.not_utf8->line + 1, scan.not_utf8->column + 1},
                      "write U+0085 as \\u0085 and U+00A0 as \\u00A0 (the YAML escapes \\N and \\_ "
                      "are read as a lone byte), or the character itself");
    std::vector<size_t> with_content;
    for (size_t i = 0; i < scan.documents.size(); ++i)
      if (scan.documents[i].content)
        with_content.push_back(i);
    if (with_content.empty())
      return YAML::Node(YAML::NodeType::Null);
    if (with_content.size() > 1) {
      const YAML::Mark &mark = *scan.documents[with_content[1]].content;
      throw UserError("spec-syntax", "unexpected content after the end of the spec",
                      SourceLoc{path, mark.line + 1, mark.column + 1},
                      "a spec file holds one document; remove this, or the \"---\" before it");
    }
    return YAML::LoadAll(text).at(with_content[0]);
  } catch (const YAML::Exception &e) {
    throw syntax_error(e, text, path);
  }
}

// A compiled program or other binary file where the spec belongs (most often the two arguments
// swapped) is named as such, not parsed: YAML would quote kilobytes of it back in its error.
void refuse_non_text(const std::string &text, const std::string &path) {
  const char *order = "the spec comes first, then the binary: weave build SPEC BINARY";
  if (text.starts_with("\x7f"
                       "ELF"))
    throw UserError("spec-not-text", "this is an ELF file (a compiled program), not a probe spec",
                    SourceLoc{path}, order);
  if (size_t nul = text.find('\0'); nul != std::string::npos)
    throw UserError("spec-not-text",
                    "this is a binary file, not a probe spec (a NUL byte at offset " +
                        std::to_string(nul) + ")",
                    SourceLoc{path}, std::string("a spec is YAML or JSON text; ") + order);
}

// Bytes that are not UTF-8, one error per line (YAML and JSON are Unicode text, and every name
// ends up in probes.json).
std::vector<UserError> utf8_errors(const std::string &text, const std::string &path) {
  std::vector<UserError> errors;
  std::string_view rest = text;
  for (int line = 1; !rest.empty() && errors.size() <= 1000; ++line) {
    size_t eol = rest.find('\n');
    std::string_view content = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    size_t bad = invalid_utf8(content);
    if (bad == std::string_view::npos)
      continue;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(content[bad]));
    errors.emplace_back("spec-encoding", std::string("invalid UTF-8 (byte ") + byte + ")",
                        SourceLoc{path, line, static_cast<int>(bad) + 1},
                        "a spec is UTF-8 text: save it as UTF-8, or write the character as an "
                        "escape in a double-quoted string (\"\\u00e9\")");
  }
  return errors;
}

// Rejects what yaml-cpp accepts but a spec must not contain.
class Linter {
public:
  // Errors that leave the tree usable (a repeated key, a tag) are added to `errors` and the walk
  // goes on, so one run reports them all; the others are thrown.
  Linter(const std::string &text, const std::string &path, std::vector<UserError> &errors)
      : text_(text), path_(path), errors_(errors) {}

  void lint(const YAML::Node &node) {
    // Aliases make the tree a graph: an alias inside its own anchor would recurse forever, and
    // nested aliases can expand a small file exponentially ("billion laughs").
    for (const auto &ancestor : ancestors_)
      if (ancestor.is(node))
        throw UserError("spec-syntax", "an alias refers to a node that contains it",
                        location(node, path_), "a spec cannot be recursive");
    if (++visited_ > kMaxNodes)
      throw UserError("spec-syntax",
                      "the spec has more than " + std::to_string(kMaxNodes) +
                          " values once its aliases are expanded",
                      location(node, path_));
    // A spec's values are plain: a tag would either be ignored (!custom) or change what a value
    // means (!!str true) without the schema knowing.
    const std::string &tag = node.Tag();
    if (!tag.empty() && tag != "?" && tag != "!") {
      std::string shown = tag.starts_with("tag:yaml.org,2002:") ? "!!" + tag.substr(18) : tag;
      errors_.emplace_back("spec-syntax", "unexpected YAML tag " + quote(shown) + ": a spec's values carry no tags",
                           location(node, path_), "remove the tag; to make a value a string, quote it");
    }
    if (node.IsScalar()) {
      size_t pos = node.Mark().is_null() ? text_.size() : static_cast<size_t>(node.Mark().pos);
      if (pos < text_.size() && (text_[pos] == '"' || text_[pos] == '\'') && node.Tag() == "!" &&
          !closing_quote(text_, pos))
        throw UserError("spec-syntax", "unterminated string", location(node, path_),
                        "the string's closing quote is missing");
      return;
    }
    ancestors_.push_back(node);
    if (node.IsSequence()) {
      for (const auto &item : node)
        lint(item);
    } else if (node.IsMap()) {
      // yaml-cpp keeps both pairs of a repeated key and lookups see only the first, so a repeated
      // key would silently lose its second value.
      std::map<std::string, YAML::Node> seen;
      for (const auto &pair : node) {
        const YAML::Node &key = pair.first;
        lint(key);
        if (key.IsScalar()) {
          auto [first, inserted] = seen.emplace(key.Scalar(), key);
          if (!inserted)
            errors_.emplace_back("duplicate-key", "duplicate key " + quote(key.Scalar()),
                                 location(key, path_),
                                 quote(key.Scalar()) + " is first given at line " +
                                     std::to_string(location(first->second, path_).line));
        }
        lint(pair.second);
      }
    }
    ancestors_.pop_back();
  }

private:
  static constexpr size_t kMaxNodes = 100000;
  const std::string &text_;
  const std::string &path_;
  std::vector<UserError> &errors_;
  std::vector<YAML::Node> ancestors_;
  size_t visited_ = 0;
};

TypeSpec parse_type(const YAML::Node &node, const std::string &path);

// Each parameter's type is checked on its own: a bad one is added to `errors` and the rest still
// read.
std::vector<ParamSpec> parse_params(const YAML::Node &list, const std::string &path,
                                    std::vector<UserError> &errors) {
  std::vector<ParamSpec> params;
  for (const auto &item : list) {
    try {
      params.push_back({item["name"].Scalar(), parse_type(item["type"], path), location(item["name"], path)});
    } catch (const UserError &e) {
      errors.push_back(e);
    }
  }
  return params;
}

// The schema leaves `type` open; its two spellings are checked here, with the same kind of message.
TypeSpec parse_type(const YAML::Node &node, const std::string &path) {
  TypeSpec type;
  type.loc = location(node, path);
  const char *forms = "a type is a Go type expression such as []string, or one mapping: {struct: [{name: "
                      "X, type: T}, ...]} (with name: pkg/path.T to check it against that type), {pointer: T}, "
                      "{slice: T} or {array: T, len: N}";
  if (node.IsScalar()) {
    type.expr = node.Scalar();
    if (type.expr.empty())
      throw UserError("spec-schema", "empty type", type.loc, forms);
    return type;
  }
  if (!node.IsMap())
    throw UserError("spec-schema", "a type must be a string or a mapping", type.loc, forms);
  for (const auto &entry : node) {
    std::string key = entry.first.Scalar();
    if (key == "len" || key == "name")
      continue;
    if (!type.form.empty() || (key != "struct" && key != "pointer" && key != "slice" && key != "array"))
      throw UserError("spec-schema", "unexpected key " + quote(key) + " in a type", location(entry.first, path),
                      forms);
    type.form = key;
    if (key == "struct") {
      if (!entry.second.IsSequence())
        throw UserError("spec-schema", "struct must be a list of {name, type} fields",
                        location(entry.second, path), forms);
      for (const auto &field : entry.second) {
        if (!field.IsMap() || !field["name"] || !field["type"])
          throw UserError("spec-schema", "a struct field needs a name and a type", location(field, path), forms);
        type.fields.push_back({field["name"].Scalar(), parse_type(field["type"], path), location(field["name"], path)});
      }
    } else {
      type.elem.push_back(parse_type(entry.second, path));
    }
  }
  if (type.form.empty())
    throw UserError("spec-schema", "a type mapping needs struct, pointer, slice or array", type.loc, forms);
  if (type.form == "array") {
    auto len = node["len"] ? spec_schema::parse_integer(node["len"].Scalar()) : std::nullopt;
    if (!len || *len < 0)
      throw UserError("spec-schema", "an array type needs len: N (a non-negative integer)", type.loc, forms);
    type.len = static_cast<uint64_t>(*len);
  } else if (node["len"]) {
    throw UserError("spec-schema", "len belongs to array types only", location(node["len"], path), forms);
  }
  if (node["name"]) {
    if (type.form != "struct" || !node["name"].IsScalar() || node["name"].Scalar().empty())
      throw UserError("spec-schema", "name belongs to struct layouts only, and names a type: {name: pkg/path.T, struct: [...]}",
                      location(node["name"], path), forms);
    type.name = node["name"].Scalar();
  }
  return type;
}

UserError duration_error(const YAML::Node &min, const std::string &path) {
  return UserError("spec-schema",
                   "min_duration: " + quote(min.Scalar()) + " is not a duration weave takes: more than 0 and at most 1h",
                   location(min, path), "a number and a unit, ns, us, ms or s, from 1ns to 3600s: 500us, 5ms, 1.5s");
}

// The checks of values that depend on nothing else, made also when the spec has other errors (the
// schema's, say), so that one run reports them all: `return: tru` does not hide a bad min_duration.
void add_independent_errors(const YAML::Node &root, const std::string &path, std::vector<UserError> &errors) {
  if (!root.IsMap())
    return;
  const YAML::Node probes = root["probes"];
  if (!probes || !probes.IsSequence())
    return;
  for (const auto &probe : probes) {
    if (!probe.IsMap())
      continue;
    const YAML::Node min = probe["min_duration"];
    if (!min || !min.IsScalar() || parse_duration(min.Scalar()))
      continue;
    SourceLoc loc = location(min, path);
    bool said = std::any_of(errors.begin(), errors.end(), [&](const UserError &e) {
      auto same = [&](const UserError &x) { return x.loc.line == loc.line && x.loc.column == loc.column; };
      return same(e) || std::any_of(e.others.begin(), e.others.end(), same);
    });
    if (!said)
      errors.push_back(duration_error(min, path));
  }
}

// Builds the Spec from a document the schema accepted. Throws every error it finds (combined).
Spec build(const YAML::Node &root, const std::string &path) {
  Spec spec;
  spec.path = path;
  std::vector<UserError> errors;
  std::map<std::string, SourceLoc> names;
  for (const auto &probe : root["probes"]) {
    ProbeSpec p;
    YAML::Node function = probe["function"];
    YAML::Node line = probe["line"];
    p.function = function ? function.Scalar() : "";
    p.loc = location(function ? function : line, path);
    if (line) {
      const std::string text = line.Scalar();
      p.line_loc = location(line, path);
      size_t colon = text.rfind(':');
      std::optional<long long> number;
      if (colon != std::string::npos && colon > 0)
        number = spec_schema::parse_integer(text.substr(colon + 1));
      if (!number || *number < 1 || *number > (1 << 24)) {
        errors.emplace_back("spec-schema", "line must be FILE:LINE with LINE a line number, found " + quote(text),
                            p.line_loc, "e.g. line: internal/fs/realfs.go:142");
        continue;
      }
      p.line_file = text.substr(0, colon);
      p.line = static_cast<int>(*number);
    }
    if (YAML::Node locals = probe["locals"]) {
      p.all_locals = true;
      p.all_locals_loc = location(locals, path);
      if (!line)
        errors.emplace_back("spec-schema", "locals: all needs line: a function's entry has parameters (args: all)",
                            p.all_locals_loc, "add line: FILE:LINE, or use args: all");
    }
    YAML::Node name = probe["name"];
    p.name = name ? name.Scalar() : line ? line.Scalar() : p.function;
    SourceLoc name_loc = name ? location(name, path) : p.loc;
    if (YAML::Node captures = probe["capture"])
      for (const auto &capture : captures)
        p.captures.push_back({capture.Scalar(), text_location(capture, path)});
    if (YAML::Node when = probe["when"]) {
      p.when = when.Scalar();
      p.when_loc = text_location(when, path);
    }
    if (YAML::Node limits = probe["limits"])
      p.events_per_second = static_cast<uint64_t>(*spec_schema::parse_integer(limits["events_per_second"].Scalar()));
    if (YAML::Node exclude = probe["exclude"])
      for (const auto &pattern : exclude)
        p.exclude.push_back(pattern.Scalar());
    if (YAML::Node args = probe["args"]) {
      p.all_args = true;
      p.all_args_loc = location(args, path);
    }
    if (YAML::Node ret = probe["return"])
      p.capture_return = ret.Scalar() == "true";
    if (YAML::Node min = probe["min_duration"]) {
      p.min_duration_loc = location(min, path);
      if (auto ns = parse_duration(min.Scalar()))
        p.min_duration_ns = *ns;
      else
        errors.push_back(duration_error(min, path));
      if (!p.capture_return)
        errors.emplace_back("spec-schema", "min_duration needs return: true: a call's duration is known at its return",
                            p.min_duration_loc, "add return: true to the probe");
    }
    if (YAML::Node when_return = probe["when_return"]) {
      p.when_return = when_return.Scalar();
      p.when_return_loc = text_location(when_return, path);
      if (!p.capture_return)
        errors.emplace_back("spec-schema", "when_return needs return: true: the results are known at the return",
                            location(when_return, path), "add return: true to the probe");
    }
    if (YAML::Node at_return = probe["capture_at_return"]) {
      for (const auto &capture : at_return)
        p.at_return.push_back({capture.Scalar(), location(capture, path)});
      if (!p.capture_return)
        errors.emplace_back("spec-schema", "capture_at_return needs return: true: its values are read at the return",
                            location(at_return, path), "add return: true to the probe");
    }
    if (YAML::Node contents = probe["contents"]) {
      p.contents = contents.Scalar() == "true";
      p.contents_loc = location(contents, path);
    }
    if (YAML::Node types = probe["contents_types"]) {
      for (const auto &type : types)
        p.contents_types.push_back(type.Scalar());
      p.contents_loc = location(types, path); // where an unknown type is reported
      if (!p.contents)
        errors.emplace_back("spec-schema", "contents_types lists the types contents: true reads first",
                            location(types, path), "add contents: true to the probe");
    }
    if (YAML::Node stack = probe["stack"])
      p.stack = static_cast<int>(*spec_schema::parse_integer(stack.Scalar()));
    if (YAML::Node mode = probe["stack_mode"]) {
      p.stack_mode = mode.Scalar();
      p.stack_mode_loc = location(mode, path);
    }
    if (YAML::Node bytes = probe["stack_bytes"]) {
      p.stack_bytes = static_cast<uint32_t>(*spec_schema::parse_integer(bytes.Scalar()));
      if (p.stack_mode.empty()) {
        p.stack_mode = "window";
        p.stack_mode_loc = location(bytes, path);
      } else if (p.stack_mode != "window") {
        errors.emplace_back("spec-schema", "stack_bytes sizes the stack window: it needs stack_mode: window",
                            location(bytes, path), "drop stack_bytes, or set stack_mode: window");
      }
    }
    if ((p.stack_mode.size() || probe["stack_bytes"]) && !p.stack)
      errors.emplace_back("spec-schema", "stack_mode and stack_bytes need stack: N (how many frames to show)",
                          p.stack_mode_loc, "add stack: 16 to the probe");
    if (YAML::Node inlined = probe["inlined"])
      p.inlined = inlined.Scalar() == "true";
    if (YAML::Node params = probe["params"]) {
      p.has_params = true;
      p.params = parse_params(params, path, errors);
    }
    if (YAML::Node results = probe["results"]) {
      p.has_results = true;
      p.results = parse_params(results, path, errors);
    }
    auto [first, inserted] = names.emplace(p.name, name_loc);
    if (!inserted) {
      errors.emplace_back("duplicate-probe", "duplicate probe name " + quote(p.name), name_loc,
                          "the first probe named " + quote(p.name) + " is at line " +
                              std::to_string(first->second.line) +
                              "; set a different \"name\" on one of them");
      continue;
    }
    spec.probes.push_back(std::move(p));
  }
  if (!errors.empty())
    throw combine_errors(std::move(errors));
  if (YAML::Node options = root["options"])
    if (YAML::Node string_max = options["string_max"])
      spec.options.string_max = static_cast<int>(*spec_schema::parse_integer(string_max.Scalar()));
  if (YAML::Node options = root["options"])
    if (YAML::Node max_functions = options["max_functions"])
      spec.options.max_functions = static_cast<int>(*spec_schema::parse_integer(max_functions.Scalar()));
  if (YAML::Node options = root["options"])
    if (YAML::Node limits = options["limits"])
      spec.options.events_per_second =
          static_cast<uint64_t>(*spec_schema::parse_integer(limits["events_per_second"].Scalar()));
  if (YAML::Node options = root["options"])
    if (YAML::Node ring_size = options["ring_size"]) {
      uint64_t bytes = static_cast<uint64_t>(*spec_schema::parse_integer(ring_size.Scalar()));
      // The kernel takes a power of two of whole pages; the schema bounds the range.
      if (bytes & (bytes - 1))
        throw UserError("spec-schema", "options.ring_size: " + std::to_string(bytes) + " is not a power of two",
                        SourceLoc{path, ring_size.Mark().line + 1, ring_size.Mark().column + 1},
                        "use e.g. 16777216 (16 MiB) or 67108864 (64 MiB)");
      spec.options.ring_size = bytes;
    }
  if (YAML::Node options = root["options"])
    if (YAML::Node slice_max = options["slice_max"])
      spec.options.slice_max = static_cast<int>(*spec_schema::parse_integer(slice_max.Scalar()));
  return spec;
}

} // namespace

Spec parse_spec_file(const std::string &path) {
  return parse_spec_text(read_file(path), path);
}

Spec parse_spec_text(const std::string &text, const std::string &path) {
  refuse_non_text(text, path);
  // Like a compiler, one run reports every independent error, each located: the checks below add
  // to `errors` and go on where what follows does not depend on what failed.
  std::vector<UserError> errors = utf8_errors(text, path);
  try {
    YAML::Node root = load(text, path);
    if (root.IsNull())
      throw UserError("spec-schema", "the spec is empty", SourceLoc{path}, kExample);
    Linter(text, path, errors).lint(root);
    if (!root.IsMap())
      throw UserError("spec-schema",
                      "the spec must be a mapping with a \"probes\" list, found " +
                          describe_found(root),
                      location(root, path), kExample);
    try {
      spec_schema::validate(root, spec_schema::spec_schema(), path);
    } catch (const UserError &e) {
      errors.push_back(e);
    }
    if (errors.empty())
      return build(root, path);
    add_independent_errors(root, path, errors);
  } catch (const UserError &e) {
    errors.push_back(e);
  }
  throw combine_errors(std::move(errors));
}

std::optional<uint64_t> parse_duration(const std::string &text) {
  // Digits, an optional fraction, then the unit: parsed exactly, in integers (no float rounding).
  size_t i = 0;
  uint64_t whole = 0, frac = 0, frac_scale = 1;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, digits = true) {
    if (whole > 1'000'000'000'000ULL)
      return std::nullopt;
    whole = whole * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, digits = true) {
      if (frac_scale >= 1'000'000'000ULL)
        return std::nullopt; // finer than a nanosecond in any unit
      frac = frac * 10 + static_cast<uint64_t>(text[i] - '0');
      frac_scale *= 10;
    }
  }
  if (!digits)
    return std::nullopt;
  std::string unit = text.substr(i);
  uint64_t scale = unit == "ns" ? 1 : unit == "us" || unit == "\u00b5s" ? 1000 : unit == "ms" ? 1'000'000 : unit == "s" ? 1'000'000'000 : 0;
  // At most an hour: a longer threshold is a typo (and keeps every product below 2^64).
  if (!scale || (frac * scale) % frac_scale || whole > 3'600'000'000'000ULL / scale)
    return std::nullopt;
  uint64_t ns = whole * scale + frac * scale / frac_scale;
  if (ns == 0 || ns > 3'600'000'000'000ULL)
    return std::nullopt;
  return ns;
}

std::string dump_spec(const Spec &spec) {
  std::ostringstream out;
  for (size_t i = 0; i < spec.probes.size(); ++i) {
    const ProbeSpec &probe = spec.probes[i];
    std::string prefix = "probes[" + std::to_string(i) + "].";
    out << prefix << "name = " << quote(probe.name) << "\n";
    out << prefix << "function = " << quote(probe.function) << "\n";
    for (size_t j = 0; j < probe.captures.size(); ++j)
      out << prefix << "capture[" << j << "] = " << quote(probe.captures[j].expr) << "\n";
    if (probe.min_duration_ns)
      out << prefix << "min_duration_ns = " << probe.min_duration_ns << "\n";
    if (!probe.when_return.empty())
      out << prefix << "when_return = " << quote(probe.when_return) << "\n";
    for (size_t j = 0; j < probe.at_return.size(); ++j)
      out << prefix << "capture_at_return[" << j << "] = " << quote(probe.at_return[j].expr) << "\n";
  }
  out << "options.string_max = " << spec.options.string_max << "\n";
  return out.str();
}

} // namespace weave
