// Files weave and the tracer read from untrusted places and write as root (README "Safety").
//
// Reading: a file is opened without blocking (a FIFO or a device must not hang weave), checked with
// fstat on the descriptor that is then read (no window between the check and the read), required
// to be a regular file and read up to a bound. With `follow` false the last component must not be
// a symbolic link (O_NOFOLLOW): a checked-in tree is someone else's input.
//
// Writing: a file is never opened by its final name. It is created with mkstemp (O_CREAT|O_EXCL,
// so no link is followed and no existing file is reused) in the directory it belongs to, filled,
// and renamed over the name: rename(2) replaces a planted link instead of writing through it, and a
// reader sees the old file or the new one whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace weave {

enum class ReadStatus {
  Ok,
  Missing,    // no such file
  Symlink,    // the last component is a symbolic link (follow == false)
  NotRegular, // a directory, FIFO, socket or device; `error` says which
  TooLarge,   // more than max_bytes; `error` says the size and the bound
  Error,      // open or read failed; `error` says why
};

// "a FIFO", "a directory", "a character device"... for a st_mode.
std::string file_kind(mode_t mode);

// Reads the regular file `path`, at most max_bytes, into out. `error` is a sentence without the
// path ("is a FIFO, not a regular file"), for the caller to prefix.
ReadStatus read_regular_file(const std::string &path, size_t max_bytes, bool follow, std::string &out,
                             std::string &error);

// A temporary file for `path`, created in its directory with mkstemp as ".NAME.XXXXXX" (mode
// 0600 until chmod): returns the descriptor (O_CLOEXEC) and sets tmp_path, or -1 with `error`.
int create_temp_beside(const std::string &path, std::string &tmp_path, std::string &error);

// Writes `content` to `path` through create_temp_beside, fchmod(mode), fsync-free rename.
// False with `error` (the temporary removed) when any step fails.
bool write_file_replacing(const std::string &path, std::string_view content, mode_t mode,
                          std::string &error);

} // namespace weave
