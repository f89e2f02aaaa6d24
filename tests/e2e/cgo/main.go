// cgo is a fixture linked with C code that has thread-locals of its own: the C TLS block moves
// where ABI0 code finds g (FS base - 0x30 here instead of - 8), and weave must derive that from
// the binary. It prints what it passes to Add, one JSON line per call, to -truth. With -callbacks
// N it also calls C (c.c: c1 -> c2 -> c3) N times, which calls back into Go's Probed; Probed
// records its argument, the stack runtime.Callers sees from it, and the C frames' own backtrace.
// With -via-libc the calls go through libc's qsort (c_sort), which calls back from its comparator.
package main

/*
#cgo CFLAGS: -O2 -fomit-frame-pointer
#include <stdint.h>
int bump(int n);
int64_t c1(int64_t x);
int64_t c_sort(int64_t x);
extern void *c_stack[64];
extern int c_stack_len;
extern char **c_stack_symbols;
*/
import "C"

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"unsafe"
)

var enc *json.Encoder

//export goCallback
func goCallback(x C.int64_t) C.int64_t {
	return C.int64_t(Probed(int64(x)))
}

// Probed is reached from C. Its callers, as the runtime sees them, skip the C frames: from
// runtime.cgocallback the runtime's own unwinder goes on where the goroutine called into C.
//
//go:noinline
func Probed(x int64) int64 {
	pcs := make([]uintptr, 64)
	k := runtime.Callers(2, pcs) // skip runtime.Callers and Probed itself
	frames := runtime.CallersFrames(pcs[:k])
	var list []map[string]any
	for {
		f, more := frames.Next()
		list = append(list, map[string]any{"function": f.Function, "file": f.File, "line": f.Line})
		if !more {
			break
		}
	}
	// And the C frames' view, as c3 recorded it just before it called back (c.c): each return
	// address, with glibc's name for it (backtrace_symbols), or the runtime's where it is Go code
	// (runtime.asmcgocall, where the goroutine's call into C began). The first is record_c_stack's
	// own.
	var cstack []map[string]any
	for i := 1; i < int(C.c_stack_len); i++ {
		pc := uintptr(C.c_stack[i])
		frame := map[string]any{"pc": fmt.Sprintf("%#x", pc),
			"symbol": C.GoString(*(**C.char)(unsafe.Add(unsafe.Pointer(C.c_stack_symbols), i*int(unsafe.Sizeof(uintptr(0))))))}
		if f := runtime.FuncForPC(pc - 1); f != nil {
			file, line := f.FileLine(pc - 1)
			frame["go"] = map[string]any{"function": f.Name(), "file": file, "line": line}
		}
		cstack = append(cstack, frame)
	}
	if err := enc.Encode(map[string]any{"function": "main.Probed", "args": map[string]any{"x": x}, "stack": list,
		"c_stack": cstack}); err != nil {
		panic(err)
	}
	return x * 2
}

//go:noinline
func callC(x int64) int64 { return int64(C.c1(C.int64_t(x))) }

//go:noinline
func Add(a int, s string) int {
	return a + len(s) + int(C.bump(C.int(a)))
}

func main() {
	truthPath := flag.String("truth", "/dev/null", "file for the ground truth")
	callbacks := flag.Int("callbacks", 0, "calls into C that call back into Go's Probed")
	viaLibc := flag.Bool("via-libc", false, "make the callbacks through libc's qsort instead (c_sort)")
	holdExit := flag.Bool("hold-exit", false, "after the callbacks, print 'callbacks done PID' and wait for "+
		"SIGUSR1 before exiting (a tracer reads a live process's /proc/PID/maps)")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	enc = json.NewEncoder(f)
	sum := 0
	for i := 0; i < 3; i++ {
		s := fmt.Sprintf("cgo-%d", i)
		if err := enc.Encode(map[string]any{"function": "main.Add", "args": map[string]any{"a": i * 7, "s": s}}); err != nil {
			panic(err)
		}
		sum += Add(i*7, s)
	}
	for i := 0; i < *callbacks; i++ {
		if *viaLibc {
			sum += int(C.c_sort(C.int64_t(10 * i)))
			continue
		}
		sum += int(callC(int64(10 * i)))
	}
	if *holdExit {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGUSR1)
		fmt.Fprintln(os.Stderr, "callbacks done", os.Getpid())
		<-signals
	}
	fmt.Fprintln(os.Stderr, "cgo done", sum)
}
