// newgo is the version matrix's fixture for what Go brought after 1.19, built by every toolchain
// from 1.21 on (tests/matrix/build.sh): generic methods (shape instantiations taking a dictionary),
// the min/max/clear builtins inlined into their callers, maps small and large (one group, and a
// swiss-table directory of several tables from Go 1.24), and a PGO build. Range-over-func bodies
// and their yield closures are in iter.go, built from Go 1.23 on. As in tests/e2e/fixture, main
// writes one JSON line per call saying what it passes (the ground truth) to -truth.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// Stack is generic: its methods are compiled once per shape, taking a dictionary first.
type Stack[T any] struct {
	items []T
	name  string
}

//go:noinline
func (s *Stack[T]) Push(v T) int {
	s.items = append(s.items, v)
	return len(s.items)
}

//go:noinline
func (s Stack[T]) Peek(depth int) T {
	return s.items[len(s.items)-1-depth]
}

// Clamp inlines the min and max builtins.
//
//go:noinline
func Clamp(x, lo, hi int) (r int) {
	return max(lo, min(x, hi))
}

// Span inlines min and max over ints and strings.
//
//go:noinline
func Span(a, b, c int, s, t string) (lo, hi int, first string) {
	return min(a, b, c), max(a, b, c), min(s, t)
}

// Sizes takes maps before and after clear(): its len is read from the runtime's map header (hmap.count
// before Go 1.24, the swiss maps.Map.used after).
//
//go:noinline
func Sizes(small map[int]string, big map[string]int, cleared map[int]int) int {
	return len(small) + len(big) + len(cleared)
}

// Hot is the PGO profile's hot path: with the profile the compiler inlines its callee, which is
// too big for the default budget.
//
//go:noinline
func Hot(n int) int {
	return warm(n) + 1
}

func warm(n int) int {
	// Big enough (cost > 80) that only PGO inlines it into Hot.
	s := 0
	for i := 0; i < n%7; i++ {
		s += i * n
		s ^= s >> 3
		s += (s << 2) - i
		s = s%1000003 + n
		s += i*i - n%5 + (s>>7)&0xff
		s ^= s << 1
		s -= (s >> 11) ^ i
		s += n % 13
	}
	return s + Leaf(n)
}

// Leaf records the stack runtime.Callers sees, as tests/e2e/fixture's Leaf does.
//
//go:noinline
func Leaf(n int) int {
	if !recording {
		return n
	}
	record("main.Leaf", map[string]any{"n": n, "stack": callers()})
	return n
}

// callers lists the frames above its caller, inlined ones included, as runtime.CallersFrames gives them.
func callers() []map[string]any {
	if !recording {
		return nil
	}
	pcs := make([]uintptr, 32)
	k := runtime.Callers(3, pcs) // skip runtime.Callers, callers and its caller
	frames := runtime.CallersFrames(pcs[:k])
	var list []map[string]any
	for {
		f, more := frames.Next()
		list = append(list, map[string]any{"function": f.Function, "file": f.File, "line": f.Line})
		if !more {
			break
		}
	}
	return list
}

var (
	truth     *json.Encoder
	recording bool
	// rangeOverFunc is set by iter.go when the toolchain has range-over-func (Go 1.23+).
	rangeOverFunc func(rounds int) int
)

func record(function string, args map[string]any) {
	if recording {
		if err := truth.Encode(map[string]any{"function": function, "args": args}); err != nil {
			panic(err)
		}
	}
}

func main() {
	truthPath := flag.String("truth", "/dev/null", "file to write what each call passes, one JSON line per call")
	rounds := flag.Int("rounds", 3, "how many times to call each function")
	hot := flag.Int("hot", 0, "run the hot path this many thousand times first (the PGO profile's workload)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the hot path here")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	truth = json.NewEncoder(f)
	truth.SetEscapeHTML(false)
	sum := 0
	if *hot > 0 {
		if *cpuprofile != "" {
			p, err := os.Create(*cpuprofile)
			if err != nil {
				panic(err)
			}
			if err := pprof.StartCPUProfile(p); err != nil {
				panic(err)
			}
			defer pprof.StopCPUProfile()
		}
		for i := 0; i < *hot*1000; i++ {
			sum += Hot(i)
		}
	}
	recording = true
	for r := 0; r < *rounds; r++ {
		ints := &Stack[int]{name: fmt.Sprintf("ints-%d", r)}
		for i := 0; i <= r; i++ {
			record("main.(*Stack[go.shape.int]).Push", map[string]any{"s.name": ints.name, "v": 10*r + i})
			sum += ints.Push(10*r + i)
		}
		strs := &Stack[string]{name: "strs"}
		v := fmt.Sprintf("item-%d", r)
		record("main.(*Stack[go.shape.string]).Push", map[string]any{"s.name": strs.name, "v": v})
		sum += strs.Push(v)
		record("main.Stack[go.shape.int].Peek", map[string]any{"s.name": ints.name, "depth": r / 2})
		sum += ints.Peek(r / 2)

		x, lo, hi := []int{-5, 50, 500}[r], 0, 100
		record("main.Clamp", map[string]any{"x": x, "lo": lo, "hi": hi})
		record("main.Clamp:return", map[string]any{"r": max(lo, min(x, hi))})
		sum += Clamp(x, lo, hi)

		a, b, c, s, t := 3-r, -2*r, 1, fmt.Sprintf("apple-%d", r), "banana"
		if r == 1 {
			s, t = t, s
		}
		record("main.Span", map[string]any{"a": a, "b": b, "c": c, "s": s, "t": t})
		record("main.Span:return", map[string]any{"lo": min(a, b, c), "hi": max(a, b, c), "first": min(s, t)})
		lo2, hi2, first := Span(a, b, c, s, t)
		sum += lo2 + hi2 + len(first)

		small := map[int]string{}
		for i := 0; i < 1+r*3; i++ { // 1, 4, 7 entries: one group
			small[i] = fmt.Sprint(i)
		}
		big := map[string]int{}
		for i := 0; i < 3000+r*1000; i++ { // thousands: several tables under a directory (swiss)
			big[fmt.Sprint("k", i)] = i
		}
		cleared := map[int]int{1: 1, 2: 2, 3: 3}
		clear(cleared)
		record("main.Sizes", map[string]any{"len(small)": len(small), "len(big)": len(big), "len(cleared)": len(cleared)})
		sum += Sizes(small, big, cleared)

		record("main.Hot", map[string]any{"n": 100 + r})
		sum += Hot(100 + r)
	}
	if rangeOverFunc != nil {
		sum += rangeOverFunc(*rounds)
	}
	fmt.Fprintln(os.Stderr, "newgo done, sum", sum)
}
