// RingReader: the tracer's consumer of the BPF ring buffer (BPF_MAP_TYPE_RINGBUF), in place of
// libbpf's ring_buffer.
//
// Why hand-written: libbpf's ring_buffer__add maps the producer page and the data twice over
// (page + 2 x data), so that a record that wraps past the ring's end reads contiguously, and the
// kernel inserts every page of a ring buffer mapping when it is made (remap_vmalloc_range). The
// tracer's RSS therefore counted the ring twice from its first moment: measured with
// bench/tracer_memory.sh on the 7-probe Caddy spec at the default 8 MiB ring (--format json --pid,
// after 2,000 requests), 20.8 MB RSS with libbpf's reader against 12.7 MB with this one, PSS 12.6 MB
// with either. libbpf offers no single mapping, so this reader maps the producer page and the data
// once and copies the rare record that wraps into a bounded buffer.
//
// The kernel's contract (include/uapi/linux/bpf.h, kernel/bpf/ringbuf.c):
//   - offset 0: the consumer page, the only page a process may map writable; consumer_pos at its
//     start, stored with release semantics after a record is read;
//   - offset page_size: the producer page (producer_pos at its start, read with acquire) followed by
//     the data, max_entries bytes (a power of two, a multiple of the page size), mapped read-only;
//   - each record: an 8-byte header (BPF_RINGBUF_HDR_SZ) whose first 32-bit word is the length,
//     with BPF_RINGBUF_BUSY_BIT while the program still writes it and BPF_RINGBUF_DISCARD_BIT when it
//     was discarded, then the data; header + data rounded up to 8 bytes. A record never spans more
//     than the ring (the kernel refuses to reserve it), so a header claiming more, or claiming bytes
//     past producer_pos, is malformed: counted, and everything up to producer_pos dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weave {

class RingReader {
public:
  using OnRecord = void (*)(void *ctx, const void *data, size_t size);

  RingReader(OnRecord on_record, void *ctx) : on_record_(on_record), ctx_(ctx) {}
  ~RingReader();
  RingReader(const RingReader &) = delete;
  RingReader &operator=(const RingReader &) = delete;

  // Maps the ring of the BPF_MAP_TYPE_RINGBUF map `map_fd` and registers it with an epoll set.
  // False with `error` set (the map is not a ring buffer, mmap or epoll failed).
  bool open(int map_fd, std::string &error);

  // Reads a ring laid out in memory the caller owns, as the kernel lays it out (the unit tests).
  // `data` holds `size` bytes, a power of two and a multiple of 8.
  void use_memory(unsigned long *consumer_pos, const unsigned long *producer_pos, const uint8_t *data,
                  size_t size);

  // Hands every committed record on, in order, up to the first still being written, and at most one
  // ring's worth of bytes per call (producers in all-process mode may never stop). Returns how many
  // records were handed on (discarded ones are not counted).
  int consume();

  // Waits up to `timeout_ms` for the kernel's wakeup, then consume(). A negative errno on failure
  // (-EINTR when a signal interrupted the wait).
  int poll(int timeout_ms);

  size_t size() const { return size_; }
  // Headers that could not be a kernel's record (see above), and records copied because they wrapped
  // past the ring's end.
  uint64_t malformed() const { return malformed_; }
  uint64_t wrapped() const { return wrapped_; }

private:
  OnRecord on_record_;
  void *ctx_;
  int epoll_fd_ = -1;
  void *consumer_page_ = nullptr; // mapped: page_size_ bytes
  void *producer_area_ = nullptr; // mapped: page_size_ + size_ bytes
  size_t page_size_ = 0;
  unsigned long *consumer_pos_ = nullptr;
  const unsigned long *producer_pos_ = nullptr;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  std::vector<uint8_t> wrap_buffer_; // grows to the longest wrapped record, never past size_
  uint64_t malformed_ = 0;
  uint64_t wrapped_ = 0;
};

} // namespace weave
