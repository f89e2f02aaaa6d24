// arm64-vm: one boot of the arm64 test VM (arm64_vm.h) from the shell.
//
//   arm64-vm --work DIR --put w/prog=HOST/prog ... --script FILE --out DIR [--timeout SECONDS]
//
// Copies each HOST file into the initramfs at its guest path, runs FILE with busybox sh in /w, and
// writes each file the script left in /out into --out. Exit 0: the script ran to its end and every
// file came back whole; 1: it did not (the console's last lines say why); 77: this machine cannot
// boot the VM (qemu or scripts/arm64-deps.sh's cache missing); 2: bad arguments.
#include "arm64_vm.h"

#include "harness.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

int main(int argc, char **argv) {
  arm64vm::Boot boot;
  std::string script, out;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--work") {
      boot.work_dir = value;
    } else if (flag == "--put") {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0) {
        fprintf(stderr, "arm64-vm: --put wants GUEST=HOST, got %s\n", value.c_str());
        return 2;
      }
      boot.files.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else if (flag == "--script") {
      script = value;
    } else if (flag == "--out") {
      out = value;
    } else if (flag == "--timeout") {
      boot.timeout_ms = std::atoi(value.c_str()) * 1000;
    } else {
      fprintf(stderr, "arm64-vm: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (boot.work_dir.empty() || script.empty() || out.empty() || argc % 2 != 1) {
    fprintf(stderr, "usage: arm64-vm --work DIR [--put GUEST=HOST]... --script FILE --out DIR [--timeout S]\n");
    return 2;
  }
  if (std::string why = arm64vm::missing(); !why.empty()) {
    printf("arm64-vm: skipped: %s\n", why.c_str());
    return 77;
  }
  boot.script = e2e::read_file(script);
  arm64vm::Result result = arm64vm::boot(boot);
  if (!result.complete) {
    fprintf(stderr, "arm64-vm: %s\n", result.error.c_str());
    return 1;
  }
  std::filesystem::create_directories(out);
  for (const auto &[name, data] : result.out)
    std::ofstream(out + "/" + name, std::ios::binary) << data;
  printf("arm64-vm: kernel up to init %.2f s; qemu wall %.1f s; %zu files back\n", result.boot_seconds,
         result.wall_seconds, result.out.size());
  return 0;
}
