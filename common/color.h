// Colour on a terminal, plain text anywhere else, for weave's diagnostics and the tracer's text
// events: `--color=auto|always|never`. auto colours only when the output is a terminal, NO_COLOR
// is unset or empty (https://no-color.org) and TERM is not "dumb", as bpftrace and Delve do; an
// explicit always or never wins over NO_COLOR. Header-only: weave and the tracer both use it.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unistd.h>

namespace weave {

inline bool use_color(const std::string &mode, int fd) {
  if (mode == "always")
    return true;
  if (mode == "never")
    return false;
  const char *no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color)
    return false;
  const char *term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0)
    return false;
  return isatty(fd) == 1;
}

namespace ansi {
inline constexpr const char *kReset = "\033[0m";
inline constexpr const char *kBold = "\033[1m";
inline constexpr const char *kDim = "\033[2m";
inline constexpr const char *kRed = "\033[31m";
inline constexpr const char *kBoldRed = "\033[1;31m";
inline constexpr const char *kGreen = "\033[32m";
inline constexpr const char *kYellow = "\033[33m";
inline constexpr const char *kBoldYellow = "\033[1;33m";
inline constexpr const char *kCyan = "\033[36m";
} // namespace ansi

// Colours a diagnostic as format_error() renders it, line by line, without changing its text:
// "file:line:col: " bold, "error[id]:" bold red, the caret green, "hint:" cyan; a
// "weave: warning:" line's "warning:" bold yellow.
inline std::string color_diagnostic(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(start, end - start);
    size_t error = line.find("error[");
    size_t close = error == std::string_view::npos ? error : line.find("]: ", error);
    size_t first = line.find_first_not_of(" \t");
    if (close != std::string_view::npos) {
      if (error > 0)
        out.append(ansi::kBold).append(line.substr(0, error)).append(ansi::kReset);
      out.append(ansi::kBoldRed).append(line.substr(error, close + 2 - error)).append(ansi::kReset);
      out.append(ansi::kBold).append(line.substr(close + 2)).append(ansi::kReset);
    } else if (line.substr(0, 8) == "  hint: ") {
      out.append("  ").append(ansi::kCyan).append("hint:").append(ansi::kReset).append(line.substr(7));
    } else if (first != std::string_view::npos && line[first] == '^' && first + 1 == line.size()) {
      out.append(line.substr(0, first)).append(ansi::kGreen).append("^").append(ansi::kReset);
    } else if (line.substr(0, 16) == "weave: warning: ") {
      out.append("weave: ").append(ansi::kBoldYellow).append("warning:").append(ansi::kReset)
          .append(line.substr(15));
    } else {
      out.append(line);
    }
    if (nl != std::string_view::npos)
      out += '\n';
    start = end + 1;
  }
  return out;
}

} // namespace weave
