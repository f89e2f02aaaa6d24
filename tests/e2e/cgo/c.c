// The fixture's C code. Thread-locals (bump), and C between two Go calls: main.callC calls c1, which calls c2, c3, and c3 calls back into Go
// (goCallback, exported from main.go). Built -O2 -fomit-frame-pointer (main.go's #cgo CFLAGS), as
// C libraries often are: %rbp is an ordinary register here, so a frame-pointer walk cannot cross
// these frames.
#include <stdint.h>

#include "_cgo_export.h"

// C thread-locals of its own: they move where ABI0 code finds g in the TLS block.
__thread int counters[5];
int bump(int n) {
  counters[n % 5] += n;
  return counters[n % 5];
}

__attribute__((noinline)) int64_t c3(int64_t x) { return goCallback(x + 1) * 3 + 1; }
__attribute__((noinline)) int64_t c2(int64_t x) { return c3(x + 1) * 5 + 2; }
__attribute__((noinline)) int64_t c1(int64_t x) { return c2(x + 1) * 7 + 3; }
