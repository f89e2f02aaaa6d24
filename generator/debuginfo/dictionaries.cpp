#include "debuginfo/dictionaries.h"

#include "gobinary/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string_view>

namespace weave {

namespace {

constexpr std::string_view kDictMarker = "..dict.";

// The first top-level "[...]" of a name: [open, close] indexes, brackets nested inside counted.
std::optional<std::pair<size_t, size_t>> type_arguments(std::string_view name, size_t from = 0) {
  size_t open = name.find('[', from);
  if (open == std::string_view::npos)
    return std::nullopt;
  int depth = 0;
  for (size_t i = open; i < name.size(); ++i) {
    if (name[i] == '[')
      ++depth;
    else if (name[i] == ']' && --depth == 0)
      return std::pair{open, i};
  }
  return std::nullopt;
}

// "main.(*Set[go.shape.int_0]).Add" -> "main.(*Set).Add": the name with its type arguments removed.
std::string without_arguments(std::string_view name) {
  auto args = type_arguments(name);
  if (!args)
    return std::string(name);
  return std::string(name.substr(0, args->first)) + std::string(name.substr(args->second + 1));
}

// "main.(*Set).Add" -> "main.Set"; "main.Set.Size" -> "main.Set"; nullopt for a plain function.
std::optional<std::string> receiver_type(const std::string &bare, size_t package_end) {
  std::string_view rest = std::string_view(bare).substr(package_end);
  if (rest.starts_with("(*")) {
    size_t close = rest.find(')');
    if (close == std::string_view::npos)
      return std::nullopt;
    return bare.substr(0, package_end) + std::string(rest.substr(2, close - 2));
  }
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos)
    return std::nullopt;
  return bare.substr(0, package_end) + std::string(rest.substr(0, dot));
}

// Calls fn(name, sym) for each defined symbol of the binary's .symtab (none when it cannot be
// read: a stripped binary has no .symtab).
template <class Fn> void for_each_defined_symbol(const std::string &path, Fn fn) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  elf_version(EV_CURRENT);
  if (Elf *elf = elf_begin(fd, ELF_C_READ, nullptr)) {
    for (Elf_Scn *scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_SYMTAB)
        continue;
      for_each_symbol(elf, scn, shdr, [&](const char *name, const GElf_Sym &sym) {
        if (sym.st_shndx != SHN_UNDEF)
          fn(std::string_view(name), sym);
        return true;
      });
    }
    elf_end(elf);
  }
  close(fd);
}

} // namespace

std::vector<ElfSymbol> dictionary_symbols(const std::string &path) {
  std::vector<ElfSymbol> out;
  for_each_defined_symbol(path, [&](std::string_view name, const GElf_Sym &sym) {
    if (name.find(kDictMarker) != std::string_view::npos)
      out.push_back(ElfSymbol{std::string(name), sym.st_value, sym.st_size});
  });
  std::sort(out.begin(), out.end(), [](const ElfSymbol &a, const ElfSymbol &b) {
    return a.address != b.address ? a.address < b.address : a.name < b.name;
  });
  return out;
}

std::vector<std::pair<std::string, std::string>> itab_symbols(const std::string &path) {
  std::vector<std::pair<std::string, std::string>> out;
  for_each_defined_symbol(path, [&](std::string_view n, const GElf_Sym &) {
    if (!(n.starts_with("go:itab.") || n.starts_with("go.itab.")))
      return;
    n.remove_prefix(8);
    // The interface is after the last top-level comma: a concrete type's own name may hold
    // commas inside brackets (main.Pair[int,string]), an interface's rarely at top level.
    int depth = 0;
    size_t comma = std::string_view::npos;
    for (size_t i = 0; i < n.size(); ++i) {
      if (n[i] == '[' || n[i] == '(' || n[i] == '{')
        ++depth;
      else if (n[i] == ']' || n[i] == ')' || n[i] == '}')
        --depth;
      else if (n[i] == ',' && depth == 0)
        comma = i;
    }
    if (comma != std::string_view::npos && comma > 0 && comma + 1 < n.size())
      out.emplace_back(std::string(n.substr(0, comma)), std::string(n.substr(comma + 1)));
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::string> instantiation_name(const std::string &shape_function, const std::string &dictionary) {
  size_t marker = dictionary.find(kDictMarker);
  if (marker == std::string::npos)
    return std::nullopt;
  // "pkg..dict.X" names "pkg.X"; the package path may hold dots of its own ("example.com/a.F").
  std::string dict_as_function = dictionary.substr(0, marker + 1) + dictionary.substr(marker + kDictMarker.size());
  auto dict_args = type_arguments(dict_as_function);
  auto shape_args = type_arguments(shape_function);
  if (!dict_args || !shape_args)
    return std::nullopt;
  std::string dict_bare = without_arguments(dict_as_function);
  std::string shape_bare = without_arguments(shape_function);
  size_t package_end = marker + 1; // just past "pkg."
  if (shape_bare.compare(0, package_end, dict_as_function, 0, package_end) != 0)
    return std::nullopt;
  if (dict_bare != shape_bare && dict_bare != receiver_type(shape_bare, package_end))
    return std::nullopt;
  return shape_function.substr(0, shape_args->first) +
         dict_as_function.substr(dict_args->first, dict_args->second - dict_args->first + 1) +
         shape_function.substr(shape_args->second + 1);
}

std::vector<std::pair<uint64_t, std::string>> instantiations_of(const std::string &shape_function,
                                                                const std::vector<ElfSymbol> &dictionaries) {
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const ElfSymbol &d : dictionaries)
    if (auto name = instantiation_name(shape_function, d.name))
      out.emplace_back(d.address, *name);
  return out;
}

} // namespace weave
