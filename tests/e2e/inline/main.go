// The inlined-instances fixture: add and label are small enough that the compiler inlines them at
// every direct call (several call sites, one of them nested inside mid, itself inlined); addFn
// calls the out-of-line copy through a func value the compiler cannot see through. Every call
// writes what it passed to -truth (one JSON line, in call order) and the program prints how many
// calls each function had, so a tracer's events can be compared call for call.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

type call struct {
	Function string         `json:"function"`
	Site     string         `json:"site"`
	Args     map[string]any `json:"args"`
}

var (
	truth  *json.Encoder
	counts = map[string]int{}
)

func record(function, site string, args map[string]any) {
	counts[function]++
	if truth != nil {
		_ = truth.Encode(call{function, site, args})
	}
}

func add(a, b int) int {
	if a > b {
		return a - b
	}
	return b*2 - a
}

func label(s string, n int) int { return len(s)*3 + n }

// mid is inlined into its callers too, and add into it: add's instance there is nested.
func mid(x int) int { return add(x, 7) * 2 }

// A package variable may be reassigned anywhere: calls through it stay indirect, to add's own body.
var addFn = add

//go:noinline
func loop1(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		record("main.add", "loop1", map[string]any{"a": i, "b": 1})
		s += add(i, 1)
	}
	return s
}

//go:noinline
func loop2(n, seed int) int {
	s := seed
	for i := 0; i < n; i++ {
		record("main.add", "loop2", map[string]any{"a": i * 3, "b": s})
		s = add(i*3, s)
	}
	return s
}

//go:noinline
func nested(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		record("main.mid", "nested", map[string]any{"x": i + 10})
		record("main.add", "nested", map[string]any{"a": i + 10, "b": 7})
		s ^= mid(i + 10)
	}
	return s
}

//go:noinline
func indirect(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		record("main.add", "indirect", map[string]any{"a": i, "b": 100 + i})
		s += addFn(i, 100+i)
	}
	return s
}

//go:noinline
func labels(words []string) int {
	s := 0
	for i, w := range words {
		record("main.label", "labels", map[string]any{"s": w, "n": i})
		s += label(w, i)
	}
	return s
}

func main() {
	rounds := flag.Int("rounds", 3, "calls per call site")
	seed := flag.Int("seed", 5, "first value of loop2's sum")
	truthPath := flag.String("truth", "", "write every call's arguments here, one JSON line each")
	flag.Parse()
	if *truthPath != "" {
		f, err := os.Create(*truthPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		truth = json.NewEncoder(f)
	}
	words := []string{"alpha", "be", "gamma", "delta", "epsilon"}
	record("main.min", "main", map[string]any{"a": *rounds, "b": len(words)})
	total := loop1(*rounds) + loop2(*rounds, *seed) + nested(*rounds) + indirect(*rounds) + labels(words[:min(*rounds, len(words))])
	fmt.Printf("total %d\n", total)
	for _, f := range []string{"main.add", "main.mid", "main.label", "main.min"} {
		fmt.Printf("calls %s %d\n", f, counts[f])
	}
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}
