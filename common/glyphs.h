// The two non-ASCII characters of the tracer's text output, ← (a return) and µ (microseconds), in
// the terminal's character set: a locale that names another one (LANG=C, POSIX, ISO-8859-1) gets
// "<-" and "u" instead of bytes it would show as mojibake. An unset locale is taken as UTF-8, as
// Debian's C.UTF-8 default and every terminal emulator today are.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace weave {

// Whether text may hold UTF-8, by LC_ALL, else LC_CTYPE, else LANG (the first one set), as
// setlocale(LC_CTYPE, "") reads them.
inline bool utf8_text_locale() {
  static const bool utf8 = [] {
    for (const char *name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
      const char *value = std::getenv(name);
      if (!value || !*value)
        continue;
      std::string locale;
      for (const char *c = value; *c; ++c)
        if (*c != '-' && *c != '_')
          locale += static_cast<char>(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
      return locale.find("utf8") != std::string::npos;
    }
    return true;
  }();
  return utf8;
}

inline std::string_view return_arrow() { return utf8_text_locale() ? "\u2190" : "<-"; }
inline std::string_view micro_sign() { return utf8_text_locale() ? "\u00b5" : "u"; }

} // namespace weave
