#include "binary_watch.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/core.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gobinary/elf_notes.h"
#include "loader.h"

namespace weave {

namespace {

constexpr uint32_t kFileEvents = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF;
// The directory reports its entries by name: the traced name created, renamed to or from, removed,
// written or closed after writing.
constexpr uint32_t kDirEvents =
    IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_ONLYDIR;

template <typename... Args> void say(fmt::format_string<Args...> format, Args &&...args) {
  fmt::print(stderr, "weave: {}\n", fmt::format(format, std::forward<Args>(args)...));
}

std::string points(size_t n) {
  return fmt::format("{} attach point{}", n, n == 1 ? "" : "s");
}

} // namespace

BinaryWatch::BinaryWatch(Loader &loader, std::string path, std::string build_id)
    : loader_(loader), path_(std::move(path)), build_id_(std::move(build_id)) {
  size_t slash = path_.rfind('/');
  dir_ = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
  name_ = slash == std::string::npos ? path_ : path_.substr(slash + 1);
}

BinaryWatch::~BinaryWatch() {
  stop();
  if (inotify_fd_ >= 0)
    close(inotify_fd_);
  if (stop_fd_ >= 0)
    close(stop_fd_);
}

bool BinaryWatch::start(std::string &error) {
  struct stat st;
  if (stat(path_.c_str(), &st) != 0) {
    error = fmt::format("{}: cannot watch: {}", path_, std::strerror(errno));
    return false;
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  inotify_fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (inotify_fd_ < 0 || stop_fd_ < 0) {
    error = fmt::format("{}: cannot watch: {}", path_, std::strerror(errno));
    return false;
  }
  file_wd_ = inotify_add_watch(inotify_fd_, path_.c_str(), kFileEvents);
  dir_wd_ = inotify_add_watch(inotify_fd_, dir_.c_str(), kDirEvents);
  if (file_wd_ < 0 || dir_wd_ < 0) {
    error = fmt::format("{}: cannot watch: {}", file_wd_ < 0 ? path_ : dir_, std::strerror(errno));
    return false;
  }
  // SIGINT and SIGTERM stay with the main thread, whose poll loop they interrupt.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] { run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
}

void BinaryWatch::stop() {
  if (!thread_.joinable())
    return;
  uint64_t one = 1;
  if (write(stop_fd_, &one, sizeof one) != sizeof one)
    say("{}: cannot stop the watch: {}", path_, std::strerror(errno));
  thread_.join();
}

void BinaryWatch::run() {
  alignas(struct inotify_event) char buffer[16 * 1024];
  while (true) {
    struct pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      say("{}: the watch stopped: {}", path_, std::strerror(errno));
      return;
    }
    if (fds[1].revents)
      return;
    bool look = false, overflow = false;
    while (true) {
      ssize_t n = read(inotify_fd_, buffer, sizeof buffer);
      if (n <= 0)
        break;
      for (char *at = buffer; at < buffer + n;) {
        auto *event = reinterpret_cast<struct inotify_event *>(at);
        at += sizeof(struct inotify_event) + event->len;
        if (event->mask & IN_Q_OVERFLOW) {
          overflow = true;
          continue;
        }
        if (event->wd == file_wd_ && (event->mask & IN_IGNORED)) {
          file_wd_ = -1; // the file is gone; a new one is watched once it is attached to
          continue;
        }
        bool ours = event->wd == file_wd_ || (event->wd == dir_wd_ && event->len > 0 && name_ == event->name);
        if (!ours)
          continue;
        if (event->mask & IN_MODIFY) {
          // Through the directory, a write to whatever file has the name now: ours only if it is
          // the attached one.
          struct stat st;
          if (event->wd == file_wd_ ||
              (stat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_))
            written_in_place("written in place");
        }
        if (event->mask & ~IN_MODIFY)
          look = true;
      }
    }
    if (overflow) {
      // Events were lost: a write may be among them. Detach to be safe, then look again.
      written_in_place("changed (inotify lost events)");
      look = true;
    }
    if (look)
      look_again();
  }
}

void BinaryWatch::written_in_place(const char *how) {
  if (!attached_)
    return;
  size_t n = loader_.attach_point_count();
  loader_.detach();
  attached_ = false;
  told_dev_ = dev_; // its new bytes are reported once they are closed, as any other build's
  told_ino_ = 0;
  detaches_++;
  say("{} was {}: detached its {} at once; processes started from it are not traced until a file with "
      "build id {} is back at {}",
      path_, how, points(n), build_id_, path_);
}

// Something changed at the path: a file renamed or linked there, removed, closed after writing,
// its attributes. What is there now decides.
void BinaryWatch::look_again() {
  struct stat st;
  if (stat(path_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    if (!told_gone_)
      say("{} is gone{}; watching for a file with build id {} there", path_,
          attached_ ? " (processes already running it stay traced)" : "", build_id_);
    told_gone_ = true;
    return;
  }
  told_gone_ = false;
  bool same_file = st.st_dev == dev_ && st.st_ino == ino_;
  if (attached_ && same_file)
    return; // its attributes, a link to it: still the bytes the probes were made for
  std::string error;
  std::string id = read_build_id_file(path_, error);
  if (id.empty())
    return; // not (yet) an ELF file: being written; its close is another event
  if (id != build_id_) {
    if (told_dev_ != st.st_dev || told_ino_ != st.st_ino)
      say("{} now holds another build (build id {}, not {}): processes started from it are not traced{}", path_, id,
          build_id_, attached_ ? "; the probes stay on the file it replaced" : "");
    told_dev_ = st.st_dev;
    told_ino_ = st.st_ino;
    return;
  }
  if (attached_)
    loader_.detach(); // off the replaced file: the processes that start now run this one
  if (!loader_.attach(path_, path_, error)) {
    loader_.detach();
    attached_ = false;
    say("{} has build id {} again, but attaching failed: {}", path_, build_id_, error);
    return;
  }
  attached_ = true;
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  told_dev_ = told_ino_ = 0;
  reattaches_++;
  add_file_watch();
  say("{} has build id {} again: re-attached {} in {:.3f} s", path_, build_id_, points(loader_.attach_point_count()),
      loader_.attach_seconds());
}

// The file watch follows the attached file: a rename brought in a new inode.
void BinaryWatch::add_file_watch() {
  int wd = inotify_add_watch(inotify_fd_, path_.c_str(), kFileEvents);
  if (wd < 0) {
    say("{}: cannot watch: {}; a write in place is seen through its directory only", path_, std::strerror(errno));
    return;
  }
  if (file_wd_ >= 0 && file_wd_ != wd)
    inotify_rm_watch(inotify_fd_, file_wd_);
  file_wd_ = wd;
}

} // namespace weave
