// pclninline is the fixture of the pclntab reader's tests (tests/unit/test_pclntab.cpp): chains of
// small functions that the compiler inlines, around calls that are never inlined, where the program
// prints what the Go runtime itself says about its stack (runtime.Callers + runtime.CallersFrames).
// The tests symbolize the same PCs with weave's reader and compare frame by frame.
//
//   - main -> outer (inlined); middle -> (*counter).add, sub.Leaf (inlined, another package and
//     file) -> report: a call at the bottom of each chain.
//   - deep -> choose -> pick -> scale (three inlined levels) ending in an index out of range, whose
//     runtime.panicIndex call site sits inside all three; the deferred recover prints the stack.
package main

import (
	"fmt"
	"os"
	"runtime"

	"weave.test/pclninline/sub"
)

type counter struct{ n int }

func (c *counter) add(v int) int {
	c.n += v
	return c.n
}

// report prints, for the stack it is called from:
//
//	stack <label>
//	self <entry of main.report>           (the tests compute a PIE's load bias from it)
//	pc <raw runtime.Callers PC>           (one line each, innermost first)
//	frame <Frame.PC> <Function>\t<File>\t<Line>
//
//go:noinline
func report(label string, x int) int {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(1, pcs) // pcs[0] is in report itself
	pcs = pcs[:n]
	fmt.Printf("stack %s\n", label)
	fmt.Printf("self %#x\n", runtime.FuncForPC(pcs[0]).Entry())
	for _, pc := range pcs[1:] {
		fmt.Printf("pc %#x\n", pc)
	}
	frames := runtime.CallersFrames(pcs[1:])
	for {
		frame, more := frames.Next()
		fmt.Printf("frame %#x %s\t%s\t%d\n", frame.PC, frame.Function, frame.File, frame.Line)
		if !more {
			break
		}
	}
	return x + n
}

func middle(c *counter, x int) int {
	return c.add(sub.Leaf(x+1, func(v int) int { return report("call", v) }))
}

func outer(c *counter, x int) int {
	return middle(c, x*2) - 1
}

// The bounds check of v[i] is not counted in the inlining budget, so all three levels inline into
// deep and the call of runtime.panicIndex carries the whole chain.
func scale(v []int, i int) int  { return v[i] * 3 }
func pick(v []int, i int) int   { return scale(v, i+1) + 1 }
func choose(v []int, i int) int { return pick(v, i*2) - 1 }

func deep() (r int) {
	defer func() {
		if recover() != nil {
			r = report("panic", -1)
		}
	}()
	v := make([]int, 2)
	return choose(v, len(os.Args)+1)
}

func main() {
	c := &counter{}
	fmt.Println("result", outer(c, len(os.Args)), deep())
}
