// `weave funcs BIN [PATTERN]`: the functions of a Go binary with their parameters, types and where
// the ABI model puts each one at entry (and each result at RET). Useful to write specs, and to see
// what the model decided.
#pragma once

#include <string>
#include <vector>

namespace weave {

struct BinaryImage;
class DebugInfo;
class Pclntab;

// Functions whose name matches the glob `pattern` (fnmatch syntax; empty matches all), sorted by
// name. With DWARF (`debug`), each with its parameters and locations, and its argument size checked
// against .gopclntab; without (a stripped binary), names, entries and argument sizes from
// .gopclntab. Throws UserError [no-match] when nothing matches, with the nearest names as a hint.
// A function whose own metadata does not check out is listed with what is known and adds a line to
// `warnings` (when given), naming it and the reason.
std::string list_functions(const BinaryImage &image, DebugInfo *debug, const Pclntab *pcln,
                           const std::string &pattern, std::vector<std::string> *warnings = nullptr);

// The names alone, one per line, sorted and without duplicates, from .gopclntab (no DWARF is read,
// so it is quick enough for shell completion); functions whose name matches the glob `pattern`
// (empty matches all). Nothing matching is no error here: the list is empty.
std::string list_function_names(const Pclntab &pcln, const std::string &pattern);

} // namespace weave
