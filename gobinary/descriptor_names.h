// Stage 2 — binary: the name of the runtime type descriptor at an address, as DWARF spells it
// (package paths in full: `*io/fs.PathError`), read from whatever holds the binary's bytes.
//
// One algorithm for two readers: the generator's Pclntab (every segment of the file in memory) and
// the tracer's FileDescriptorSpace (a few blocks of the file read on demand, so that naming the
// dynamic types of interface values costs memory in proportion to the types the traced program
// actually shows, not to the binary). Both name a descriptor identically because they run this
// same code.
//
// Layouts: go1.16..go1.26 runtime/type.go and internal/abi/type.go (_type, name, uncommontype,
// ptrtype, slicetype, arraytype, chantype, maptype). An address is named only when it is an
// aligned address inside [types, etypes) whose header fields hold what a descriptor holds and whose
// name decodes: an address that is not a type descriptor of this module is never given a name.
#pragma once

#include "gobinary/binary.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace weave {

// DescriptorSpace: the binary's link-time address space, as far as descriptors and the function
// table (gobinary/pclntab.h) need it.
class DescriptorSpace {
public:
  virtual ~DescriptorSpace() = default;
  // `size` (at most kMaxRead) file-backed bytes at vaddr inside one segment, or nullptr. Valid
  // until the next call on this space.
  virtual const uint8_t *bytes(uint64_t vaddr, uint64_t size) = 0;
  // The bytes from vaddr on that one call can give (for walking a table byte by byte): a pointer
  // and `size` set to how many follow it (at least 1, at most the rest of vaddr's segment), or
  // nullptr when vaddr is not file-backed or the file cannot be read there. Valid until the next call.
  virtual const uint8_t *span(uint64_t vaddr, uint64_t &size) = 0;
  // File-backed bytes from vaddr to the end of its segment (0 when not file-backed).
  virtual uint64_t room(uint64_t vaddr) = 0;
  // A pointer-sized word at vaddr (a PIE's RELATIVE relocation's addend where the file holds 0).
  virtual std::optional<uint64_t> pointer(uint64_t vaddr) = 0;
  // vaddr lies in some PT_LOAD (file-backed or not).
  virtual bool mapped(uint64_t vaddr) = 0;
  // pc is where a function starts (exactly, when the space knows the function table; else: inside
  // an executable segment).
  virtual bool code_entry(uint64_t pc) = 0;
  static constexpr uint64_t kMaxRead = 8192;
};

// Where the descriptors are and how names are encoded.
struct DescriptorLayout {
  uint64_t types = 0, etypes = 0; // moduledata.types, etypes (link-time addresses)
  int ptr_size = 8;
  GoVersion version;              // names: varint lengths since 1.17; maps: swiss tables since 1.24
};

struct DescriptorName {
  std::string name; // package paths in full, as DWARF names types
  uint8_t kind = 0; // reflect.Kind: 1 bool ... 26 unsafe.Pointer
  uint64_t size = 0;
};

// The descriptor at `vaddr` named, or nullopt (see the file comment).
std::optional<DescriptorName> name_descriptor(DescriptorSpace &space, const DescriptorLayout &layout,
                                              uint64_t vaddr);
// A runtime name (internal/abi.Name) at an absolute address: a flag byte (1 exported, 2 tag
// follows, 4 pkgPath follows, 8 embedded field), a length (two bytes big-endian up to Go 1.16, a
// varint since 1.17), the bytes.
std::optional<std::string> read_runtime_name(DescriptorSpace &space, const DescriptorLayout &layout, uint64_t at,
                                             uint8_t *flags = nullptr);

// FileDescriptorSpace reads a binary's bytes lazily with pread, in 4 KiB blocks, from a file
// descriptor it keeps open (so the file it checked is the file it reads, even when the path is
// replaced later). At most kMaxBlocks blocks are kept (the least recently used one is read again
// when needed), so its memory is bounded whatever is looked up. Only the program headers are read
// up front; a PIE's RELATIVE relocations are read the first time a pointer word holds 0. Every read
// is bounded by the program headers and the file's size.
class FileDescriptorSpace : public DescriptorSpace {
public:
  // Opens `path` and reads its ELF program headers. nullptr, with `error` set, when it cannot.
  static std::unique_ptr<FileDescriptorSpace> open(const std::string &path, std::string &error);
  ~FileDescriptorSpace() override;
  FileDescriptorSpace(const FileDescriptorSpace &) = delete;
  FileDescriptorSpace &operator=(const FileDescriptorSpace &) = delete;

  int fd() const { return fd_; }
  int ptr_size() const { return ptr_size_; }

  const uint8_t *bytes(uint64_t vaddr, uint64_t size) override;
  uint64_t room(uint64_t vaddr) override;
  std::optional<uint64_t> pointer(uint64_t vaddr) override;
  bool mapped(uint64_t vaddr) override;
  bool code_entry(uint64_t pc) override;
  const uint8_t *span(uint64_t vaddr, uint64_t &size) override;

  size_t cached_blocks() const { return blocks_.size(); }
  // Bytes read from the file so far, program headers and blocks read again included (measurements,
  // and the tests that show a lookup reads a small part of the file).
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t file_size() const { return file_size_; }
  const std::vector<LoadSegment> &segments() const { return segments_; }
  bool pie() const { return pie_; }
  // A PIE's RELATIVE relocations, (r_offset, addend) sorted (read now if not yet).
  const std::vector<std::pair<uint64_t, uint64_t>> &relocations() {
    if (!relocations_read_)
      read_relocations();
    return relative_;
  }
  static constexpr size_t kMaxBlocks = 256; // 1 MiB

private:
  FileDescriptorSpace() = default;
  const LoadSegment *file_segment(uint64_t vaddr) const;
  const uint8_t *block(uint64_t file_block);
  bool read_at(uint8_t *into, uint64_t size, uint64_t offset);
  void read_relocations();

  int fd_ = -1;
  int ptr_size_ = 8;
  bool pie_ = false;
  uint64_t file_size_ = 0;
  std::vector<LoadSegment> segments_;
  struct Block {
    std::unique_ptr<uint8_t[]> data;
    uint64_t used = 0; // when it was last asked for (use_), for eviction
  };
  std::unordered_map<uint64_t, Block> blocks_; // by file offset / 4096
  uint64_t use_ = 0;
  uint64_t bytes_read_ = 0;
  std::vector<uint8_t> scratch_;                                    // reads that span blocks
  bool relocations_read_ = false;
  uint64_t dynamic_offset_ = 0, dynamic_size_ = 0;                  // PT_DYNAMIC in the file
  std::vector<std::pair<uint64_t, uint64_t>> relative_;             // (r_offset, addend), sorted
};

} // namespace weave
