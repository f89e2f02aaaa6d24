// The type-assertion fixture: interfaces and errors whose dynamic type varies call by call, for
// captures such as err.(*io/fs.PathError).Path and s.(main.Point).X. Open fails with a
// *fs.PathError (a file that is not there), a custom error, or an error of errors.New, or succeeds;
// Measure and Keep take an interface holding a struct by value (stored behind the data word), a
// pointer to a struct (the data word itself), another type, or nil. The program prints, one JSON
// line per call, the dynamic type (%T) and the fields of what it passed and got back, for the
// tracer's output to be compared with.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

type Shape interface{ Area() int }

// Point is stored in an interface by value: the data word points to a copy.
type Point struct {
	X, Y int
}

func (p Point) Area() int { return p.X * p.Y }

// Box is stored as a pointer: the data word is the pointer.
type Box struct {
	W, H  int
	Label string
}

func (b *Box) Area() int { return b.W * b.H }

// Circle is a third shape, for the wrong-type cases.
type Circle struct{ R int }

func (c Circle) Area() int { return 3 * c.R * c.R }

// QuotaError is a custom error struct.
type QuotaError struct {
	User  string
	Limit int
}

func (e *QuotaError) Error() string { return fmt.Sprintf("quota of %s: %d", e.User, e.Limit) }

//go:noinline
func Open(name string, k int) (n int, err error) {
	switch k % 4 {
	case 0:
		f, err := os.Open(name) // not there: a *fs.PathError
		if err == nil {
			f.Close()
		}
		return -1, err
	case 1:
		return 0, &QuotaError{User: fmt.Sprintf("u%d", k), Limit: 100 + k}
	case 2:
		return 0, errors.New("plain failure")
	}
	return k, nil
}

//go:noinline
func Measure(s Shape, k int) int {
	if s == nil {
		return 0
	}
	return s.Area() + k
}

//go:noinline
func Keep(v any, k int) int { return k }

func record(out *json.Encoder, fn string, k int, v any) {
	rec := map[string]any{"fn": fn, "k": k, "type": fmt.Sprintf("%T", v), "nil": v == nil}
	switch x := v.(type) {
	case Point:
		rec["x"], rec["y"] = x.X, x.Y
	case *Box:
		rec["w"], rec["h"], rec["label"] = x.W, x.H, x.Label
	case Circle:
		rec["r"] = x.R
	case *fs.PathError:
		rec["op"], rec["path"] = x.Op, x.Path
	case *QuotaError:
		rec["user"], rec["limit"] = x.User, x.Limit
	}
	out.Encode(rec)
}

func main() {
	rounds := flag.Int("rounds", 2, "rounds over the cases")
	dir := flag.String("dir", os.TempDir(), "where the files Open looks for are (not)")
	flag.Parse()
	out := json.NewEncoder(os.Stdout)
	k := 0
	for r := 0; r < *rounds; r++ {
		for i := 0; i < 8; i++ {
			k++
			_, err := Open(filepath.Join(*dir, fmt.Sprintf("missing-%d.txt", k)), k)
			var e any
			if err != nil {
				e = err
			}
			record(out, "Open", k, e)
			var s Shape
			switch k % 4 {
			case 0:
				s = Point{X: k, Y: -2 * k}
			case 1:
				s = &Box{W: k + 1, H: 3, Label: fmt.Sprintf("box-%d", k)}
			case 2:
				s = Circle{R: k}
			}
			Measure(s, k)
			var si any
			if s != nil {
				si = s
			}
			record(out, "Measure", k, si)
			var v any
			switch k % 3 {
			case 0:
				v = Point{X: 7 * k, Y: k}
			case 1:
				v = &Box{W: k, H: k + 2, Label: "keep"}
			case 2:
				v = fmt.Sprintf("str%d", k)
			}
			Keep(v, k)
			record(out, "Keep", k, v)
		}
	}
}
