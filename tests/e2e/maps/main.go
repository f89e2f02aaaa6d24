// The maps fixture: map parameters whose pairs the tracer shows (tests/e2e/test_maps.cpp). Each
// call first writes down, as JSON lines in -truth, every pair of every map it passes; the tracer's
// pairs must be among them, with the same values, each once.
//
// The maps: a small one (one bucket, or one swiss group), one of more than 8 pairs with a few
// deleted (several buckets or groups, empty and deleted slots among full ones), one caught in the
// middle of growing on the bucket layout (pairs both in old buckets and in new ones), an empty one and a nil one.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"
)

//go:noinline
func Maps(small map[string]int, big map[int64]string, grown map[int64]int, empty map[string]int, none map[int64]string) int {
	return len(small) + len(big) + len(grown) + len(empty) + len(none)
}

// Refused's map has values weave does not copy (slices): capturing it is refused, naming the type;
// inside a struct it shows its length alone.
//
//go:noinline
func Refused(m map[string][]int, h Holder) int { return len(m) + len(h.M) }

type Holder struct {
	N int
	M map[string][]int
}

// Written takes a map that looks written to at the moment: its writing flag is set for the call
// (hashWriting in hmap.flags, Map.writing in a swiss map), as another goroutine writing to it would
// leave it. The tracer must not show its pairs: the capture is marked instead.
//
//go:noinline
func Written(m map[string]int) int { return len(m) }

// The head of a swiss map, internal/runtime/maps.Map (Go 1.24+).
type swissMap struct {
	used        uint64
	seed        uintptr
	dirPtr      unsafe.Pointer
	dirLen      int
	globalDepth uint8
	globalShift uint8
	writing     uint8
}

// setWriting sets or clears the map's writing flag, as mapassign does around a write.
func setWriting(m map[string]int, on bool) {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&m))
	if layout() == "hmap" {
		h := (*hmap)(p)
		if on {
			h.flags |= 4 // hashWriting
		} else {
			h.flags &^= 4
		}
		return
	}
	s := (*swissMap)(p)
	if on {
		s.writing = 1
	} else {
		s.writing = 0
	}
}

// Go 1.24 replaced the bucket layout (runtime.hmap) with swiss tables.
func layout() string {
	v := strings.TrimPrefix(runtime.Version(), "go1.")
	if i := strings.IndexAny(v, ".rc"); i >= 0 {
		v = v[:i]
	}
	if minor, err := strconv.Atoi(v); err == nil && minor < 24 {
		return "hmap"
	}
	return "swiss"
}

// The head of runtime.hmap in Go 1.19-1.23 (runtime/map.go): growing means oldbuckets is set.
type hmap struct {
	count      int
	flags      uint8
	B          uint8
	noverflow  uint16
	hash0      uint32
	buckets    unsafe.Pointer
	oldbuckets unsafe.Pointer
}

func growing(m map[int64]int) bool {
	if layout() != "hmap" {
		return false
	}
	return (*(**hmap)(unsafe.Pointer(&m))).oldbuckets != nil
}

func pairs[K comparable, V any](m map[K]V) [][2]any {
	out := [][2]any{}
	for k, v := range m {
		out = append(out, [2]any{k, v})
	}
	return out
}

func main() {
	truthPath := flag.String("truth", "", "write what each call passed here, as JSON lines")
	rounds := flag.Int("rounds", 2, "calls to make")
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
	truth := json.NewEncoder(out)
	truth.SetEscapeHTML(false)
	sum := 0
	for r := 0; r < *rounds; r++ {
		small := map[string]int{"a": 1, "bb": -2, fmt.Sprintf("r%d", r): r}
		big := map[int64]string{}
		for i := int64(0); i < 16; i++ {
			big[i*1000-3] = fmt.Sprintf("v%d-%d", i, r)
		}
		for i := int64(0); i < 16; i += 5 { // 4 deleted: 12 left
			delete(big, i*1000-3)
		}
		// On the bucket layout, inserts until a grow is under way after the insert that started
		// it, which evacuates at most 2 old buckets: the first such grow is from 4 to 8 buckets
		// (27 pairs with Go's load factor of 6.5, 25 with Go 1.21's 6). 53 pairs on swiss tables.
		grown := map[int64]int{}
		for i := 0; i < 53 || (layout() == "hmap" && !growing(grown) && i < 1000); i++ {
			grown[int64(i*7+r)] = -i
			if growing(grown) {
				break
			}
		}
		empty := map[string]int{}
		var none map[int64]string
		if err := truth.Encode(map[string]any{
			"layout":  layout(),
			"growing": growing(grown),
			"args": map[string]any{
				"small": map[string]any{"len": len(small), "pairs": pairs(small)},
				"big":   map[string]any{"len": len(big), "pairs": pairs(big)},
				"grown": map[string]any{"len": len(grown), "pairs": pairs(grown)},
				"empty": map[string]any{"len": len(empty), "pairs": pairs(empty)},
				"none":  map[string]any{"len": len(none), "pairs": pairs(none)},
			},
		}); err != nil {
			panic(err)
		}
		sum += Maps(small, big, grown, empty, none)
	}
	refused := map[string][]int{"x": {1}, "y": nil}
	if err := truth.Encode(map[string]any{"function": "main.Refused", "len": len(refused)}); err != nil {
		panic(err)
	}
	sum += Refused(refused, Holder{N: 7, M: refused})
	written := map[string]int{"w": 1}
	setWriting(written, true)
	sum += Written(written)
	setWriting(written, false)
	written["w2"] = 2 // a real write after it: the flag was put back as found
	fmt.Fprintln(os.Stderr, "maps done, sum", sum)
}
