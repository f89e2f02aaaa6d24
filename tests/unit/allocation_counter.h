// Counts heap allocations while g_count_allocations is set, for the tests that the hot path (event
// decoding, formatting, views) makes none per event. Replacing the global operator new covers every
// allocation of the executable (std::string, std::vector), so include this in exactly one
// translation unit of a test executable.
#pragma once

#include <cstdlib>
#include <new>

// GCC flags the malloc/free inside the replacements as a new/delete mismatch where it inlines them.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
bool g_count_allocations = false;
size_t g_allocations = 0;
} // namespace

void *operator new(size_t size) {
  if (g_count_allocations)
    ++g_allocations;
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept {
  std::free(p);
}
void operator delete(void *p, size_t) noexcept {
  std::free(p);
}
// The other forms too: under AddressSanitizer each form not replaced here is ASan's own, and memory
// from one freed by another is reported as a mismatch (the sanitizer pass, scripts/sanitize.sh).
void *operator new(size_t size, const std::nothrow_t &) noexcept {
  if (g_count_allocations)
    ++g_allocations;
  return std::malloc(size ? size : 1);
}
void *operator new[](size_t size) { return operator new(size); }
void *operator new[](size_t size, const std::nothrow_t &tag) noexcept { return operator new(size, tag); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
