#pragma once
// One boot of an arm64 Linux under qemu-system-aarch64 (TCG, -M virt): Debian's own arm64 kernel
// with an initramfs of busybox-static:arm64 and the files given, running a shell script, and the
// files the script leaves in /out brought back over the serial console. Used by the arm64 e2e test
// (tests/e2e/test_arm64_vm.cpp) and, through the arm64-vm command, by the random-signature oracle
// (tests/oracle/run.sh --arch arm64). scripts/arm64-deps.sh fills the cache of kernel and busybox.
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace arm64vm {

// The cache of scripts/arm64-deps.sh: WEAVE_ARM64_CACHE, else the build's default.
std::string cache();

// Why this machine cannot boot the VM (qemu or a cache file missing), or "" when it can.
std::string missing();

struct Boot {
  // Guest path (relative, under /) -> host file, copied into the initramfs with mode 0755.
  std::vector<std::pair<std::string, std::string>> files;
  std::string script;   // run by busybox sh in /w after /proc and /sys are mounted
  std::string work_dir; // on the host: the initramfs and the serial log go here
  int timeout_ms = 240000;
};

struct Result {
  bool complete = false;  // the script ran to its end and every /out file came back whole
  std::string error;      // why not, with the console's last lines
  int qemu_status = -1;
  std::map<std::string, std::string> out; // /out file name -> contents
  double boot_seconds = 0; // guest uptime when init started
  double wall_seconds = 0; // qemu, host wall clock
};

Result boot(const Boot &boot);

} // namespace arm64vm
