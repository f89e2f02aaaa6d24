// workload: the Go program bench/run.sh traces. A hot loop calls main.Work, a //go:noinline
// function taking an int, a string and a struct pointer, and reports the cost per call as Go
// itself measures it (time.Now around the loop), so the tracer's overhead is seen from inside the
// traced program.
//
//	workload -n 100000                  one goroutine, 100000 calls
//	workload -n 100000 -goroutines 2    two goroutines hammering Work at once, 100000 calls each
//	workload -n 20000 -pause 20us       a pause after each call (bench/stacks.sh: a rate the tracer keeps up with)
//
// Output, one line on stderr (stdout is left to a tracer started as `tracer -- workload`):
// "calls=N ns_per_call=X best_ns_per_call=B calls_per_sec=Y": X is the loop's time over its
// iterations (per goroutine), B the same for the fastest of its -chunks chunks.
//
// Under Go's ABIInternal (amd64) Work's arguments arrive in registers: n in RAX, s's data pointer
// in RBX and its length in RCX, p in RDI; p.Count lies at offset 8 of *p.
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"time"
)

type Item struct {
	ID    int64
	Count int64
	Name  string
}

//go:noinline
func Work(n int, s string, p *Item) int {
	return n + len(s) + int(p.Count)
}

var sink int

var pause time.Duration // -pause: slept after each call

// loop calls Work n times in `chunks` equal chunks and returns the sum and the fastest chunk's time
// per call: on a shared machine a neighbour's burst slows some chunks, and the fastest one is the
// least disturbed measure of the cost itself.
func loop(n, chunks int, item *Item) (int, float64) {
	total, best := 0, 0.0
	per := n / chunks
	for c := 0; c < chunks; c++ {
		start := time.Now()
		for i := c * per; i < (c+1)*per; i++ {
			total += Work(i, "hello, weave", item)
			if pause > 0 {
				time.Sleep(pause)
			}
		}
		ns := float64(time.Since(start).Nanoseconds()) / float64(per)
		if c == 0 || ns < best {
			best = ns
		}
	}
	return total, best
}

func main() {
	n := flag.Int("n", 100000, "calls per goroutine")
	goroutines := flag.Int("goroutines", 1, "goroutines calling Work at once")
	flag.DurationVar(&pause, "pause", 0, "sleep this long after each call (0: none)")
	chunks := flag.Int("chunks", 20, "chunks the calls are timed in (best_ns_per_call is the fastest)")
	flag.Parse()
	if *chunks < 1 || *n < *chunks {
		*chunks = 1
	}
	*n -= *n % *chunks

	item := &Item{ID: 1, Count: 42, Name: "item"}
	best := 0.0
	start := time.Now()
	if *goroutines == 1 {
		sink, best = loop(*n, *chunks, item)
	} else {
		var wg sync.WaitGroup
		results := make([]int, *goroutines)
		bests := make([]float64, *goroutines)
		for g := 0; g < *goroutines; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				results[g], bests[g] = loop(*n, *chunks, &Item{ID: int64(g), Count: 42, Name: "item"})
			}(g)
		}
		wg.Wait()
		for g, r := range results {
			sink += r
			if g == 0 || bests[g] < best {
				best = bests[g]
			}
		}
	}
	elapsed := time.Since(start)
	calls := *n * *goroutines
	fmt.Fprintf(os.Stderr, "calls=%d ns_per_call=%.1f best_ns_per_call=%.1f calls_per_sec=%.0f\n",
		calls, float64(elapsed.Nanoseconds())/float64(*n), best, float64(calls)/elapsed.Seconds())
}
