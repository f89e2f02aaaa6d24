// pagefault places structs at the end of a readable page whose next page is not readable
// (mmap, then mprotect PROT_NONE), so a read spanning several captured fields faults although some
// of the fields themselves can be read. Before each call it writes one JSON line with the values of
// the readable fields and the captures that must fault: the ground truth of test_faults.cpp.
package main

import (
	"encoding/json"
	"flag"
	"os"
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

type truth struct {
	Values map[string]any `json:"values"`
	Faults []string       `json:"faults"`
}

func main() {
	out := flag.String("truth", "", "write what each call passes here (JSON lines)")
	rounds := flag.Int("rounds", 1, "how many times to run the calls")
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
