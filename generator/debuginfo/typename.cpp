#include "debuginfo/typename.h"

#include <algorithm>
#include <cctype>

namespace weave {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return s;
}

// The index of the ']' closing the '[' at `open`, or npos.
size_t closing_bracket(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '[')
      ++depth;
    else if (s[i] == ']' && --depth == 0)
      return i;
  }
  return std::string_view::npos;
}

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}

// Anything an import path may hold that cannot be confused with the type grammar around it.
bool path_char(char c) {
  return name_char(c) || c == '/' || c == '.' || c == '-' || c == '~' || c == '%' || c == '+';
}

constexpr int kMaxDepth = 100; // nested type arguments; a pasted name must not exhaust the stack

std::optional<GoTypeName> split(std::string_view text, std::string *error, int depth) {
  auto fail = [error](std::string why) -> std::optional<GoTypeName> {
    if (error)
      *error = std::move(why);
    return std::nullopt;
  };
  if (depth > kMaxDepth)
    return fail("the name nests more than 100 levels deep");
  GoTypeName out;
  std::string_view s = trim(text);
  for (;;) {
    if (s.starts_with("*")) {
      out.ops.emplace_back("*");
      s = trim(s.substr(1));
    } else if (s.starts_with("[]")) {
      out.ops.emplace_back("[]");
      s = trim(s.substr(2));
    } else if (s.starts_with("[")) {
      size_t close = s.find(']');
      std::string_view digits = s.substr(1, close == std::string_view::npos ? 0 : close - 1);
      if (close == std::string_view::npos || digits.empty() ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return fail("expected [N] with a length N");
      out.ops.emplace_back(s.substr(0, close + 1));
      s = trim(s.substr(close + 1));
    } else if (s.starts_with("map[")) {
      size_t close = closing_bracket(s, 3);
      if (close == std::string_view::npos)
        return fail("the map's key has no closing ]");
      std::optional<GoTypeName> key = split(s.substr(4, close - 4), error, depth + 1);
      if (!key)
        return std::nullopt;
      out.ops.push_back("map[" + key->str() + "]");
      s = trim(s.substr(close + 1));
    } else if (s.starts_with("chan<- ") || s.starts_with("<-chan ")) {
      out.ops.emplace_back(s.substr(0, 7));
      s = trim(s.substr(7));
    } else if (s.starts_with("chan ")) {
      out.ops.emplace_back("chan ");
      s = trim(s.substr(5));
    } else {
      break;
    }
  }
  if (s.starts_with("func(") || s.starts_with("struct") || s.starts_with("interface"))
    return fail("a func, struct or interface literal has no name to look up");
  std::string_view base = s;
  if (size_t open = s.find('['); open != std::string_view::npos) {
    size_t close = closing_bracket(s, open);
    if (close == std::string_view::npos)
      return fail("the type arguments have no closing ]");
    if (close + 1 != s.size())
      return fail("unexpected \"" + std::string(s.substr(close + 1)) + "\" after the type arguments");
    base = s.substr(0, open);
    std::string_view list = s.substr(open + 1, close - open - 1);
    size_t start = 0;
    int nested = 0;
    for (size_t i = 0; i <= list.size(); ++i) {
      if (i < list.size() && list[i] == '[')
        ++nested;
      else if (i < list.size() && list[i] == ']')
        --nested;
      else if (i == list.size() || (list[i] == ',' && nested == 0)) {
        std::optional<GoTypeName> arg = split(list.substr(start, i - start), error, depth + 1);
        if (!arg)
          return std::nullopt;
        out.args.push_back(arg->str());
        start = i + 1;
      }
    }
  }
  if (base.empty())
    return fail("expected a type name");
  for (char c : base)
    if (!path_char(c))
      return fail(std::string("unexpected '") + c + "' in the name");
  // The package path ends at the last '.' after its last '/': a path element may hold dots
  // ("gopkg.in/yaml.v3"), a type name never does.
  size_t slash = base.rfind('/');
  size_t dot = base.rfind('.');
  if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
    out.package = base.substr(0, dot);
    out.name = base.substr(dot + 1);
  } else if (slash != std::string_view::npos) {
    return fail("a package path needs .Name after it");
  } else {
    out.name = base;
  }
  if (out.name.empty() || !std::all_of(out.name.begin(), out.name.end(), name_char) ||
      std::isdigit(static_cast<unsigned char>(out.name[0])))
    return fail("\"" + out.name + "\" is not a type name");
  return out;
}

} // namespace

std::string GoTypeName::base() const {
  std::string out = package.empty() ? name : package + "." + name;
  if (!args.empty()) {
    out += '[';
    for (size_t i = 0; i < args.size(); ++i)
      out += (i ? "," : "") + args[i];
    out += ']';
  }
  return out;
}

std::string GoTypeName::str() const {
  std::string out;
  for (const std::string &op : ops)
    out += op;
  return out + base();
}

std::optional<GoTypeName> split_go_type_name(std::string_view text, std::string *error) {
  return split(text, error, 0);
}

std::string escape_package_path(std::string_view package) {
  // cmd/internal/objabi.PathToPrefix: '.' after the last '/', and '%', '"', spaces, control and
  // non-ASCII bytes anywhere.
  size_t slash = package.rfind('/');
  std::string out;
  for (size_t i = 0; i < package.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(package[i]);
    bool dot_in_last = c == '.' && (slash == std::string_view::npos || i > slash);
    if (dot_in_last || c <= ' ' || c == '%' || c == '"' || c >= 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

} // namespace weave
