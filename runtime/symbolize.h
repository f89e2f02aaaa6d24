// Symbolizer turns the return addresses a probe captured ("stack: N") into Go frames, function,
// file and line with inlined calls expanded, from the target binary's .gopclntab: the same reader
// weave uses, so it works on stripped binaries, and no debug info needs to be on the traced host.
#pragma once

#include "gobinary/binary.h"
#include "gobinary/pclntab.h"
#include "gobinary/unwind.h"
#include "cframes.h"
#include "manifest.h"
#include "typenames.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace weave {

class Symbolizer {
public:
  // Reads nothing yet. The binary's pclntab is loaded by load_functions() or the first frames() or
  // function_at(); when that fails, they return nothing and the tracer prints bare addresses
  // (error() says why). Type names come from TypeNames (the manifest's build id and descriptor
  // range), which reads only the descriptors asked for: naming interfaces' dynamic types never
  // loads the whole table.
  Symbolizer(const std::string &binary_path, const Manifest &manifest);
  // Loads the pclntab now (for stacks and func values); false when it cannot (see error()).
  bool load_functions();

  // The frames of the call that will return to `return_address`, innermost first, in a process that
  // loaded the binary `bias` bytes from its link addresses (a PIE's load bias, else 0: see
  // load_bias in output.h). Cached per address.
  const std::vector<Pclntab::Frame> &frames(uint64_t bias, uint64_t return_address);

  // stack_mode: window: the callers' return addresses, unwound from the copied stack with the
  // binary's SP-delta tables (gobinary/unwind.h). Empty, ending Unknown, without a pclntab.
  // `pid`: the process, whose shared libraries' C frames (libc...) are unwound and named by its
  // /proc/PID/maps (0: the binary's own only).
  UnwoundStack unwind(uint64_t bias, const StackWindow &window, uint32_t max_frames, uint32_t pid = 0);

  // The frames of a call in C code (a return address .gopclntab has no function for, in the
  // binary), from its DWARF with inlined calls, else .symtab, else .dynsym: what a window's walk through
  // a cgo callback shows between the callback and the cgo call. Empty when unknown. Cached.
  // In a shared library of process `pid`, its frames, and `module` set to the library's path
  // (else left as is).
  const std::vector<Pclntab::Frame> &c_frames(uint64_t bias, uint64_t return_address, uint32_t pid = 0,
                                              const std::string **module = nullptr);

  // The function whose code starts at (or contains) `pc`, or "" when unknown.
  std::string function_at(uint64_t bias, uint64_t pc);

  // The runtime type descriptor at `address` (an interface's dynamic type, as the process sees it),
  // read from the binary's own moduledata.types: see TypeNames::at. Cached per address.
  const TypeName *type_at(uint64_t bias, uint64_t address) { return types_.at(bias, address); }
  const TypeNames &types() const { return types_; }

  const std::string &error() const { return error_; }
  // The pclntab is loaded: a PC frames() has nothing for is outside Go code, not just unnamed.
  bool has_functions() const { return pcln_.has_value(); }

  // The file the frames come from, as JSON's "module" names it: the binary's path, or for
  // /proc/PID/exe (--pid) the path that link names ("... (deleted)" after a redeploy removed it).
  const std::string &module() const { return module_; }

private:
  UnwoundStack unwind_pcln(uint64_t bias, const StackWindow &window, uint32_t max_frames, uint32_t pid);
  std::string path_;
  std::string module_;
  bool loaded_ = false;
  std::optional<BinaryImage> image_;
  std::optional<Pclntab> pcln_;
  std::string error_;
  std::unordered_map<uint64_t, std::vector<Pclntab::Frame>> cache_;
  std::unordered_map<uint64_t, std::vector<Pclntab::Frame>> c_cache_; // by PC in the file
  std::unique_ptr<CFrames> c_; // the binary's CFI and DWARF, once the pclntab is loaded
  // Shared libraries: the executable mappings of each process's /proc/PID/maps, and each file's
  // CFI and names (opened once, by path).
  struct Library {
    uint64_t start = 0, end = 0, bias = 0;
    std::string path;
    CFrames *c = nullptr;
  };
  const Library *library_at(uint32_t pid, uint64_t pc);
  void read_maps(uint32_t pid);
  std::unordered_map<uint32_t, std::vector<Library>> maps_;
  std::unordered_map<std::string, std::unique_ptr<CFrames>> libraries_;
  std::unordered_map<std::string, std::vector<Pclntab::Frame>> library_cache_; // "path@offset"
  std::vector<Pclntab::Frame> none_;
  TypeNames types_;
};

} // namespace weave
