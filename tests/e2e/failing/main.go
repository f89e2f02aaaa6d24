// The when_return and nil-guard fixture: a small order service with a failing path. Process fails
// for a nil order (errors.New), a negative quantity (a custom error struct) and a large one (an
// error wrapped with %w), and returns named results from Respond; Lookup and the Check functions
// take nil pointers. The program prints, one JSON line per call, what it passed and what came back,
// for the tracer's output to be compared with.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"
)

type Order struct {
	ID   int
	Name string
	Qty  int
}

// ValidationError is the custom error struct of the failing path.
type ValidationError struct {
	Field string
	Code  int
}

func (e *ValidationError) Error() string { return fmt.Sprintf("invalid %s (%d)", e.Field, e.Code) }

var ErrTooLarge = errors.New("too large")

//go:noinline
func Process(o *Order, n int) (v int, err error) {
	if o == nil {
		return -1, errors.New("nil order")
	}
	if n > 0 && o.Qty%2 != 0 { // the odd quantities are slow (with -sleep-ms), failing or not
		time.Sleep(time.Duration(n) * time.Millisecond)
	}
	if o.Qty < 0 {
		return 0, &ValidationError{Field: "qty", Code: o.Qty}
	}
	if o.Qty > 100 {
		return 0, fmt.Errorf("order %d: %w", o.ID, ErrTooLarge)
	}
	return o.Qty * 10, nil
}

// Respond has named results: status 500 and up for the failures, n < 0 for the nil order.
//
//go:noinline
func Respond(o *Order) (n int, status int) {
	if o == nil {
		return -1, 400
	}
	if o.Qty > 100 {
		return 0, 500 + o.Qty%7
	}
	return o.Qty, 200
}

//go:noinline
func Lookup(p *Order) int {
	if p == nil {
		return -1
	}
	return p.ID
}

// The && / || truth table: each takes a maybe-nil order and a flag.
//
//go:noinline
func CheckAnd(p *Order, flag bool) bool { return flag && p != nil && p.Qty == 1 }

//go:noinline
func CheckOr(p *Order, flag bool) bool { return flag || (p != nil && p.Qty == 1) }

//go:noinline
func CheckAndFirst(p *Order, flag bool) bool { return p != nil && p.Qty == 1 && flag }

//go:noinline
func CheckNot(p *Order, flag bool) bool { return !(p != nil && p.Qty == 1) && flag }

// Inspect takes one value of each kind nil applies to; the empty but non-nil ones (an empty map,
// a zero-length slice) have len 0 like nil ones, and must not compare equal to nil.
//
//go:noinline
func Inspect(k int, m map[string]int, s []int, c chan int, f func() int, e error) int {
	return len(m) + len(s) + cap(c)
}

func inspectAll(out *json.Encoder, calls int) {
	for k := 0; k < calls; k++ {
		var m map[string]int
		if k%2 == 1 {
			m = map[string]int{} // empty, not nil
		}
		var s []int
		if k%3 != 0 {
			s = []int{} // empty, not nil
		}
		var c chan int
		if k%5 != 0 {
			c = make(chan int, k)
		}
		var f func() int
		if k%2 == 0 {
			f = func() int { return k }
		}
		var e error
		if k%4 == 1 {
			e = errors.New("e")
		}
		Inspect(k, m, s, c, f, e)
		out.Encode(map[string]any{"fn": "Inspect", "k": k, "m_nil": m == nil, "s_nil": s == nil, "c_nil": c == nil,
			"f_nil": f == nil, "e_nil": e == nil})
	}
}

func main() {
	rounds := flag.Int("rounds", 2, "rounds over the orders")
	inspect := flag.Int("inspect", 0, "calls of Inspect, after the orders")
	sleepMs := flag.Int("sleep-ms", 0, "Process sleeps this long for an odd quantity")
	flag.Parse()
	out := json.NewEncoder(os.Stdout)
	defer inspectAll(out, *inspect)
	names := []string{"x", "y", "x", "z"}
	// nil orders, good ones, negative and large quantities
	qtys := []int{1, 2, -3, 150, 7, 1, 240, -1}
	k := 0
	for r := 0; r < *rounds; r++ {
		for i, q := range qtys {
			k++
			var o *Order
			if k%3 != 0 { // every third order is nil, at a different place each round
				o = &Order{ID: 1000 + k, Name: names[k%len(names)], Qty: q}
			}
			start := time.Now()
			v, err := Process(o, *sleepMs)
			elapsed := time.Since(start)
			rec := map[string]any{"fn": "Process", "k": k, "nil": o == nil, "n": *sleepMs, "r0": v,
				"failed": err != nil, "elapsed_ns": elapsed.Nanoseconds()}
			if o != nil {
				rec["id"], rec["qty"] = o.ID, o.Qty
			}
			if err != nil {
				rec["err_type"], rec["err"] = fmt.Sprintf("%T", err), err.Error()
			}
			out.Encode(rec)
			n, status := Respond(o)
			out.Encode(map[string]any{"fn": "Respond", "k": k, "nil": o == nil, "rn": n, "status": status})
			out.Encode(map[string]any{"fn": "Lookup", "k": k, "nil": o == nil, "name": nameOf(o), "r0": Lookup(o)})
			for _, flag := range []bool{false, true} {
				a, b, c, d := CheckAnd(o, flag), CheckOr(o, flag), CheckAndFirst(o, flag), CheckNot(o, flag)
				out.Encode(map[string]any{"fn": "Check", "k": k, "nil": o == nil, "flag": flag, "qty": qtyOf(o),
					"and": a, "or": b, "and_first": c, "not": d, "i": i})
			}
		}
	}
}

func nameOf(o *Order) string {
	if o == nil {
		return ""
	}
	return o.Name
}

func qtyOf(o *Order) int {
	if o == nil {
		return 0
	}
	return o.Qty
}
