// GoTypeName — a Go type name as a binary spells it ("*github.com/org/pkg.T", "[]net/url.URL",
// "map[string]*main.Pair[string,int64]"), split into the operators in front of the named type, its
// package path, its name and its type arguments. DWARF and the runtime's type descriptors both name
// types this way (cmd/link writes the compiler's LinkString: full package path, type arguments
// joined by "," without spaces), so one splitter serves every place that looks a declared name up.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weave {

struct GoTypeName {
  // Outermost first, each as Go spells it: "*", "[]", "[4]", "map[string]", "chan ", "<-chan ",
  // "chan<- ". A map's key is kept whole, in its canonical spelling.
  std::vector<std::string> ops;
  std::string package; // "github.com/nats-io/nats-server/v2/server", "unsafe"; "" for a builtin
  std::string name;    // "client", "Pair", "int"
  // Type arguments of a generic instantiation, each a type name in its canonical spelling.
  std::vector<std::string> args;

  // The named type without the operators, as the binary spells it: "main.Pair[string,int64]".
  std::string base() const;
  // The whole name, operators included.
  std::string str() const;
};

// Splits `text`; spaces around type arguments are dropped ("main.Pair[string, int64]" is
// "main.Pair[string,int64]"). nullopt, with the reason in `error`, for text that is not a named type
// behind operators (a func, struct or interface literal, unbalanced brackets, an empty name).
std::optional<GoTypeName> split_go_type_name(std::string_view text, std::string *error = nullptr);

// A package path as the linker escapes it in symbol and type names (a '.' in its last element as
// "%2e", cmd/internal/objabi.PathToPrefix): "gopkg.in/yaml.v3" is spelled "gopkg.in/yaml%2ev3".
std::string escape_package_path(std::string_view package);

} // namespace weave
