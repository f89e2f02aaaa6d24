// The source-line fixture: each function records its own locals on the line a line probe
// targets (the lines marked "probe:"), as one JSON line of -truth per pass, before the line's
// own work. A line probe fires before its line runs, so the values it reads there are the ones the
// line hands to record: the tracer's events can be compared with the truth value for value.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
)

type point struct {
	X, Y int
	Name string
}

type hit struct {
	Probe  string         `json:"probe"`
	Locals map[string]any `json:"locals"`
}

var (
	truth *json.Encoder
	names = []string{"alpha", "beta", "gamma"}
	sink  int
)

func record(probe string, locals map[string]any) {
	if truth != nil {
		_ = truth.Encode(hit{probe, locals})
	}
}

// called records the goroutine that just ran a probed function and that function's callers, as
// runtime.Callers and runtime.CallersFrames give them (its caller's frame at the call's line
// first), for the calls probe's records before it.
//
//go:noinline
func called(probe string) int {
	if truth == nil {
		return 0
	}
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	var goid int
	fmt.Sscanf(string(buf), "goroutine %d ", &goid)
	pcs := make([]uintptr, 32)
	k := runtime.Callers(2, pcs) // skip runtime.Callers and called itself
	frames := runtime.CallersFrames(pcs[:k])
	var stack []map[string]any
	for {
		f, more := frames.Next()
		stack = append(stack, map[string]any{"function": f.Function, "file": f.File, "line": f.Line})
		if !more {
			break
		}
	}
	_ = truth.Encode(map[string]any{"called": probe, "goid": goid, "stack": stack})
	return 0
}

//go:noinline
func loop(n int) int {
	sum := 0
	for i := 0; i < n; i++ {
		sum += i * 3
		record("loop", map[string]any{"i": i, "sum": sum, "n": n}) // probe: loop
	}
	return sum
}

//go:noinline
func structs(k int) int {
	p := point{X: k, Y: k * 2, Name: names[k%len(names)]}
	q := p.X + p.Y
	record("structs", map[string]any{"p.X": p.X, "p.Y": p.Y, "p.Name": p.Name, "q": q, "k": k}) // probe: structs
	sink += len(p.Name)
	return q
}

//go:noinline
func build(k int) string {
	s := fmt.Sprintf("item-%d", k)
	s = strings.ToUpper(s) + "!"
	record("build", map[string]any{"s": s, "k": k}) // probe: build
	return s
}

//go:noinline
func shadow(x int) int {
	y := x + 1
	if x%2 == 0 {
		y := x * 10
		record("shadow", map[string]any{"y": y, "x": x}) // probe: shadow
		return y
	}
	return y
}

//go:noinline
func touch(p *point) int { return p.X + len(p.Name) }

// p's address goes to a function that keeps it no longer than the call: p lives in one stack slot.
//
//go:noinline
func framed(k int) int {
	p := point{X: k + 1, Y: k * 5, Name: names[(k+1)%len(names)]}
	n := touch(&p)
	record("framed", map[string]any{"p.X": p.X, "p.Y": p.Y, "p.Name": p.Name, "n": n}) // probe: framed
	return n + p.Y
}

// twice is inlined into both callers: its line is probed in each copy, named after the caller.
func twice(v int) int {
	w := v * 2
	return w + 1 // probe: twice
}

//go:noinline
func callA(a int) int {
	r := twice(a + 3)
	record("twice:main.callA", map[string]any{"v": a + 3, "w": (a + 3) * 2})
	return r
}

//go:noinline
func callB(b int) int {
	r := twice(b * 5)
	record("twice:main.callB", map[string]any{"v": b * 5, "w": b * 5 * 2})
	return r
}

func main() {
	path := flag.String("truth", "", "write each probed line's locals here, one JSON line each")
	rounds := flag.Int("rounds", 3, "passes over the functions")
	flag.Parse()
	if *path != "" {
		f, err := os.Create(*path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		truth = json.NewEncoder(f)
	}
	total := 0
	// Each pass in a goroutine of its own, one after the other: each call below also records,
	// on the call's own line, the goroutine it ran on and its callers (after the call, as
	// "called"), so that what a line probe shows of the goroutine and the stack is checked too.
	for r := 0; r < *rounds; r++ {
		done := make(chan int)
		go func() {
			t := 0
			t += loop(r+2) + called("loop")
			t += structs(r) + called("structs")
			t += len(build(r*7)) + called("build")
			t += shadow(r) + called("shadow")
			t += framed(r) + called("framed")
			t += callA(r) + called("twice:main.callA")
			t += callB(r) + called("twice:main.callB")
			done <- t
		}()
		total += <-done
	}
	fmt.Println("total", total, sink)
}
