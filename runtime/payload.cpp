#include "payload.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace weave {

namespace {

struct Trailer {
  uint64_t object_offset, object_size, manifest_offset, manifest_size;
};

// The file is read on any host, so the integers are spelled out byte by byte, not memcpy'd.
void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

std::string errno_text() {
  return std::strerror(errno);
}

// Closes the descriptor when it goes out of scope, so every early return cleans up.
class Fd {
public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

private:
  int fd_;
};

bool pread_all(int fd, void *buf, size_t size, uint64_t offset) {
  auto *p = static_cast<char *>(buf);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO; // the file shrank under us
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool write_all(int fd, const void *buf, size_t size) {
  auto *p = static_cast<const char *>(buf);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Whether [offset, offset + size) lies within the first `limit` bytes, without overflowing.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// Reads the trailer of an open file of `file_size` bytes. Returns 0: no trailer, 1: a valid
// trailer in `t`, -1: a trailer whose ranges do not fit (error set).
int read_trailer(int fd, uint64_t file_size, Trailer &t, std::string &error) {
  if (file_size < kPayloadTrailerSize)
    return 0;
  unsigned char raw[kPayloadTrailerSize];
  uint64_t trailer_at = file_size - kPayloadTrailerSize;
  if (!pread_all(fd, raw, sizeof raw, trailer_at)) {
    error = "cannot read: " + errno_text();
    return -1;
  }
  if (std::memcmp(raw, kPayloadMagic.data(), kPayloadMagic.size()) != 0)
    return 0;
  t = {get_u64(raw + 16), get_u64(raw + 24), get_u64(raw + 32), get_u64(raw + 40)};
  if (!fits(t.object_offset, t.object_size, trailer_at) ||
      !fits(t.manifest_offset, t.manifest_size, trailer_at)) {
    error = "corrupt payload: its object or manifest range lies outside the file";
    return -1;
  }
  return 1;
}

} // namespace

std::optional<Payload> read_payload(const std::string &exe_path, std::string &error) {
  error.clear();
  Fd fd(::open(exe_path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    error = exe_path + ": cannot open: " + errno_text();
    return std::nullopt;
  }
  Trailer t;
  int found = read_trailer(fd.get(), static_cast<uint64_t>(st.st_size), t, error);
  if (found <= 0) {
    if (found < 0)
      error = exe_path + ": " + error;
    return std::nullopt;
  }
  Payload payload;
  payload.object.resize(t.object_size);
  payload.manifest.resize(t.manifest_size);
  if (!pread_all(fd.get(), payload.object.data(), t.object_size, t.object_offset) ||
      !pread_all(fd.get(), payload.manifest.data(), t.manifest_size, t.manifest_offset)) {
    error = exe_path + ": cannot read payload: " + errno_text();
    return std::nullopt;
  }
  return payload;
}

bool append_payload(const std::string &runtime_exe_path, std::string_view object_bytes,
                    std::string_view manifest_text, const std::string &out_path,
                    std::string &error) {
  error.clear();
  Fd in(::open(runtime_exe_path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (in.get() < 0 || ::fstat(in.get(), &st) != 0) {
    error = runtime_exe_path + ": cannot open: " + errno_text();
    return false;
  }
  // Copy only the executable part: a tracer given as the runtime is re-packed, not stacked.
  uint64_t exe_size = static_cast<uint64_t>(st.st_size);
  Trailer old;
  int found = read_trailer(in.get(), exe_size, old, error);
  if (found < 0) {
    error = runtime_exe_path + ": " + error;
    return false;
  }
  if (found > 0)
    exe_size = std::min(old.object_offset, old.manifest_offset);

  // The temporary file lives beside out_path so that rename() stays within one file system.
  std::string tmp_path = out_path + ".tmp.XXXXXX";
  Fd out(::mkstemp(tmp_path.data()));
  if (out.get() < 0) {
    error = out_path + ": cannot create a temporary file beside it: " + errno_text();
    return false;
  }
  auto fail = [&](const std::string &what) {
    error = what + ": " + errno_text();
    ::unlink(tmp_path.c_str());
    return false;
  };

  std::string buf(1 << 16, '\0');
  for (uint64_t at = 0; at < exe_size;) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(buf.size(), exe_size - at));
    if (!pread_all(in.get(), buf.data(), chunk, at))
      return fail(runtime_exe_path + ": cannot read");
    if (!write_all(out.get(), buf.data(), chunk))
      return fail(tmp_path + ": cannot write");
    at += chunk;
  }

  unsigned char trailer[kPayloadTrailerSize];
  std::memcpy(trailer, kPayloadMagic.data(), kPayloadMagic.size());
  put_u64(trailer + 16, exe_size);
  put_u64(trailer + 24, object_bytes.size());
  put_u64(trailer + 32, exe_size + object_bytes.size());
  put_u64(trailer + 40, manifest_text.size());
  if (!write_all(out.get(), object_bytes.data(), object_bytes.size()) ||
      !write_all(out.get(), manifest_text.data(), manifest_text.size()) ||
      !write_all(out.get(), trailer, sizeof trailer))
    return fail(tmp_path + ": cannot write");
  // mkstemp creates the file 0600; a tracer is meant to be copied and run, like any executable.
  if (::fchmod(out.get(), 0755) != 0)
    return fail(tmp_path + ": cannot chmod");
  // fsync before rename: after a crash out_path is either the old file or the complete new one.
  if (::fsync(out.get()) != 0)
    return fail(tmp_path + ": cannot sync");
  if (::close(out.release()) != 0)
    return fail(tmp_path + ": cannot close");
  if (::rename(tmp_path.c_str(), out_path.c_str()) != 0)
    return fail(out_path + ": cannot rename " + tmp_path + " to it");
  return true;
}

} // namespace weave
