// Payload: a tracer is the weave-tracer executable with the BPF object and the manifest appended.
//
//   [weave-tracer ELF][object bytes][manifest bytes][trailer, 48 bytes]
//   trailer = "WEAVE-PAYLOAD-01" (16 bytes, no NUL), then little-endian u64 object_offset,
//             object_size, manifest_offset, manifest_size (offsets from the start of the file).
//
// Appending after the ELF image keeps the executable valid (the kernel maps only what the program
// headers name), needs no objcopy on the generating host, and lets the tracer find its payload by
// reading the last 48 bytes of /proc/self/exe. The generator links this file, so it depends on
// nothing but POSIX and the standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weave {

inline constexpr std::string_view kPayloadMagic = "WEAVE-PAYLOAD-01";
inline constexpr size_t kPayloadTrailerSize = 48;

// Every weave-tracer runtime carries an ELF note (owner "weave", type 1; runtime/main.cpp) whose
// descriptor says what it is: "weave-tracer VERSION ARCH" (ARCH: amd64 or arm64, the runtime's own).
// `weave build` embeds probes only into a runtime of its own version and of the architecture the
// target runs on, and `weave check` refuses a tracer without it.
inline constexpr std::string_view kRuntimeNoteOwner = "weave";
inline constexpr unsigned kRuntimeNoteType = 1;
inline std::string runtime_note_text(std::string_view version, std::string_view arch) {
  return "weave-tracer " + std::string(version) + " " + std::string(arch);
}

struct Payload {
  std::string object;   // probes.bpf.o
  std::string manifest; // probes.json
};

// append_payload writes out_path = the executable part of runtime_exe_path (any payload it already
// carries is left out, so re-packing a tracer works) + object + manifest + trailer, mode 0755.
// Atomic: it writes a temporary file beside out_path and renames it, so a failure leaves out_path
// as it was and a running tracer at out_path is replaced, not overwritten ("text file busy").
// Returns false and sets `error` (prefixed with the file concerned) on failure.
bool append_payload(const std::string &runtime_exe_path, std::string_view object_bytes,
                    std::string_view manifest_text, const std::string &out_path,
                    std::string &error);

// read_payload returns the payload appended to exe_path. With no trailer it returns nullopt and
// leaves `error` empty (the bare runtime); a trailer whose ranges do not fit the file, or a read
// failure, gives nullopt with `error` set.
std::optional<Payload> read_payload(const std::string &exe_path, std::string &error);

} // namespace weave
