#include "ring.h"

#include <linux/bpf.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace weave {

namespace {

std::string errno_text(int err) {
  return std::strerror(err);
}

// The map's type and size, from the kernel (not from what the loader asked for).
bool map_info(int fd, bpf_map_info &info, std::string &error) {
  std::memset(&info, 0, sizeof info);
  bpf_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.info.bpf_fd = static_cast<uint32_t>(fd);
  attr.info.info_len = sizeof info;
  attr.info.info = reinterpret_cast<uint64_t>(&info);
  if (syscall(__NR_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof attr) != 0) {
    error = "cannot read the map's type and size: " + errno_text(errno);
    return false;
  }
  return true;
}

} // namespace

RingReader::~RingReader() {
  if (epoll_fd_ >= 0)
    close(epoll_fd_);
  if (consumer_page_)
    munmap(consumer_page_, page_size_);
  if (producer_area_)
    munmap(producer_area_, page_size_ + size_);
}

bool RingReader::open(int map_fd, std::string &error) {
  bpf_map_info info;
  if (!map_info(map_fd, info, error))
    return false;
  long page = sysconf(_SC_PAGESIZE);
  size_t size = info.max_entries;
  if (info.type != BPF_MAP_TYPE_RINGBUF || page <= 0 || size == 0 || (size & (size - 1)) != 0 ||
      size % static_cast<size_t>(page) != 0) {
    error = "not a ring buffer of a power-of-two number of pages (type " + std::to_string(info.type) +
            ", " + std::to_string(size) + " bytes)";
    return false;
  }
  page_size_ = static_cast<size_t>(page);
  // The consumer page: the one page the kernel lets a process write.
  void *consumer = mmap(nullptr, page_size_, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
  if (consumer == MAP_FAILED) {
    error = "cannot map its consumer page: " + errno_text(errno);
    return false;
  }
  consumer_page_ = consumer;
  // The producer page and the data once, read-only: the kernel allows any length up to its own
  // double mapping (remap_vmalloc_range checks it), and this length is the one the tracer needs.
  void *producer = mmap(nullptr, page_size_ + size, PROT_READ, MAP_SHARED, map_fd,
                        static_cast<off_t>(page_size_));
  if (producer == MAP_FAILED) {
    error = "cannot map its data (" + std::to_string(size >> 10) + " KiB): " + errno_text(errno);
    return false;
  }
  producer_area_ = producer;
  size_ = size;
  consumer_pos_ = static_cast<unsigned long *>(consumer);
  producer_pos_ = static_cast<const unsigned long *>(producer);
  data_ = static_cast<const uint8_t *>(producer) + page_size_;

  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    error = "cannot create an epoll set: " + errno_text(errno);
    return false;
  }
  epoll_event event{};
  event.events = EPOLLIN;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, map_fd, &event) != 0) {
    error = "cannot wait on it with epoll: " + errno_text(errno);
    return false;
  }
  return true;
}

void RingReader::use_memory(unsigned long *consumer_pos, const unsigned long *producer_pos,
                            const uint8_t *data, size_t size) {
  consumer_pos_ = consumer_pos;
  producer_pos_ = producer_pos;
  data_ = data;
  size_ = size;
}

int RingReader::consume() {
  if (!data_)
    return 0;
  const size_t mask = size_ - 1;
  unsigned long cons = __atomic_load_n(consumer_pos_, __ATOMIC_ACQUIRE);
  const unsigned long stop = cons + size_; // one ring's worth per call
  int handed = 0;
  for (;;) {
    unsigned long prod = __atomic_load_n(producer_pos_, __ATOMIC_ACQUIRE);
    if (cons >= prod || cons >= stop)
      return handed;
    while (cons < prod && cons < stop) {
      size_t offset = cons & mask; // 8-aligned, so the header never wraps
      uint32_t word = __atomic_load_n(reinterpret_cast<const uint32_t *>(data_ + offset), __ATOMIC_ACQUIRE);
      if (word & BPF_RINGBUF_BUSY_BIT)
        return handed; // still being written: it and everything after it wait for the next call
      size_t length = word & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
      size_t total = (length + BPF_RINGBUF_HDR_SZ + 7) & ~size_t(7);
      if (total > size_ || total > prod - cons) {
        // No kernel wrote this: nothing after it can be trusted to be a record boundary.
        ++malformed_;
        __atomic_store_n(consumer_pos_, prod, __ATOMIC_RELEASE);
        return handed;
      }
      if (!(word & BPF_RINGBUF_DISCARD_BIT)) {
        size_t start = (offset + BPF_RINGBUF_HDR_SZ) & mask;
        const uint8_t *record = data_ + start;
        if (length > size_ - start) { // wraps past the end: the two pieces, joined
          size_t first = size_ - start;
          if (wrap_buffer_.size() < length)
            wrap_buffer_.resize(length);
          std::memcpy(wrap_buffer_.data(), data_ + start, first);
          std::memcpy(wrap_buffer_.data() + first, data_, length - first);
          record = wrap_buffer_.data();
          ++wrapped_;
        }
        on_record_(ctx_, record, length);
        if (handed < INT_MAX)
          ++handed;
      }
      cons += total;
      __atomic_store_n(consumer_pos_, cons, __ATOMIC_RELEASE);
    }
  }
}

int RingReader::poll(int timeout_ms) {
  if (epoll_fd_ < 0)
    return consume();
  epoll_event event;
  int ready = epoll_wait(epoll_fd_, &event, 1, timeout_ms);
  if (ready < 0)
    return -errno;
  return consume();
}

} // namespace weave
