// The direct-interface fixture: a value an interface holds in its data word itself, or behind it,
// as the type's descriptor says (KindDirectIface; the tflag's TFlagDirectIface since Go 1.26). Ref
// is a pointer with a zero-size field before it: from Go 1.26 (Size == PtrBytes == PtrSize) its
// value is the data word, before 1.26 (two fields) a copy the data word points to. Use gets a Ref
// in a Getter each call; the program prints, one JSON line per call, the pointer Ref holds (%p)
// and the number behind it, for the tracer's output to be compared with.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

type Box struct{ N int }

type Ref struct {
	_ [0]func()
	P *Box
}

func (r Ref) Get() int { return r.P.N }

type Getter interface{ Get() int }

//go:noinline
func Use(g Getter, k int) int { return g.Get() + k }

func main() {
	rounds := flag.Int("rounds", 4, "calls of Use")
	flag.Parse()
	out := json.NewEncoder(os.Stdout)
	for k := 1; k <= *rounds; k++ {
		b := &Box{N: 7 * k}
		Use(Ref{P: b}, k)
		out.Encode(map[string]any{"k": k, "p": fmt.Sprintf("%p", b), "n": b.N})
	}
}
