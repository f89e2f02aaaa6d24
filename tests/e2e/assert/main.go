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
	"reflect"
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

// Plain is an error held by value (the data word points to a copy).
type Plain struct {
	Code int
	Text string
	Ok   bool
}

func (p Plain) Error() string { return p.Text }

// Listed and Lonely are never converted to a non-empty interface, so no itab names them: Listed
// is given to contents_types, Lonely is not (its contents are not known to the tracer).
type Listed struct {
	Name  string
	Count int
}

type Lonely struct{ N int }

// Fail returns an error of another shape each call: a custom error struct behind a pointer, one
// wrapped with %w, a *fs.PathError, nil, a struct by value, and a nil *QuotaError in a non-nil
// error.
//
//go:noinline
func Fail(k int) error {
	switch k % 6 {
	case 0:
		return &QuotaError{User: fmt.Sprintf("bob%d", k), Limit: k}
	case 1:
		return fmt.Errorf("open x%d: %w", k, &QuotaError{User: "w", Limit: -k})
	case 2:
		return &fs.PathError{Op: "stat", Path: fmt.Sprintf("/p/%d", k), Err: fs.ErrNotExist}
	case 3:
		return nil
	case 4:
		return Plain{Code: 400 + k, Text: fmt.Sprintf("plain %d", k), Ok: k%2 == 0}
	}
	var q *QuotaError
	return q
}

//go:noinline
func Hold(v any, k int) int { return k }

// fullName is the type's name as the binary spells it: "*io/fs.PathError", "main.Point".
func fullName(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		return "*" + fullName(t.Elem())
	}
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// contents records a value as the program itself sees it: its %#v and %+v, its type's full name,
// and by reflection (unexported fields too) each field of the value, or of what a pointer points
// to: a string, integer or bool as it is, an interface field as its dynamic type's name.
func contents(v any) map[string]any {
	rec := map[string]any{"nil": v == nil, "gov": fmt.Sprintf("%#v", v), "plusv": fmt.Sprintf("%+v", v)}
	if v == nil {
		return rec
	}
	rv := reflect.ValueOf(v)
	rec["type"] = fullName(rv.Type())
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			rec["nilptr"] = true
			return rec
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.String:
		rec["value"] = rv.String()
	case reflect.Struct:
		fields := map[string]any{}
		for i := 0; i < rv.NumField(); i++ {
			f := rv.Field(i)
			switch f.Kind() {
			case reflect.String:
				fields[rv.Type().Field(i).Name] = f.String()
			case reflect.Int:
				fields[rv.Type().Field(i).Name] = f.Int()
			case reflect.Bool:
				fields[rv.Type().Field(i).Name] = f.Bool()
			case reflect.Interface:
				if f.IsNil() {
					fields[rv.Type().Field(i).Name] = nil
				} else {
					fields[rv.Type().Field(i).Name] = map[string]any{"type": fullName(f.Elem().Type())}
				}
			}
		}
		rec["fields"] = fields
	}
	return rec
}

// runContents makes the calls contents: true is tested with, and records each value.
func runContents(out *json.Encoder, rounds int) {
	k := 0
	for r := 0; r < rounds; r++ {
		for i := 0; i < 6; i++ {
			k++
			err := Fail(k)
			rec := contents(err)
			rec["fn"], rec["k"] = "Fail", k
			if err != nil && reflect.ValueOf(err).Kind() == reflect.Pointer && reflect.ValueOf(err).IsNil() {
				rec["nil"] = false // a nil *QuotaError in a non-nil error
			}
			out.Encode(rec)
			var v any
			switch k % 6 {
			case 0:
				v = Point{X: k, Y: -k}
			case 1:
				v = fmt.Sprintf("any%d", k)
			case 2:
				v = &Box{W: k, H: 2 * k, Label: fmt.Sprintf("b%d", k)}
			case 3:
				v = Listed{Name: fmt.Sprintf("l%d", k), Count: k * 3}
			case 4:
				v = Lonely{N: k}
			}
			Hold(v, k)
			rec = contents(v)
			rec["fn"], rec["k"] = "Hold", k
			out.Encode(rec)
		}
	}
}

// Inventory holds a map and a slice as fields, for contents shown one level into a struct (by
// value, and behind a pointer).
type Inventory struct {
	Name   string
	Tags   map[string]int
	Counts []int
}

//go:noinline
func Stash(v any, k int) int { return k }

//go:noinline
func Shelve(v any, k int) int { return k }

// stashed is what Stash gets, call by call: maps and slices behind an any, short enough to be
// shown whole with slice_max: 4, and longer ones that the bound cuts; empty and nil ones.
func stashed(k int) any {
	switch k % 10 {
	case 0:
		return map[string]string{"b": fmt.Sprint("v", k), "a": "x", "c": fmt.Sprint(k * 7)}
	case 1:
		m := map[string]string{}
		for i := 0; i < 11; i++ {
			m[fmt.Sprint("key", i)] = fmt.Sprint(k + i)
		}
		return m
	case 2:
		return map[string]string{}
	case 3:
		return map[string]string(nil)
	case 4:
		return []int{k, -k, 3 * k}
	case 5:
		xs := make([]int, 9)
		for i := range xs {
			xs[i] = k*100 + i
		}
		return xs
	case 6:
		return []string{fmt.Sprint("s", k), "", "z"}
	case 7:
		return []int(nil)
	case 8:
		return map[int]Point{k: {X: k, Y: 1}, -k: {X: 2, Y: -k}, 0: {}}
	}
	m := map[int]Point{}
	for i := 0; i < 6; i++ {
		m[i*k] = Point{X: i, Y: k}
	}
	return m
}

// shelved is what Shelve gets: a struct with a map and a slice field, by value and by pointer.
func shelved(k int) any {
	inv := Inventory{Name: fmt.Sprint("inv", k), Counts: []int{k, k + 1}}
	if k%3 != 2 {
		inv.Tags = map[string]int{"red": k, "blue": -k}
	}
	if k%3 == 1 {
		for i := 0; i < 5; i++ {
			inv.Tags[fmt.Sprint("t", i)] = i
		}
		inv.Counts = append(inv.Counts, 7, 8, 9)
	}
	if k%2 == 0 {
		return &inv
	}
	return inv
}

// runMaps makes the calls of the maps and slices contents test: each value's %#v (Go's own, its
// map keys sorted), its type's full name, and its pairs or elements as JSON (for a value the
// tracer shows cut: every pair it shows must be among them).
func runMaps(out *json.Encoder, rounds, only int) {
	k := 0
	for r := 0; r < rounds; r++ {
		for i := 0; i < 10; i++ {
			k++
			v := stashed(k)
			if only >= 0 { // one kind of value every call (README's cost figures)
				v = stashed(k - k%10 + only)
			}
			Stash(v, k)
			rec := contents(v)
			rec["fn"], rec["k"] = "Stash", k
			rec["all"] = reflectAll(reflect.ValueOf(v))
			out.Encode(rec)
			w := shelved(k)
			Shelve(w, k)
			rec = contents(w)
			rec["fn"], rec["k"] = "Shelve", k
			rv := reflect.ValueOf(w)
			if rv.Kind() == reflect.Pointer {
				rv = rv.Elem()
			}
			rec["all"] = map[string]any{"Tags": reflectAll(rv.Field(1)), "Counts": reflectAll(rv.Field(2))}
			out.Encode(rec)
		}
	}
}

// reflectAll is a map's pairs as [key, value] lists, or a slice's elements: each key and value by
// its own %#v.
func reflectAll(v reflect.Value) any {
	var all []any
	switch v.Kind() {
	case reflect.Map:
		for _, key := range v.MapKeys() {
			all = append(all, []string{fmt.Sprintf("%#v", key.Interface()), fmt.Sprintf("%#v", v.MapIndex(key).Interface())})
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			all = append(all, fmt.Sprintf("%#v", v.Index(i).Interface()))
		}
	}
	return all
}

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
	withContents := flag.Bool("contents", false, "make the calls of contents: true instead")
	withMaps := flag.Bool("maps", false, "make the calls of contents: true with maps and slices instead")
	only := flag.Int("case", -1, "with -maps: Stash gets the value of this case (0-9) every call")
	flag.Parse()
	out := json.NewEncoder(os.Stdout)
	if *withMaps {
		runMaps(out, *rounds, *only)
		return
	}
	if *withContents {
		runContents(out, *rounds)
		return
	}
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
