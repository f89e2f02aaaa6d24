// Separate debug information: the DWARF and symbol table of a stripped binary kept in another
// file — an unstripped twin (`--debug-file`), a file named by the binary's .gnu_debuglink, or one
// filed under its GNU build id in a debug directory (/usr/lib/debug/.build-id/xx/yyyy.debug).
//
// A debug file is believed only when it provably describes the same build: every build id both
// files carry (Go's .note.go.buildid, the GNU build id note) must agree, and at least one must be
// there to compare; a .gnu_debuglink candidate must also match the link's CRC32.
#pragma once

#include "gobinary/binary.h"

#include <string>
#include <vector>

namespace weave {

struct DebugSearch {
  std::string file;              // --debug-file: this file, or an error
  std::vector<std::string> dirs; // --debug-dir, in order; /usr/lib/debug when empty
};

// When `search.file` is set, or `image` has no DWARF of its own, finds its debug file and records
// it: image.debug_path is then that file and image.has_dwarf true; the binary's symbol-table facts
// it lacks (function symbols, runtime.types, runtime.tlsg) come from the debug file. Candidates
// found by looking that do not match are passed over, each with a line in `notes`. Throws
// UserError for a --debug-file that cannot be used: [debug-file-unreadable] (missing, not a regular
// file, not ELF), [debug-file-mismatch] (another build, or another architecture),
// [debug-file-unverified] (no build id to compare), [debug-file-no-dwarf].
void find_debug_file(BinaryImage &image, const DebugSearch &search, std::vector<std::string> &notes);

// The file to read DWARF and the symbol table from: the debug file when there is one.
inline const std::string &dwarf_path(const BinaryImage &image) {
  return image.debug_path.empty() ? image.path : image.debug_path;
}

} // namespace weave
