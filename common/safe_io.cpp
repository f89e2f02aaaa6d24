#include "common/safe_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weave {

std::string file_kind(mode_t mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISLNK(mode))
    return "a symbolic link";
  return "not a regular file";
}

ReadStatus read_regular_file(const std::string &path, size_t max_bytes, bool follow, std::string &out,
                             std::string &error) {
  out.clear();
  // O_NONBLOCK: opening a FIFO with no writer, or some devices, would otherwise wait forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (follow ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      error = "no such file";
      return ReadStatus::Missing;
    }
    if (err == ELOOP && !follow) {
      error = "is a symbolic link (not followed)";
      return ReadStatus::Symlink;
    }
    error = std::strerror(err);
    return ReadStatus::Error;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    error = std::strerror(errno);
    return ReadStatus::Error;
  }
  if (!S_ISREG(st.st_mode)) {
    error = "is " + file_kind(st.st_mode) + ", not a regular file";
    return ReadStatus::NotRegular;
  }
  auto too_large = [&](unsigned long long size) {
    error = "is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
            " weave reads";
    return ReadStatus::TooLarge;
  };
  if (static_cast<unsigned long long>(st.st_size) > max_bytes)
    return too_large(static_cast<unsigned long long>(st.st_size));
  // Regular files ignore O_NONBLOCK; read up to one byte past the bound, in case it grows.
  out.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  while (out.size() <= max_bytes) {
    size_t want = std::min(sizeof buffer, max_bytes + 1 - out.size());
    ssize_t n = ::read(fd, buffer, want);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      error = std::strerror(errno);
      out.clear();
      return ReadStatus::Error;
    }
    if (n == 0)
      return ReadStatus::Ok;
    out.append(buffer, static_cast<size_t>(n));
  }
  out.clear();
  return too_large(max_bytes + 1);
}

int create_temp_beside(const std::string &path, std::string &tmp_path, std::string &error) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  tmp_path = dir + "." + name + ".XXXXXX";
  // mkstemp: O_CREAT|O_EXCL with mode 0600, so a planted link or file at the name is never opened.
  int fd = mkostemp(tmp_path.data(), O_CLOEXEC);
  if (fd < 0)
    error = "cannot create a temporary file in " + (dir.empty() ? std::string(".") : dir) + ": " +
            std::strerror(errno);
  return fd;
}

bool write_file_replacing(const std::string &path, std::string_view content, mode_t mode,
                          std::string &error) {
  std::string tmp;
  int fd = create_temp_beside(path, tmp, error);
  if (fd < 0)
    return false;
  const char *data = content.data();
  size_t left = content.size();
  bool ok = true;
  while (ok && left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = "cannot write " + tmp + ": " + std::strerror(n < 0 ? errno : EIO);
      ok = false;
      break;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (ok && fchmod(fd, mode) != 0) {
    error = "cannot chmod " + tmp + ": " + std::strerror(errno);
    ok = false;
  }
  if (::close(fd) != 0 && ok) {
    error = "cannot write " + tmp + ": " + std::strerror(errno);
    ok = false;
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    ok = false;
  }
  if (!ok)
    ::unlink(tmp.c_str());
  return ok;
}

} // namespace weave
