#include "common/diag.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace weave {

namespace {

std::string source_line(const SourceLoc &loc) {
  std::ifstream in(loc.file);
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

std::string format_error(const UserError &error) {
  std::ostringstream out;
  if (error.loc.line > 0)
    out << error.loc.file << ":" << error.loc.line << ":" << error.loc.column << ": ";
  else if (!error.loc.file.empty())
    out << error.loc.file << ": ";
  out << "error[" << error.id << "]: " << error.what() << "\n";
  if (error.loc.line > 0) {
    std::string line = source_line(error.loc);
    if (!line.empty()) {
      out << "  " << line << "\n  ";
      for (int i = 1; i < error.loc.column && i <= static_cast<int>(line.size()); ++i)
        out << (line[i - 1] == '\t' ? '\t' : ' ');
      out << "^\n";
    }
  }
  if (!error.hint.empty())
    out << "  hint: " << error.hint << "\n";
  return out.str();
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

} // namespace weave
