// Generic dictionaries: the read-only data symbols the Go linker names "pkg..dict.F[int]" (one per
// instantiation a program uses), whose address a shape instance receives as its hidden first
// argument. Their names are the instantiations the user wrote; stripped binaries have none.
#pragma once

#include "gobinary/binary.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weave {

// Every "..dict." symbol of .symtab, sorted by address; empty when there is no .symtab.
std::vector<ElfSymbol> dictionary_symbols(const std::string &path);

// The itabs the linker laid out: (concrete type, interface type) for each "go:itab.T,I" symbol
// ("go.itab." before Go 1.20) of .symtab, sorted; the conversions of T to the non-empty interface I
// the program makes. Empty when there is no .symtab.
std::vector<std::pair<std::string, std::string>> itab_symbols(const std::string &path);

// The instantiation a dictionary stands for, spelled as the shape function is: the type arguments
// of the dictionary's name put in place of the shape's. Go 1.18-1.20 name a method's dictionary
// after the method ("main..dict.(*Set[int]).Add"), later versions after its type
// ("main..dict.Set[int]"); both give "main.(*Set[int]).Add" for "main.(*Set[go.shape.int_0]).Add".
// nullopt when the dictionary does not belong to this shape function (another function, or another
// generic type of the same package).
std::optional<std::string> instantiation_name(const std::string &shape_function, const std::string &dictionary);

// The dictionaries that may be passed to `shape_function`: (address, instantiation name).
std::vector<std::pair<uint64_t, std::string>> instantiations_of(const std::string &shape_function,
                                                                const std::vector<ElfSymbol> &dictionaries);

} // namespace weave
