// pagefault places structs at the end of a readable page whose next page is not readable
// (mmap, then mprotect PROT_NONE), so a read spanning several captured fields faults although some
// of the fields themselves can be read. Before each call it writes one JSON line with the values of
// the readable fields and the captures that must fault: the ground truth of test_faults.cpp.
package main

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"syscall"
	"unsafe"
)

type Rec struct {
	A    int64
	Name string
	B    int64
	Tail string
	C    int64
}

type Outer struct {
	ID int64
	In *Rec
}

//go:noinline
func Inspect(r *Rec, o *Outer) int64 {
	return r.A + o.ID
}

// Line holds strings cut from one request line, as net/http's are: their bytes lie together, so
// the probe reads them in one span (plan/captures.cpp: place_strings) unless that span faults or is
// too wide.
type Line struct {
	Method string
	URI    string
	Proto  string
	Path   string
}

//go:noinline
func Request(l *Line) int {
	return len(l.Method) + len(l.Path)
}

type truth struct {
	Values map[string]any `json:"values"`
	Faults []string       `json:"faults"`
}

func main() {
	out := flag.String("truth", "", "write what each call passes here (JSON lines)")
	rounds := flag.Int("rounds", 1, "how many times to run the calls")
	lines := flag.Bool("lines", false, "call Request with strings placed around the page's end instead of Inspect")
	flag.Parse()
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		panic(err)
	}
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	f, err := os.Create(*out)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	if *lines {
		requests(enc, mem, page, *rounds)
		return
	}
	// The struct at `at` bytes before the end of the readable page: the fields wholly before the
	// end are written and must be read; the others must be marked as faults, each capture alone.
	fields := []struct {
		name       string
		start, end int
	}{{"r.A", 0, 8}, {"r.Name", 8, 24}, {"r.B", 24, 32}, {"r.Tail", 32, 48}, {"r.C", 48, 56}}
	sum := int64(0)
	for round := 0; round < *rounds; round++ {
		for i, at := range []int{page, 64, 56, 48, 32, 24, 16, 8} {
			base := page - at
			r := (*Rec)(unsafe.Pointer(&mem[base]))
			values := map[string]any{}
			var faults []string
			n := int64(round*100 + i)
			for _, fl := range fields {
				if base+fl.end > page {
					faults = append(faults, fl.name)
					continue
				}
				switch fl.name {
				case "r.A":
					r.A = n + 1
					values[fl.name] = r.A
				case "r.Name":
					r.Name = "name-" + string(rune('a'+i))
					values[fl.name] = r.Name
				case "r.B":
					r.B = -n
					values[fl.name] = r.B
				case "r.Tail":
					r.Tail = "tail"
					values[fl.name] = r.Tail
				case "r.C":
					r.C = n * 3
					values[fl.name] = r.C
				}
			}
			// o is ordinary memory; o.In is the same struct, read through a pointer.
			o := &Outer{ID: n + 7, In: r}
			values["o.ID"] = o.ID
			for _, fl := range fields {
				key := "o.In." + fl.name[2:]
				if v, ok := values[fl.name]; ok {
					values[key] = v
				} else {
					faults = append(faults, key)
				}
			}
			if faults == nil {
				faults = []string{}
			}
			if err := enc.Encode(truth{values, faults}); err != nil {
				panic(err)
			}
			sum += Inspect(r, o)
		}
	}
	if sum == 42 {
		os.Exit(3)
	}
}

// requests calls Request with a request line's strings placed in the mapped page: together and
// readable (one span), running past the page's end (the span faults: only Proto's bytes are
// there), one pointing into the unreadable page, one far away (a span too wide for the area), and
// one empty.
func requests(enc *json.Encoder, mem []byte, page, rounds int) {
	const text = "GET /a/b?x=1 HTTP/1.1"
	at := func(base, from, to int) string { // the bytes text[from:to] placed at base
		return stringAt(&mem[base+from], to-from)
	}
	far := string([]byte("/far/away"))
	total := 0
	for round := 0; round < rounds; round++ {
		for i, base := range []int{page - 512, page - 16, page - 1024, page - 2048, page - 256} {
			// Write what lies before the page's end; past it nothing can be written (or read).
			for j := 0; j < len(text) && base+j < page; j++ {
				mem[base+j] = text[j]
			}
			l := &Line{at(base, 0, 3), at(base, 4, 12), at(base, 13, 21), at(base, 4, 8)}
			switch i {
			case 2:
				l.Path = stringAt(&mem[page+8], 4) // unreadable
			case 3:
				l.Path = far
			case 4:
				l.Method = ""
			}
			values := map[string]any{}
			var faults []string
			for _, s := range []struct {
				name string
				v    string
			}{{"l.Method", l.Method}, {"l.URI", l.URI}, {"l.Proto", l.Proto}, {"l.Path", l.Path}} {
				start := (*reflect.StringHeader)(unsafe.Pointer(&s.v)).Data
				end := uintptr(unsafe.Pointer(&mem[page]))
				if len(s.v) > 0 && start >= uintptr(unsafe.Pointer(&mem[0])) && start+uintptr(len(s.v)) > end {
					faults = append(faults, s.name)
					continue
				}
				values[s.name] = string([]byte(s.v))
			}
			if faults == nil {
				faults = []string{}
			}
			if err := enc.Encode(truth{values, faults}); err != nil {
				panic(err)
			}
			total += Request(l)
		}
	}
	if total == 42 {
		os.Exit(3)
	}
}

// stringAt is the string of the n bytes at p, without reading them (Go 1.19 has no unsafe.String).
func stringAt(p *byte, n int) string {
	var s string
	h := (*reflect.StringHeader)(unsafe.Pointer(&s))
	h.Data = uintptr(unsafe.Pointer(p))
	h.Len = n
	return s
}
