#include "arm64_vm.h"

#include "harness.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace arm64vm {

namespace {

// An initramfs is a cpio archive in the "newc" format: a 110-byte ASCII header per entry, name and
// data each padded to 4 bytes. Written here so the tests need no cpio tool.
class Cpio {
public:
  void dir(const std::string &name) { entry(name, 040755, ""); }
  void file(const std::string &name, const std::string &data, unsigned mode = 0755) {
    entry(name, 0100000 | mode, data);
  }
  std::string finish() {
    entry("TRAILER!!!", 0, "");
    return out_;
  }

private:
  void pad() { out_.append((4 - out_.size() % 4) % 4, '\0'); }
  void entry(const std::string &name, unsigned mode, const std::string &data) {
    char header[111];
    snprintf(header, sizeof header, "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X", ino_++,
             mode, 0u, 0u, 1u, 0u, data.size(), 0u, 0u, 0u, 0u, name.size() + 1, 0u);
    out_.append(header, 110);
    out_ += name;
    out_ += '\0';
    pad();
    out_ += data;
    pad();
  }
  std::string out_;
  unsigned ino_ = 1;
};

// A Go PIE asks for the dynamic loader (it needs no library): the cross toolchain's arm64 glibc has it.
const char *const kArm64Loader = "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1"; // libc6-arm64-cross

} // namespace

std::string cache() {
  const char *env = getenv("WEAVE_ARM64_CACHE");
  return env && *env ? env : WEAVE_ARM64_CACHE_DEFAULT;
}

std::string missing() {
  if (e2e::run({"qemu-system-aarch64", "--version"}).status != 0)
    return "qemu-system-aarch64 is not installed (scripts/arm64-deps.sh installs qemu-system-arm)";
  for (const char *file : {"vmlinuz", "busybox"})
    if (!fs::exists(cache() + "/" + file))
      return cache() + "/" + file + " is missing: run scripts/arm64-deps.sh as root (Debian's arm64 kernel and "
             "busybox-static:arm64), or point WEAVE_ARM64_CACHE at its cache";
  return "";
}

Result boot(const Boot &boot) {
  Cpio cpio;
  for (const char *d : {"bin", "lib", "proc", "sys", "tmp", "out", "w"})
    cpio.dir(d);
  if (fs::exists(kArm64Loader))
    cpio.file("lib/ld-linux-aarch64.so.1", e2e::read_file(kArm64Loader));
  cpio.file("bin/busybox", e2e::read_file(cache() + "/busybox"));
  for (const auto &[guest, host] : boot.files)
    cpio.file(guest, e2e::read_file(host));
  // The init script runs the caller's script, then prints every file it left in /out between
  // markers, with its size, so a complete transfer can be told from a cut or garbled one.
  cpio.file("w/script.sh", boot.script);
  cpio.file("init", "#!/bin/busybox sh\n"
                    "/bin/busybox --install -s /bin\n"
                    "export PATH=/bin\n"
                    "mount -t proc proc /proc\n"
                    "mount -t sysfs sysfs /sys\n"
                    "echo \"@@WEAVE-UP $(cut -d' ' -f1 /proc/uptime)\"\n"
                    "cd /w\n"
                    "sh /w/script.sh\n"
                    "for f in /out/*; do [ -f \"$f\" ] || continue; echo \"@@WEAVE-FILE ${f#/out/} $(wc -c < $f)\"; "
                    "cat $f; echo; done\n"
                    "echo @@WEAVE-DONE\n"
                    "poweroff -f\n");
  std::string initramfs = boot.work_dir + "/initramfs.cpio";
  std::ofstream(initramfs, std::ios::binary) << cpio.finish();

  std::string serial = boot.work_dir + "/serial.log";
  fs::remove(serial);
  Result result;
  auto start = std::chrono::steady_clock::now();
  // TCG on a shared 2-core machine: a boot takes 2-4 s idle, much longer under load; bounded.
  auto qemu = e2e::run({"qemu-system-aarch64", "-accel", "tcg", "-M", "virt", "-cpu", "cortex-a72", "-m", "1024",
                        "-display", "none", "-monitor", "none", "-nic", "none", "-no-reboot", "-serial",
                        "file:" + serial, "-kernel", cache() + "/vmlinuz", "-initrd", initramfs, "-append",
                        "console=ttyAMA0 panic=-1 quiet loglevel=1"},
                       boot.timeout_ms);
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.qemu_status = qemu.status;
  std::string log = fs::exists(serial) ? e2e::read_file(serial) : "";
  // The console turns each \n into \r\n.
  std::string text;
  for (size_t i = 0; i < log.size(); ++i)
    if (!(log[i] == '\r' && i + 1 < log.size() && log[i + 1] == '\n'))
      text += log[i];
  auto fail = [&](const std::string &why) {
    result.error = why + " (qemu exit " + std::to_string(qemu.status) + ": " + qemu.err +
                   ")\nserial console (last 3000 bytes):\n" + text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
    return result;
  };
  if (qemu.status != 0)
    return fail("qemu failed or timed out");
  if (text.find("@@WEAVE-DONE") == std::string::npos)
    return fail("the VM did not reach the end of its script");
  size_t up = text.find("@@WEAVE-UP ");
  if (up == std::string::npos)
    return fail("init did not start");
  result.boot_seconds = std::strtod(text.c_str() + up + 11, nullptr);
  for (size_t pos = text.find("@@WEAVE-FILE "); pos != std::string::npos; pos = text.find("@@WEAVE-FILE ", pos)) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos)
      return fail("a file header is cut");
    std::istringstream header(text.substr(pos + 13, eol - pos - 13));
    std::string name;
    size_t size = 0;
    header >> name >> size;
    // Exactly the size announced, then the newline the script adds: nothing lost or inserted.
    if (eol + 1 + size + 1 > text.size() || text[eol + 1 + size] != '\n')
      return fail("/out/" + name + " came back cut or garbled");
    result.out[name] = text.substr(eol + 1, size);
    pos = eol + 1 + size + 1;
  }
  result.complete = true;
  return result;
}

} // namespace arm64vm
