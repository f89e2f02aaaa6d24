// Build ids from ELF notes, shared by the generator (recorded in the manifest) and the tracer
// (checked against the binary it attaches to).
#pragma once

#include <optional>
#include <string>

typedef struct Elf Elf;

namespace weave {

// The Go build id (".note.go.buildid", owner "Go", type 4) as its text (as "hex:" and its bytes in
// hex when they are not printable UTF-8), or else the GNU build id
// (owner "GNU", type NT_GNU_BUILD_ID) as lowercase hex, prefixed "gnu:". Empty when neither exists.
// Reads PT_NOTE segments, so it works without section headers.
std::string read_build_id(Elf *elf);

// The same for a file; on failure returns empty and sets `error`.
std::string read_build_id_file(const std::string &path, std::string &error);

// The descriptor of the first note of `owner` and `type` in a file, from its PT_NOTE segments or,
// when none holds it, its SHT_NOTE sections. nullopt when there is none; `error` is set when the
// file cannot be read as ELF at all.
std::optional<std::string> read_note_file(const std::string &path, const std::string &owner, unsigned type,
                                          std::string &error);

} // namespace weave
