// dyntypes passes values of many types as interfaces and errors, so the tracer has to name each
// dynamic type from the binary's own type descriptors. Before each call main writes one JSON line
// (the ground truth) with each value's type as the program itself prints it (%T) and as reflect
// spells it with package paths in full, plus the package name each path stands for.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"
)

type Point struct{ X, Y int }

// Celsius is converted to an interface by value only.
type Celsius float64

type Box[T any] struct{ V T }

type codeError struct{ Code int }

func (e codeError) Error() string { return fmt.Sprintf("code %d", e.Code) }

//go:noinline
func Show(v any, err error) error {
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	return nil
}

var packages = map[string]string{}

// qualified spells t as DWARF and weave do: a defined type by its package path and name, pointers,
// slices, arrays, channels and maps from their elements, other unnamed types as reflect prints them.
func qualified(t reflect.Type) string {
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name()
		}
		s := t.String()
		packages[t.PkgPath()] = s[:strings.Index(s, ".")]
		return t.PkgPath() + "." + t.Name()
	}
	switch t.Kind() {
	case reflect.Ptr:
		return "*" + qualified(t.Elem())
	case reflect.Slice:
		return "[]" + qualified(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), qualified(t.Elem()))
	case reflect.Map:
		return "map[" + qualified(t.Key()) + "]" + qualified(t.Elem())
	case reflect.Chan:
		switch t.ChanDir() {
		case reflect.RecvDir:
			return "<-chan " + qualified(t.Elem())
		case reflect.SendDir:
			return "chan<- " + qualified(t.Elem())
		}
		return "chan " + qualified(t.Elem())
	}
	return t.String()
}

func describe(v any) any {
	if v == nil {
		return nil
	}
	return map[string]any{"T": fmt.Sprintf("%T", v), "type": qualified(reflect.TypeOf(v))}
}

func main() {
	truthPath := flag.String("truth", "", "file to write the ground truth to, one JSON line per call")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	truth := json.NewEncoder(f)
	truth.SetEscapeHTML(false)

	u, _ := url.Parse("https://example.org/a?b=c")
	values := []any{
		42, int8(-3), uint16(7), true, 2.5, "text", Celsius(21.5), time.Duration(1500),
		Point{1, 2}, &Point{3, 4}, []Point{{5, 6}}, [2]string{"a", "b"}, map[string]*Point{"p": {7, 8}},
		make(chan int), make(<-chan string), make(chan<- []byte), func(int) string { return "" },
		struct{ A int }{1}, &struct{ U *url.URL }{u}, *u, u, Box[int]{9}, &Box[string]{"s"},
		[]map[string][]*url.URL{}, errors.New("plain"),
	}
	errs := []error{
		errors.New("boom"), &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}, codeError{7},
		&url.Error{Op: "Get", URL: "u", Err: errors.New("e")}, nil,
	}
	for i, v := range values {
		e := errs[i%len(errs)]
		var want any
		if e != nil {
			want = describe(fmt.Errorf("show: %w", e))
		}
		args := map[string]any{"v": describe(v), "err": describe(e)}
		if err := truth.Encode(map[string]any{"args": args, "result": want}); err != nil {
			panic(err)
		}
		Show(v, e)
	}
	if err := truth.Encode(map[string]any{"packages": packages}); err != nil {
		panic(err)
	}
}
