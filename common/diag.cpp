#include "common/diag.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

namespace weave {

namespace {

std::map<std::string, std::string> &source_texts() {
  static std::map<std::string, std::string> texts;
  return texts;
}

std::string source_line(const SourceLoc &loc) {
  auto text = source_texts().find(loc.file);
  std::istringstream memory(text != source_texts().end() ? text->second : std::string());
  std::ifstream file;
  if (text == source_texts().end())
    file.open(loc.file);
  std::istream &in = text != source_texts().end() ? static_cast<std::istream &>(memory) : file;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (n == loc.line)
      return line;
  return {};
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

namespace {

// A source line as the terminal should show it: bytes that are not UTF-8 become '?', one for one,
// so the caret below still lines up and no stray byte reaches the terminal.
std::string printable_line(std::string line) {
  for (size_t pos = invalid_utf8(line); pos != std::string::npos;) {
    line[pos] = '?';
    size_t next = invalid_utf8(std::string_view(line).substr(pos + 1));
    pos = next == std::string::npos ? next : pos + 1 + next;
  }
  return line;
}

void format_one(std::ostringstream &out, const UserError &error) {
  if (error.loc.line > 0)
    out << error.loc.file << ":" << error.loc.line << ":" << error.loc.column << ": ";
  else if (!error.loc.file.empty())
    out << error.loc.file << ": ";
  out << "error[" << error.id << "]: " << error.what() << "\n";
  if (error.loc.line > 0) {
    std::string line = printable_line(source_line(error.loc));
    if (!line.empty()) {
      out << "  " << line << "\n  ";
      for (int i = 1; i < error.loc.column && i <= static_cast<int>(line.size()); ++i)
        out << (line[i - 1] == '\t' ? '\t' : ' ');
      out << "^\n";
    }
  }
  if (!error.hint.empty())
    out << "  hint: " << error.hint << "\n";
}

} // namespace

void set_source_text(const std::string &name, std::string text) {
  source_texts()[name] = std::move(text);
}

std::string format_error(const UserError &error) {
  std::ostringstream out;
  format_one(out, error);
  size_t total = 1 + error.others.size();
  for (size_t i = 0; i < error.others.size() && i + 1 < kMaxErrorsShown; ++i)
    format_one(out, error.others[i]);
  if (total > kMaxErrorsShown)
    out << "... and " << total - kMaxErrorsShown << " more error"
        << (total - kMaxErrorsShown == 1 ? "" : "s") << "\n";
  if (total > 1)
    out << total << " errors\n";
  return out.str();
}

UserError combine_errors(std::vector<UserError> errors) {
  std::vector<UserError> flat;
  for (auto &error : errors) {
    std::vector<UserError> others = std::move(error.others);
    error.others.clear();
    flat.push_back(std::move(error));
    for (auto &other : others)
      flat.push_back(std::move(other));
  }
  // Errors without a line (the file as a whole) first, then in the order of the text.
  std::stable_sort(flat.begin(), flat.end(), [](const UserError &a, const UserError &b) {
    return std::pair(a.loc.line, a.loc.column) < std::pair(b.loc.line, b.loc.column);
  });
  UserError first = std::move(flat.front());
  first.others.assign(std::make_move_iterator(flat.begin() + 1), std::make_move_iterator(flat.end()));
  return first;
}

size_t invalid_utf8(std::string_view text) {
  // Unicode 15, table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF.
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  for (size_t i = 0; i < text.size();) {
    unsigned char c = byte(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
      n = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      lo = c == 0xE0 ? 0xA0 : 0x80;
      hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      lo = c == 0xF0 ? 0x90 : 0x80;
      hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
      return i;
    if (i + n >= text.size())
      return i;
    if (byte(i + 1) < lo || byte(i + 1) > hi)
      return i;
    for (size_t k = 2; k <= n; ++k)
      if ((byte(i + k) & 0xC0) != 0x80)
        return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

std::vector<std::string> nearest_names(std::string_view wanted,
                                       const std::vector<std::string> &candidates, size_t max) {
  // A typo is a few edits away; allow about a third of the name, at least 2.
  size_t limit = std::max<size_t>(2, wanted.size() / 3);
  // No Go name is this long; the quadratic distance would take minutes on a pasted blob.
  if (wanted.size() > 1024)
    return {};
  std::vector<std::pair<size_t, size_t>> scored; // (distance, index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    // The lengths' difference is a lower bound of the distance: most candidates stop here.
    size_t a = wanted.size(), b = candidates[i].size();
    if ((a > b ? a - b : b - a) > limit)
      continue;
    size_t d = edit_distance(wanted, candidates[i]);
    if (d <= limit)
      scored.emplace_back(d, i);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](auto &a, auto &b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < max; ++i)
    out.push_back(candidates[scored[i].second]);
  return out;
}

std::string did_you_mean(std::string_view wanted, const std::vector<std::string> &candidates) {
  auto names = nearest_names(wanted, candidates);
  if (names.empty())
    return {};
  std::string text = "did you mean " + names[0];
  for (size_t i = 1; i < names.size(); ++i)
    text += (i + 1 == names.size() ? " or " : ", ") + names[i];
  return text + "?";
}

std::string did_you_mean_go_name(std::string_view wanted, const std::vector<std::string> &candidates) {
  constexpr size_t kMax = 3;
  std::vector<std::string> completions;
  size_t more = 0;
  if (!wanted.empty() && wanted.front() != '/')
    for (const std::string &name : candidates)
      if (name.size() > wanted.size() && name.compare(name.size() - wanted.size(), wanted.size(), wanted) == 0 &&
          name[name.size() - wanted.size() - 1] == '/' &&
          std::find(completions.begin(), completions.end(), name) == completions.end()) {
        if (completions.size() < kMax)
          completions.push_back(name);
        else
          ++more;
      }
  if (completions.empty()) {
    if (std::string typo = did_you_mean(wanted, candidates); !typo.empty() || wanted.find('/') != wanted.npos)
      return typo;
    // A typo in a name given without its import path: compare with each name's last path element.
    std::vector<std::string> bases;
    for (const std::string &name : candidates) {
      size_t slash = name.rfind('/');
      bases.push_back(slash == name.npos ? name : name.substr(slash + 1));
    }
    for (const std::string &base : nearest_names(wanted, bases, 1))
      for (size_t i = 0; i < bases.size(); ++i)
        if (bases[i] == base && candidates[i] != base)
          return "did you mean " + candidates[i] + "? A Go function is named with its package's whole import path";
    return {};
  }
  std::string text = "did you mean " + completions[0];
  for (size_t i = 1; i < completions.size(); ++i)
    text += (i + 1 == completions.size() && !more ? " or " : ", ") + completions[i];
  if (more)
    text += " or " + std::to_string(more) + " more";
  return text + "? A Go function is named with its package's whole import path";
}

} // namespace weave
