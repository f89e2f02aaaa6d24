// BinaryWatch: keeps a host-wide tracer's probes in step with the file they are attached to.
//
// A uprobe is a (file, offset) pair in the kernel, kept with the instruction it replaced, copied
// when it was first attached. When the traced binary is rewritten in place (`cp`, `scp`,
// `rsync --inplace` over it: same inode, new bytes), the kernel goes on planting breakpoints at the
// old build's offsets in every process that starts from the new bytes, and runs the old build's
// instructions there: the new program crashes. When the binary is replaced by a rename, the probes
// stay on the old file and the processes started from the new one go untraced, silently.
//
// So the tracer watches the file and its directory (inotify) from a thread of its own:
//  - written in place (IN_MODIFY on the attached file, a truncation included): detach at once and
//    say so. Nothing is attached to the file while it holds bytes the probes were not made for.
//  - a file with the manifest's build id at the path again (renamed or linked into place, or
//    rewritten and closed): attach to it and say so.
//  - another build at the path: say that processes started from it are not traced; the probes
//    stay on the old file (its running processes are still traced) until the right build is back.
// inotify cannot close every race (a process that execs the file between the write and the
// detach), but the window is the thread's wake-up, not the tracer's poll interval.
//
// The watch owns the loader's links while it runs: between start() and stop(), only its thread
// attaches and detaches. The caller may read the loader's maps meanwhile.
#pragma once

#include <atomic>
#include <string>
#include <sys/types.h>
#include <thread>

namespace weave {

class Loader;

class BinaryWatch {
public:
  // `path`: the file the loader attached to; `build_id`: the one the manifest was made for.
  BinaryWatch(Loader &loader, std::string path, std::string build_id);
  ~BinaryWatch();
  BinaryWatch(const BinaryWatch &) = delete;
  BinaryWatch &operator=(const BinaryWatch &) = delete;

  // Adds the watches and starts the thread. False with `error` when inotify cannot watch the file.
  bool start(std::string &error);
  // Stops the thread; afterwards the caller owns the loader's links again.
  void stop();

  // Times the watch detached and re-attached (for tests and the summary).
  unsigned detaches() const { return detaches_.load(); }
  unsigned reattaches() const { return reattaches_.load(); }

private:
  void run();
  void add_file_watch();
  void written_in_place(const char *how);
  void look_again();

  Loader &loader_;
  std::string path_, dir_, name_, build_id_;
  int inotify_fd_ = -1;
  int stop_fd_ = -1; // an eventfd: stop() wakes the thread with it
  int file_wd_ = -1, dir_wd_ = -1;
  bool attached_ = true;     // the loader's links are on the file (dev_, ino_)
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  dev_t told_dev_ = 0;       // the other build already reported, not to repeat it per event
  ino_t told_ino_ = 0;
  bool told_gone_ = false;
  std::thread thread_;
  std::atomic<unsigned> detaches_{0}, reattaches_{0};
};

} // namespace weave
