// zerosize passes and returns values of zero size (struct{}, [0]T, structs holding them) between
// ordinary ones. The ABI gives a zero-size value no register but still aligns the stack for it, so
// these are where a tracer most easily reads a neighbour. Before each call main writes one JSON line
// with what it passes (the ground truth), and each function writes what it returns.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

type Empty struct{}

// A is a named zero-length array: Go prints it as [], like [0]int8, though its name has no brackets.
type A [0]int8

type Holder struct {
	A int16
	Z struct{}
	B int64
	N [0]int8
	C uint8
}

var truth *json.Encoder

func record(function, kind string, values map[string]any) {
	if err := truth.Encode(map[string]any{"function": function, "kind": kind, "values": values}); err != nil {
		panic(err)
	}
}

//go:noinline
func Around(a int, e struct{}, b int32, z [0]int8, c string) (Empty, int) {
	n := a + int(b) + len(c)
	record("main.Around", "return", map[string]any{"~r0": map[string]any{}, "~r1": n})
	return Empty{}, n
}

//go:noinline
func Hold(h Holder, tail [0]int64, last uint16) (r [0]int32, sum int) {
	sum = int(h.A) + int(h.B) + int(h.C) + int(last)
	record("main.Hold", "return", map[string]any{"r": []any{}, "sum": sum})
	return r, sum
}

//go:noinline
func (e Empty) Method(x int) struct{} {
	record("main.Empty.Method", "return", map[string]any{"~r0": map[string]any{}})
	return struct{}{}
}

// Same is a single RET on amd64 (x arrives in RAX and leaves in RAX): its entry probe and its return
// probe sit at one address, and the entry must still come first. It records nothing itself, which
// would add code; main records both events.
//
//go:noinline
func Same(x int) int { return x }

// Named takes a named zero-length array. The values main records for it carry, under "printed",
// how Go's %v prints each one, which is what the tracer's JSON value must read as.
//
//go:noinline
func Named(a A, n int) int {
	record("main.Named", "return", map[string]any{"~r0": n + len(a)})
	return n + len(a)
}

func main() {
	truthPath := flag.String("truth", "", "file to write the ground truth to, one JSON line per value set")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	truth = json.NewEncoder(f)
	for r := 0; r < 2; r++ {
		record("main.Around", "entry", map[string]any{"a": 7 + r, "e": map[string]any{}, "b": -3 - r,
			"z": []any{}, "c": "zero"})
		Around(7+r, struct{}{}, int32(-3-r), [0]int8{}, "zero")
		h := Holder{A: int16(-2 - r), B: 1 << 40, C: 200}
		record("main.Hold", "entry", map[string]any{"h": map[string]any{"A": h.A, "Z": map[string]any{}, "B": h.B,
			"N": []any{}, "C": h.C}, "tail": []any{}, "last": 65535 - r})
		Hold(h, [0]int64{}, uint16(65535-r))
		record("main.Empty.Method", "entry", map[string]any{"e": map[string]any{}, "x": 42 + r})
		Empty{}.Method(42 + r)
		record("main.Same", "entry", map[string]any{"x": -9 - r})
		record("main.Same", "return", map[string]any{"~r0": -9 - r})
		Same(-9 - r)
		var a A
		if err := truth.Encode(map[string]any{"function": "main.Named", "kind": "entry",
			"values": map[string]any{"a": []any{}, "n": 5 + r}, "printed": map[string]any{"a": fmt.Sprintf("%v", a)}}); err != nil {
			panic(err)
		}
		Named(a, 5+r)
	}
}
