// The fixture's C code. Thread-locals (bump), and C between two Go calls: main.callC calls c1, which calls c2, c3, and c3 calls back into Go
// (goCallback, exported from main.go). Built -O2 -fomit-frame-pointer (main.go's #cgo CFLAGS), as
// C libraries often are: %rbp is an ordinary register here, so a frame-pointer walk cannot cross
// these frames.
#include <execinfo.h>
#include <stdint.h>
#include <stdlib.h>

#include "_cgo_export.h"

// c3's own view of its callers, taken just before it calls back into Go: glibc's backtrace(), which
// unwinds with the same .eh_frame CFI (through libgcc), no frame pointers, and its names from the
// dynamic symbol table (cgo binaries export their C functions). Read by main.go's Probed.
void *c_stack[64];
int c_stack_len;
char **c_stack_symbols;

__attribute__((noinline)) void record_c_stack(void) {
  c_stack_len = backtrace(c_stack, 64);
  c_stack_symbols = backtrace_symbols(c_stack, c_stack_len);
}

// C thread-locals of its own: they move where ABI0 code finds g in the TLS block.
__thread int counters[5];
int bump(int n) {
  counters[n % 5] += n;
  return counters[n % 5];
}

// One line: the call that records the stack and the call into Go share it, so c3's frame is at the
// same line in both views (their return addresses differ by the one call).
__attribute__((noinline)) int64_t c3(int64_t x) { return (record_c_stack(), goCallback(x + 1)) * 3 + 1; }
__attribute__((noinline)) int64_t c2(int64_t x) { return c3(x + 1) * 5 + 2; }
__attribute__((noinline)) int64_t c1(int64_t x) { return c2(x + 1) * 7 + 3; }

// A callback through libc: qsort calls compare, which calls back into Go. The frames between are
// libc's, in a shared library whose CFI the tracer does not read: its walk ends there, and says so.
static int64_t sort_arg;
static int compare(const void *a, const void *b) {
  record_c_stack();
  sort_arg = goCallback(sort_arg);
  return *(const int *)a - *(const int *)b;
}
__attribute__((noinline)) int64_t c_sort(int64_t x) {
  int pair[2] = {2, 1};
  sort_arg = x;
  qsort(pair, 2, sizeof pair[0], compare);
  return sort_arg;
}
