// Shared by the libFuzzer targets: an input as a file, for the readers that take a path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace weave::fuzz {

// The input in an anonymous in-memory file, named by a /proc/self/fd path (a regular file, as the
// binary readers require). Closed when it goes away.
class MemFile {
public:
  MemFile(const uint8_t *data, size_t size) {
    fd_ = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0)
      __builtin_trap();
    for (size_t done = 0; done < size;) {
      ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0)
        __builtin_trap();
      done += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { close(fd_); }
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;
  const std::string &path() const { return path_; }

private:
  int fd_ = -1;
  std::string path_;
};

} // namespace weave::fuzz
