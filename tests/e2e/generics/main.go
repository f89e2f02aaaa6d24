// generics is the Go program the generics end-to-end tests trace. Go compiles each generic
// function once per shape (main.Sum[go.shape.int_0]) and passes the shape instance a hidden
// dictionary pointer ahead of everything else, the receiver included; closures of generic
// functions get it from their closure instead. Every traced function is //go:noinline and writes
// one JSON line of what it was passed (its own view of its arguments, the ground truth) to the file
// named by -truth, under the shape function's name and the instantiation the call site wrote.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"runtime"
)

type MyInt int

type Label string

type Set[T comparable] struct {
	items map[T]struct{}
	name  string
}

type Pair[K comparable, V comparable] struct {
	Key K
	Val V
}

var truth *json.Encoder

func record(function, instantiation string, args map[string]any) {
	if err := truth.Encode(map[string]any{"function": function, "instantiation": instantiation, "args": args}); err != nil {
		panic(err)
	}
}

// pairs: a map's pairs as the tracer shows them (tests compare them as sets).
func pairs[K comparable, V any](m map[K]V) []map[string]any {
	items := []map[string]any{}
	for k, v := range m {
		items = append(items, map[string]any{"key": k, "value": v})
	}
	return items
}

func slice[T any](xs []T) map[string]any {
	return map[string]any{"len": len(xs), "cap": cap(xs), "items": xs}
}

// Sum: a slice of T and a T. Sum[int] and Sum[MyInt] share one shape body; only the dictionary
// tells them apart.
//
//go:noinline
func Sum[T ~int | ~int64](xs []T, scale T) T {
	var total T
	for _, x := range xs {
		total += x * scale
	}
	inst := "main.Sum[int]"
	if _, ok := any(scale).(MyInt); ok {
		inst = "main.Sum[main.MyInt]"
	}
	record("main.Sum[go.shape.int_0]", inst, map[string]any{"xs": slice(xs), "scale": scale})
	return total
}

// Join: strings of a type parameter.
//
//go:noinline
func Join[S ~string](a, b S, n int) S {
	record("main.Join[go.shape.string_0]", "main.Join[main.Label]", map[string]any{"a": string(a), "b": string(b), "n": n})
	return a + b
}

// Count: a map and its key, two type parameters.
//
//go:noinline
func Count[K comparable, V any](m map[K]V, key K) int {
	record("main.Count[go.shape.string_0,go.shape.int_1]", "main.Count[string,int]", map[string]any{"m": map[string]any{"len": len(m), "items": pairs(m)}, "key": any(key)})
	return len(m)
}

// Drain: a channel of T and an int after it.
//
//go:noinline
func Drain[T any](ch chan T, extra int) int {
	record("main.Drain[go.shape.int_0]", "main.Drain[int]", map[string]any{"ch": map[string]any{"len": len(ch), "cap": cap(ch)}, "extra": extra})
	return len(ch) + extra
}

// Apply: a func of T, then a T.
//
//go:noinline
func Apply[T any](f func(T) T, x T) T {
	record("main.Apply[go.shape.int_0]", "main.Apply[int]", map[string]any{
		"f": runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name(), "x": x})
	return f(x)
}

// Describe: an interface, then a T that is itself an interface type (the shape of error is an
// interface shape).
//
//go:noinline
func Describe[T any](v any, t T, n int) int {
	record("main.Describe[go.shape.interface { Error() string }_0]", "main.Describe[error]", map[string]any{
		"v": map[string]any{"type": "string", "value": v}, "n": n,
		"t": map[string]any{"type": fmt.Sprintf("%T", t), "error": any(t).(error).Error()}})
	return n
}

// Add: a pointer receiver on a generic type; the dictionary comes before the receiver.
//
//go:noinline
func (s *Set[T]) Add(v T, tag string) int {
	s.items[v] = struct{}{}
	record("main.(*Set[go.shape.int_0]).Add", "main.(*Set[int]).Add", map[string]any{
		"s.name": s.name, "v": v, "tag": tag})
	return len(s.items)
}

// Size: a value receiver (a map and a string, four words) on a generic type.
//
//go:noinline
func (s Set[T]) Size(tag string, k int) int {
	record("main.Set[go.shape.string_0].Size", "main.Set[string].Size", map[string]any{
		"s.name": s.name, "tag": tag, "k": k})
	return len(s.items) + k
}

// Swap: a value receiver with two type parameters; returns a Pair of the other order.
//
//go:noinline
func (p Pair[K, V]) Swap(n int) Pair[V, K] {
	record("main.Pair[go.shape.string_0,go.shape.int_1].Swap", "main.Pair[string,int].Swap", map[string]any{
		"p.Key": p.Key, "p.Val": p.Val, "n": n})
	return Pair[V, K]{p.Val, p.Key}
}

// Counter returns a closure of a generic function: the closure finds its dictionary through its
// context register, so it has no hidden parameter.
//
//go:noinline
func Counter[T ~int](start T) func(T, string) T {
	total := start
	return func(d T, why string) T {
		total += d
		record("main.Counter[go.shape.int_0].func1", "", // no dictionary argument: nothing names it
			map[string]any{"d": d, "why": why})
		return total
	}
}

// count is called through a variable the compiler cannot see through, so its closure stays out of line.
var count func(int, string) int

func main() {
	truthPath := flag.String("truth", "", "file to write what each call passes, one JSON line per call")
	rounds := flag.Int("rounds", 3, "how many times to call each function")
	flag.Parse()
	out := os.Stdout
	if *truthPath != "" {
		f, err := os.Create(*truthPath)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		out = f
	}
	truth = json.NewEncoder(out)
	truth.SetEscapeHTML(false)

	sum := 0
	ints := &Set[int]{items: map[int]struct{}{}, name: "ints"}
	strs := Set[string]{items: map[string]struct{}{"x": {}}, name: "strs"}
	count = Counter(100)
	for r := 0; r < *rounds; r++ {
		xs := make([]int, 3+r, 8)
		for i := range xs {
			xs[i] = i*10 + r
		}
		sum += Sum(xs, 2+r)
		sum += int(Sum([]MyInt{MyInt(-r), 7}, MyInt(-3)))
		sum += len(Join(Label(fmt.Sprintf("left-%d", r)), Label("right"), 40+r))
		sum += Count(map[string]int{"a": 1, "b": r}, fmt.Sprintf("key%d", r))
		ch := make(chan int, 5+r)
		for i := 0; i <= r; i++ {
			ch <- i
		}
		sum += Drain(ch, -r)
		sum += Apply(func(x int) int { return x * 3 }, 11+r)
		sum += Describe[error](fmt.Sprintf("v%d", r), errors.New("e"), 900+r)
		sum += ints.Add(r*r+5, fmt.Sprintf("tag-%d", r))
		sum += strs.Size(fmt.Sprintf("size-%d", r), -7*r)
		sum += Pair[string, int]{fmt.Sprintf("k%d", r), 1000 + r}.Swap(r + 1).Key
		sum += count(r+1, fmt.Sprintf("why-%d", r))
	}
	fmt.Fprintln(os.Stderr, "generics done, sum", sum)
}
