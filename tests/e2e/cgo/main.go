// cgo is a fixture linked with C code that has thread-locals of its own: the C TLS block moves
// where ABI0 code finds g (FS base - 0x30 here instead of - 8), and weave must derive that from
// the binary. It prints what it passes to Add, one JSON line per call, to -truth.
package main

/*
__thread int counters[5];
static int bump(int n) { counters[n % 5] += n; return counters[n % 5]; }
*/
import "C"

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

//go:noinline
func Add(a int, s string) int {
	return a + len(s) + int(C.bump(C.int(a)))
}

func main() {
	truthPath := flag.String("truth", "/dev/null", "file for the ground truth")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	sum := 0
	for i := 0; i < 3; i++ {
		s := fmt.Sprintf("cgo-%d", i)
		if err := enc.Encode(map[string]any{"function": "main.Add", "args": map[string]any{"a": i * 7, "s": s}}); err != nil {
			panic(err)
		}
		sum += Add(i*7, s)
	}
	fmt.Fprintln(os.Stderr, "cgo done", sum)
}
