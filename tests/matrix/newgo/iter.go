//go:build go1.23

// Range-over-func (Go 1.23): the loop body becomes a closure (main.Walk-range1) that the iterator
// calls as its yield function; the iterator itself is a closure returned by Pairs (main.Pairs.func1).
package main

import (
	"fmt"
	"iter"
)

// Pairs yields (i, label) pairs until yield says stop.
//
//go:noinline
func Pairs(prefix string, n int) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for i := 0; i < n; i++ {
			if !yield(i, fmt.Sprintf("%s-%d", prefix, i)) {
				return
			}
		}
	}
}

// Walk ranges over Pairs; its body breaks out early on the round's limit.
//
//go:noinline
func Walk(prefix string, n, limit int) int {
	total := 0
	for i, label := range Pairs(prefix, n) {
		if i >= limit {
			break
		}
		total += Visit(i, label)
	}
	return total
}

// Visit is called from the range body, so its stack passes through the yield closure.
//
//go:noinline
func Visit(i int, label string) int {
	record("main.Visit", map[string]any{"i": i, "label": label, "stack": callers()})
	return i + len(label)
}

func init() {
	rangeOverFunc = func(rounds int) int {
		sum := 0
		for r := 0; r < rounds; r++ {
			prefix := fmt.Sprintf("p%d", r)
			n, limit := 4, 2+r%2
			record("main.Walk", map[string]any{"prefix": prefix, "n": n, "limit": limit})
			record("main.Pairs.func1", map[string]any{"yield": "main.Walk-range1"})
			// The body runs for each pair up to and including the one that breaks.
			for i := 0; i <= limit && i < n; i++ {
				record("main.Walk-range1", map[string]any{"i": i, "label": fmt.Sprintf("%s-%d", prefix, i)})
			}
			sum += Walk(prefix, n, limit)
		}
		return sum
	}
}
