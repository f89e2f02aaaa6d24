// Command gen writes a Go main package of //go:noinline functions with random signatures, for the
// random-signature oracle (tests/oracle/run.sh). Every generated function writes what it was passed
// (at entry) and what it returns (just before each return) as one JSON line to the file named by
// the program's first argument, in the tracer's own JSON value conventions (README.md, "What can be
// captured"; runtime/output.cpp), so the test compares the tracer's events with those lines value
// for value. The same seed, count, arch and omit list always give the same bytes.
//
//	gen -seed 1 -count 2000 -arch amd64 -o DIR       # DIR/main.go, go.mod, meta.json, chunks.txt, lines.txt
//
// Standard library only; builds with Go 1.19 and later.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Options of the tracer spec the test builds with; values are generated to fit, so every value the
// tracer shows is complete (a truncated one is a mismatch).
const (
	stringMax = 64
	sliceMax  = 8
	maxStr    = 40 // longest generated string
	maxMany   = 6  // longest generated "many" slice or array
)

type kind int

const (
	kBasic  kind = iota // integers of every width, uintptr, bool
	kFloat              // float32, float64
	kString             // string
	kBytes              // []byte
	kPtr                // *T
	kSlice              // []T
	kArray              // [N]T
	kStruct             // named struct (pool S0001...) or an instantiated generic struct
	kMap                // map[K]V
	kChan               // chan T
	kFunc               // one of a few func types
	kAny                // any
	kError              // error
	kNamed              // a defined type with methods (T0001), over an underlying type
	kParam              // a type parameter, inside generic code only
)

type field struct {
	name string
	t    *typ
}

type typ struct {
	k      kind
	name   string // Go spelling
	elem   *typ   // ptr, slice, array, map value, chan, named: the underlying type
	key    *typ   // map key
	n      int    // array length
	fields []field
	signed bool
	bits   int // kBasic: 0 for bool; kFloat: 32 or 64
	level  int // kStruct: nesting depth (1 = no struct fields)
	param  int // kParam: index
	fn     int // kFunc: which of funcTypes
}

func (t *typ) size0() bool {
	switch t.k {
	case kArray:
		return t.n == 0 || t.elem.size0()
	case kStruct:
		for _, f := range t.fields {
			if !f.t.size0() {
				return false
			}
		}
		return true
	case kNamed:
		return t.elem.size0()
	}
	return false
}

func (t *typ) comparable() bool {
	switch t.k {
	case kSlice, kBytes, kMap, kFunc:
		return false
	case kArray, kNamed:
		return t.elem.comparable()
	case kStruct:
		for _, f := range t.fields {
			if !f.t.comparable() {
				return false
			}
		}
	}
	return true
}

func (t *typ) hasFloat() bool {
	switch t.k {
	case kFloat:
		return true
	case kArray, kNamed:
		return t.elem.hasFloat()
	case kStruct:
		for _, f := range t.fields {
			if f.t.hasFloat() {
				return true
			}
		}
	}
	return false
}

func (t *typ) hasParam() bool {
	switch t.k {
	case kParam:
		return true
	case kPtr, kSlice, kArray, kChan:
		return t.elem.hasParam()
	case kMap:
		return t.key.hasParam() || t.elem.hasParam()
	case kStruct:
		for _, f := range t.fields {
			if f.t.hasParam() {
				return true
			}
		}
	}
	return false
}

var funcTypes = []struct {
	sig   string
	impls []string
}{
	{"func(int) int", []string{"xfa0", "xfa1"}},
	{"func(string) error", []string{"xfb0"}},
	{"func()", []string{"xfc0", "xfc1"}},
}

type gen struct {
	r            *rand.Rand
	ptrBits      int
	omit         map[string]bool
	structs      []*typ // the pool of named structs
	zeroT        *typ   // struct{} named Z
	out          strings.Builder
	printers     map[string]int // type name -> printer index
	printerTypes []*typ
	dynTypes     map[string]*typ // concrete types printed from generic code (through xdyn)
	calls        []string        // statements of main, in order
	reuse        int             // percent of concrete signatures that repeat an earlier one
	stacks       bool            // entries also record their runtime.Callers stack (xendStack)
	sigPool      [2][]sig        // earlier concrete signatures: not variadic, variadic
	meta         []funcMeta
	nextID       int
}

type funcMeta struct {
	Key  string   `json:"key"`  // the function's name with generic type arguments removed
	Tags []string `json:"tags"` // categories, for counting mismatches and refusals by category
}

var basicNames = []string{"int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr", "bool"}

func (g *gen) basic(name string) *typ {
	t := &typ{k: kBasic, name: name}
	switch name {
	case "bool":
	case "int", "uint", "uintptr":
		t.bits = g.ptrBits
	default:
		b, _ := strconv.Atoi(strings.TrimLeft(name, "uint"))
		t.bits = b
	}
	t.signed = strings.HasPrefix(name, "int")
	return t
}

func (g *gen) pick(weights ...int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	n := g.r.Intn(total)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

func mk(k kind, name string, elem *typ) *typ { return &typ{k: k, name: name, elem: elem} }

// sliceOf: []uint8 is []byte, whichever way it is spelled.
func sliceOf(e *typ) *typ {
	if e.k == kBasic && e.name == "uint8" {
		return mk(kBytes, "[]uint8", e)
	}
	return mk(kSlice, "[]"+e.name, e)
}
func ptrOf(e *typ) *typ  { return mk(kPtr, "*"+e.name, e) }
func chanOf(e *typ) *typ { return mk(kChan, "chan "+e.name, e) }
func arrayOf(n int, e *typ) *typ {
	t := mk(kArray, fmt.Sprintf("[%d]%s", n, e.name), e)
	t.n = n
	return t
}
func mapOf(k, v *typ) *typ {
	t := mk(kMap, "map["+k.name+"]"+v.name, v)
	t.key = k
	return t
}

func (g *gen) arrayLen() int {
	switch g.pick(2, 3, 4) {
	case 0:
		return 0
	case 1:
		return 1
	}
	return 2 + g.r.Intn(maxMany-1)
}

// scalar is a type of no parts: what slices, arrays, maps and channels hold most often.
func (g *gen) scalar() *typ {
	switch g.pick(10, 2, 3) {
	case 0:
		return g.basic(basicNames[g.r.Intn(len(basicNames))])
	case 1:
		if g.r.Intn(2) == 0 {
			return &typ{k: kFloat, name: "float32", bits: 32}
		}
		return &typ{k: kFloat, name: "float64", bits: 64}
	}
	return mk(kString, "string", nil)
}

// randType picks a parameter, result or field type; depth bounds the nesting of composites, and
// maxLevel the structs that may appear (1-3 deep).
func (g *gen) randType(depth, maxLevel int) *typ {
	for {
		c := g.pick(30, 5, 10, 4, 6, 6, 6, 12, 3, 3, 3, 3, 4, 3)
		if depth <= 0 && c >= 4 && c <= 11 {
			continue
		}
		switch c {
		case 0:
			return g.basic(basicNames[g.r.Intn(len(basicNames))])
		case 1:
			return g.scalar()
		case 2:
			return mk(kString, "string", nil)
		case 3:
			return mk(kBytes, "[]byte", &typ{k: kBasic, name: "byte", bits: 8})
		case 4:
			if g.r.Intn(2) == 0 {
				return ptrOf(g.structOf(maxLevel))
			}
			return ptrOf(g.scalar())
		case 5:
			return sliceOf(g.randType(depth-1, min(maxLevel, 1)))
		case 6:
			return arrayOf(g.arrayLen(), g.randType(depth-1, min(maxLevel, 2)))
		case 7:
			return g.structOf(maxLevel)
		case 8:
			k := []string{"int", "string", "uint16", "int64"}[g.r.Intn(4)]
			var kt *typ
			if k == "string" {
				kt = mk(kString, "string", nil)
			} else {
				kt = g.basic(k)
			}
			return mapOf(kt, g.randType(depth-1, 1))
		case 9:
			return chanOf(g.scalar())
		case 10:
			i := g.r.Intn(len(funcTypes))
			return &typ{k: kFunc, name: funcTypes[i].sig, fn: i}
		case 11:
			return mk(kAny, "any", nil)
		case 12:
			return mk(kError, "error", nil)
		case 13: // zero size: struct{}, [0]T, or a struct of zero-size fields
			switch g.r.Intn(3) {
			case 0:
				return g.zeroT
			case 1:
				return arrayOf(0, g.scalar())
			}
			for _, s := range g.structs {
				if s.size0() && len(s.fields) > 0 {
					return s
				}
			}
			return g.zeroT
		}
	}
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func (g *gen) structOf(maxLevel int) *typ {
	if maxLevel < 1 {
		maxLevel = 1
	}
	for {
		s := g.structs[g.r.Intn(len(g.structs))]
		if s.level <= maxLevel {
			return s
		}
	}
}

// makeStructs fills the pool: levels 1-3, with empty structs, zero-size fields and mixed int and
// float fields among them.
func (g *gen) makeStructs(n int) {
	g.zeroT = &typ{k: kStruct, name: "Z", level: 1}
	fmt.Fprintf(&g.out, "type Z struct{}\n\n")
	g.structs = append(g.structs, g.zeroT)
	for i := 1; i <= n; i++ {
		level := 1 + i%3
		if i <= 3 {
			level = 1
		}
		t := &typ{k: kStruct, name: fmt.Sprintf("S%04d", i), level: level}
		nf := g.r.Intn(7)
		if i == 1 { // a struct of zero-size fields, itself of zero size
			t.fields = []field{{"A", g.zeroT}, {"B", arrayOf(0, g.basic("int64"))}}
			nf = 0
		}
		hasNested := false
		for j := 0; j < nf; j++ {
			var ft *typ
			switch g.pick(8, 4, 2, 2, 1, 1, 1, 1) {
			case 0:
				ft = g.basic(basicNames[g.r.Intn(len(basicNames))])
			case 1:
				if g.r.Intn(2) == 0 {
					ft = &typ{k: kFloat, name: "float32", bits: 32}
				} else {
					ft = &typ{k: kFloat, name: "float64", bits: 64}
				}
			case 2:
				ft = mk(kString, "string", nil)
			case 3:
				if level > 1 {
					ft = g.structOf(level - 1)
					hasNested = true
				} else {
					ft = g.scalar()
				}
			case 4:
				ft = arrayOf(g.arrayLen()%4, g.scalar())
			case 5:
				if g.r.Intn(2) == 0 {
					ft = g.zeroT
				} else {
					ft = arrayOf(0, g.scalar())
				}
			case 6:
				ft = sliceOf(g.scalar())
			case 7:
				ft = ptrOf(g.scalar())
			}
			t.fields = append(t.fields, field{fmt.Sprintf("F%d", j), ft})
		}
		if level > 1 && !hasNested { // a level is as deep as it says
			t.fields = append(t.fields, field{fmt.Sprintf("F%d", len(t.fields)), g.structOf(level - 1)})
		}
		fmt.Fprintf(&g.out, "type %s struct {\n", t.name)
		for _, f := range t.fields {
			fmt.Fprintf(&g.out, "\t%s %s\n", f.name, f.t.name)
		}
		fmt.Fprintf(&g.out, "}\n\n")
		g.structs = append(g.structs, t)
	}
}

// ---- values ----

func (g *gen) intLit(t *typ) string {
	if t.bits == 0 {
		return strconv.FormatBool(g.r.Intn(2) == 0)
	}
	var v string
	if t.signed {
		lo := int64(-1) << (t.bits - 1)
		hi := -(lo + 1)
		switch g.r.Intn(6) {
		case 0:
			v = strconv.FormatInt(lo, 10)
		case 1:
			v = strconv.FormatInt(hi, 10)
		case 2:
			v = strconv.Itoa(g.r.Intn(3) - 1)
		default:
			x := int64(g.r.Uint64())
			x = x >> (64 - t.bits) // sign-extending: in range
			v = strconv.FormatInt(x, 10)
		}
	} else {
		hi := uint64(math.MaxUint64) >> (64 - t.bits)
		switch g.r.Intn(6) {
		case 0:
			v = strconv.FormatUint(hi, 10)
		case 1:
			v = "0"
		case 2:
			v = strconv.Itoa(1 + g.r.Intn(2))
		default:
			v = strconv.FormatUint(g.r.Uint64()&hi, 10)
		}
	}
	return t.name + "(" + v + ")"
}

func (g *gen) floatLit(t *typ) string {
	switch g.r.Intn(9) {
	case 0:
		return t.name + "(0)"
	case 1:
		return t.name + "(math.Copysign(0, -1))"
	case 2:
		return t.name + "(math.Inf(1))"
	case 3:
		return t.name + "(math.NaN())"
	case 4:
		return t.name + "(-1.5)"
	}
	if t.bits == 32 {
		f := math.Float32frombits(g.r.Uint32())
		for f != f || math.IsInf(float64(f), 0) {
			f = math.Float32frombits(g.r.Uint32())
		}
		return "float32(" + strconv.FormatFloat(float64(f), 'g', -1, 32) + ")"
	}
	var f float64
	if g.r.Intn(2) == 0 {
		f = (g.r.Float64() - 0.5) * math.Pow(10, float64(g.r.Intn(40)-20))
	} else {
		f = math.Float64frombits(g.r.Uint64())
		for f != f || math.IsInf(f, 0) {
			f = math.Float64frombits(g.r.Uint64())
		}
	}
	return "float64(" + strconv.FormatFloat(f, 'g', -1, 64) + ")"
}

var stringPieces = []string{"a", "b", "z", "Q", "0", "9", " ", "-", "\"", "\\", "\n", "\t", "\x00", "\x7f",
	"\xff", "\xc3", "\xe2\x82", "é", "世", "😀", "\u0085", "'", "{", "}", ",", ":", "<0xff>", "\xed\xa0\x80", "\xf4\x90\x80\x80"}

func (g *gen) strValue() string {
	var b strings.Builder
	n := 0
	switch g.pick(2, 2, 6) {
	case 0:
		n = 0
	case 1:
		n = 1
	default:
		n = 2 + g.r.Intn(14)
	}
	for i := 0; i < n && b.Len() < maxStr-4; i++ {
		if g.r.Intn(3) == 0 {
			b.WriteString(stringPieces[g.r.Intn(len(stringPieces))])
		} else {
			b.WriteByte(byte('a' + g.r.Intn(26)))
		}
	}
	return b.String()
}

func (g *gen) count() int {
	switch g.pick(2, 3, 5) {
	case 0:
		return 0
	case 1:
		return 1
	}
	return 2 + g.r.Intn(maxMany-1)
}

// lit is a Go expression of type t with a random value; every value's printed form is complete
// under the spec's string_max and slice_max.
func (g *gen) lit(t *typ, depth int) string {
	switch t.k {
	case kBasic:
		return g.intLit(t)
	case kFloat:
		return g.floatLit(t)
	case kString:
		return strconv.Quote(g.strValue())
	case kBytes:
		switch g.r.Intn(6) {
		case 0:
			return "[]byte(nil)"
		case 1:
			return "append(make([]byte, 0, " + strconv.Itoa(maxStr) + "), " + strconv.Quote(g.strValue()) + "...)"
		}
		return "[]byte(" + strconv.Quote(g.strValue()) + ")"
	case kPtr:
		if g.r.Intn(5) == 0 {
			return "(" + t.name + ")(nil)"
		}
		// Always through xptr, which moves the value to the heap: &T{...} of a non-escaping argument
		// stays in the caller's stack frame, and when that stack grows between the entry probe and the
		// function's own record of its arguments, the runtime moves the value and rewrites the pointer,
		// so the two would disagree about an address that was right when each read it.
		return "xptr(" + g.lit(t.elem, depth-1) + ")"
	case kSlice:
		switch g.r.Intn(7) {
		case 0:
			return "(" + t.name + ")(nil)"
		case 1:
			return "make(" + t.name + ", 0)"
		}
		n := g.count()
		var items []string
		for i := 0; i < n; i++ {
			items = append(items, g.lit(t.elem, depth-1))
		}
		if g.r.Intn(3) == 0 {
			return fmt.Sprintf("append(make(%s, 0, %d), %s)", t.name, n+g.r.Intn(5), strings.Join(items, ", "))
		}
		return t.name + "{" + strings.Join(items, ", ") + "}"
	case kArray:
		var items []string
		for i := 0; i < t.n; i++ {
			items = append(items, g.lit(t.elem, depth-1))
		}
		return t.name + "{" + strings.Join(items, ", ") + "}"
	case kStruct:
		var items []string
		for _, f := range t.fields {
			if !f.t.size0() {
				items = append(items, f.name+": "+g.lit(f.t, depth-1))
			}
		}
		return t.name + "{" + strings.Join(items, ", ") + "}"
	case kMap:
		if g.r.Intn(5) == 0 {
			return "(" + t.name + ")(nil)"
		}
		n := g.r.Intn(6)
		var items []string
		for i := 0; i < n; i++ {
			var k string
			if t.key.k == kString {
				k = strconv.Quote(fmt.Sprintf("k%d", i))
			} else {
				k = fmt.Sprintf("%s(%d)", t.key.name, i*7+1)
			}
			items = append(items, k+": "+g.lit(t.elem, depth-1))
		}
		return t.name + "{" + strings.Join(items, ", ") + "}"
	case kChan:
		if g.r.Intn(5) == 0 {
			return "(" + t.name + ")(nil)"
		}
		c := g.r.Intn(6)
		n := 0
		if c > 0 {
			n = g.r.Intn(c + 1)
		}
		return fmt.Sprintf("xmkch[%s](%d, %d)", t.elem.name, c, n)
	case kFunc:
		impls := funcTypes[t.fn].impls
		if g.r.Intn(4) == 0 {
			return "(" + t.name + ")(nil)"
		}
		return impls[g.r.Intn(len(impls))]
	case kAny:
		switch g.r.Intn(11) {
		case 0:
			return "any(nil)"
		case 1:
			return "any(" + g.intLit(g.basic(basicNames[g.r.Intn(len(basicNames))])) + ")"
		case 2:
			return "any(" + strconv.Quote(g.strValue()) + ")"
		case 3:
			return "any(" + g.lit(g.structOf(2), 1) + ")"
		case 4:
			return "any(&" + g.lit(g.structOf(2), 1) + ")"
		case 5:
			return "any(" + g.floatLit(&typ{k: kFloat, name: "float64", bits: 64}) + ")"
		case 6:
			return "any(" + g.floatLit(&typ{k: kFloat, name: "float32", bits: 32}) + ")"
		case 7:
			return "any(map[string]int{})"
		case 8:
			return "any(XInt(" + strconv.Itoa(g.r.Intn(1000)-500) + "))"
		case 9:
			return "any(xfa0)"
		}
		return "any([]int{1, 2})"
	case kError:
		switch g.r.Intn(5) {
		case 0:
			return "error(nil)"
		case 1:
			return "errors.New(" + strconv.Quote(g.strValue()) + ")"
		case 2:
			return "fmt.Errorf(\"w: %w\", errors.New(" + strconv.Quote(g.strValue()) + "))"
		case 3:
			return fmt.Sprintf("&XErr{%d}", g.r.Intn(100))
		}
		return fmt.Sprintf("XErrV{%d}", g.r.Intn(100))
	case kNamed:
		return t.name + "(" + g.lit(t.elem, depth) + ")"
	}
	panic("lit: " + t.name)
}

// ---- printers: one function per concrete type, writing the tracer's JSON form ----

func (g *gen) printer(t *typ) string {
	if t.k == kParam || t.hasParam() {
		panic("printer of a type parameter: " + t.name)
	}
	if i, ok := g.printers[t.name]; ok {
		return fmt.Sprintf("xo%d", i)
	}
	i := len(g.printerTypes)
	g.printers[t.name] = i
	g.printerTypes = append(g.printerTypes, t)
	return fmt.Sprintf("xo%d", i)
}

func (g *gen) printerBody(t *typ) string {
	var b strings.Builder
	switch t.k {
	case kBasic:
		if t.bits == 0 {
			b.WriteString("\tw.bool(v)\n")
		} else if t.signed {
			b.WriteString("\tw.int(int64(v))\n")
		} else {
			b.WriteString("\tw.uint(uint64(v))\n")
		}
	case kFloat:
		fmt.Fprintf(&b, "\tw.float(float64(v), %d)\n", t.bits)
	case kString:
		b.WriteString("\tw.str(v)\n")
	case kBytes:
		b.WriteString("\tw.bytes(v)\n")
	case kPtr:
		b.WriteString("\tw.ptr(uintptr(unsafe.Pointer(v)))\n")
	case kSlice:
		fmt.Fprintf(&b, "\tw.s(`{\"len\":`)\n\tw.int(int64(len(v)))\n\tw.s(`,\"cap\":`)\n\tw.int(int64(cap(v)))\n\tw.s(`,\"items\":[`)\n")
		fmt.Fprintf(&b, "\tfor i, e := range v {\n\t\tif i >= %d {\n\t\t\tbreak\n\t\t}\n\t\tif i > 0 {\n\t\t\tw.s(\",\")\n\t\t}\n\t\t%s(w, e)\n\t}\n\tw.s(\"]}\")\n", sliceMax, g.printer(t.elem))
	case kArray:
		fmt.Fprintf(&b, "\tw.s(\"[\")\n\tfor i, e := range v {\n\t\tif i >= %d {\n\t\t\tbreak\n\t\t}\n\t\tif i > 0 {\n\t\t\tw.s(\",\")\n\t\t}\n\t\t%s(w, e)\n\t}\n\tw.s(\"]\")\n", sliceMax, g.printer(t.elem))
	case kStruct:
		b.WriteString("\tw.s(\"{\")\n")
		for i, f := range t.fields {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(&b, "\tw.s(`%s\"%s\":`)\n\t%s(w, v.%s)\n", sep, f.name, g.printer(f.t), f.name)
		}
		b.WriteString("\tw.s(\"}\")\n")
	case kMap:
		// Every pair, in Go's random order: the comparison takes a map's pairs as a set.
		fmt.Fprintf(&b, "\tw.s(`{\"len\":`)\n\tw.int(int64(len(v)))\n\tw.s(`,\"items\":[`)\n")
		fmt.Fprintf(&b, "\tfirst := true\n\tfor k, e := range v {\n\t\tif !first {\n\t\t\tw.s(\",\")\n\t\t}\n\t\tfirst = false\n"+
			"\t\tw.s(`{\"key\":`)\n\t\t%s(w, k)\n\t\tw.s(`,\"value\":`)\n\t\t%s(w, e)\n\t\tw.s(\"}\")\n\t}\n\tw.s(\"]}\")\n",
			g.printer(t.key), g.printer(t.elem))
	case kChan:
		b.WriteString("\tw.s(`{\"len\":`)\n\tw.int(int64(len(v)))\n\tw.s(`,\"cap\":`)\n\tw.int(int64(cap(v)))\n\tw.s(\"}\")\n")
	case kFunc:
		b.WriteString("\tw.fn(v)\n")
	case kAny:
		b.WriteString("\tw.iface(v)\n")
	case kError:
		b.WriteString("\tif v == nil {\n\t\tw.iface(nil)\n\t} else {\n\t\tw.iface(v)\n\t}\n")
	case kNamed:
		fmt.Fprintf(&b, "\t%s(w, %s(v))\n", g.printer(t.elem), t.elem.name)
	default:
		panic("printerBody: " + t.name)
	}
	return b.String()
}

// ---- functions ----

type param struct {
	name string
	t    *typ
}

type sig struct {
	params   []param
	results  []param // names "" when unnamed
	named    bool
	variadic bool // the last param is ...elem (its type is the slice)
}

// concreteSig is a signature of concrete types; reuse percent of them repeat an earlier one. weave
// compiles one BPF program per distinct event layout, so repeats bound the time clang takes (most
// of a run's time) while every function is still called with values of its own.
func (g *gen) concreteSig(variadic bool) sig {
	pool := &g.sigPool[boolIndex(variadic)]
	if len(*pool) > 0 && g.r.Intn(100) < g.reuse {
		return (*pool)[g.r.Intn(len(*pool))]
	}
	s := g.randSig(variadic, g.concreteType)
	*pool = append(*pool, s)
	return s
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *gen) randSig(allowVariadic bool, mkType func() *typ) sig {
	var s sig
	np := g.pick(1, 3, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1)
	for i := 0; i < np; i++ {
		s.params = append(s.params, param{fmt.Sprintf("p%d", i), mkType()})
	}
	if allowVariadic {
		s.variadic = true
		e := g.randType(1, 2)
		s.params = append(s.params, param{fmt.Sprintf("p%d", np), sliceOf(e)})
	}
	nr := g.pick(2, 4, 3, 1, 1)
	s.named = g.r.Intn(3) == 0
	for i := 0; i < nr; i++ {
		name := ""
		if s.named {
			name = fmt.Sprintf("r%d", i)
		}
		s.results = append(s.results, param{name, mkType()})
	}
	return s
}

func (s sig) declParams() string {
	var parts []string
	for i, p := range s.params {
		if s.variadic && i == len(s.params)-1 {
			parts = append(parts, p.name+" ..."+p.t.elem.name)
		} else {
			parts = append(parts, p.name+" "+p.t.name)
		}
	}
	return strings.Join(parts, ", ")
}

func (s sig) declResults() string {
	if len(s.results) == 0 {
		return ""
	}
	var parts []string
	for _, r := range s.results {
		if s.named {
			parts = append(parts, r.name+" "+r.t.name)
		} else {
			parts = append(parts, r.t.name)
		}
	}
	if len(parts) == 1 && !s.named {
		return " " + parts[0]
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func (s sig) tags() []string {
	var tags []string
	zero, float := false, false
	for _, p := range append(append([]param{}, s.params...), s.results...) {
		zero = zero || p.t.size0()
		float = float || p.t.hasFloat()
	}
	if zero {
		tags = append(tags, "zerosize")
	}
	if float {
		tags = append(tags, "float")
	}
	return tags
}

// printValue is the statement that prints v of type t; in generic code through xdyn's type switch
// over the concrete types, once instantiated (subst maps type parameters to type arguments).
func (g *gen) printValue(t *typ, v string, insts [][]*typ) string {
	if !t.hasParam() {
		return fmt.Sprintf("%s(xw, %s)", g.printer(t), v)
	}
	for _, args := range insts {
		c := subst(t, args)
		g.dynTypes[c.name] = c
		g.printer(c)
	}
	return fmt.Sprintf("xdyn(xw, any(%s))", v)
}

// body writes the function body: the entry line, then the results (one or two return paths).
func (g *gen) body(key string, recv *param, s sig, insts [][]*typ, resultValue func(t *typ) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\txw := xbegin(%q, \"entry\")\n", key)
	all := s.params
	if recv != nil {
		all = append([]param{*recv}, s.params...)
	}
	for i, p := range all {
		// The first of these lines is where the oracle's line probe reads every parameter
		// (`locals: all`), all of them live there: the marker names the function for lines.txt.
		marker := ""
		if i == 0 {
			marker = " " + lineMarker + key
		}
		fmt.Fprintf(&b, "\txw.key(%q, %v)%s\n\t%s\n", p.name, i == 0, marker, g.printValue(p.t, p.name, insts))
	}
	if g.stacks {
		b.WriteString("\txendStack(xw)\n")
	} else {
		b.WriteString("\txend(xw)\n")
	}
	paths := 1
	if len(s.results) > 0 && g.r.Intn(4) == 0 {
		paths = 2
	}
	for path := 0; path < paths; path++ {
		ind := "\t"
		if paths == 2 && path == 0 {
			b.WriteString("\tif xflip() {\n")
			ind = "\t\t"
		}
		var names []string
		for i, r := range s.results {
			name := r.name
			if !s.named {
				name = fmt.Sprintf("xr%d", i)
				fmt.Fprintf(&b, "%svar %s %s = %s\n", ind, name, r.t.name, resultValue(r.t))
			} else {
				fmt.Fprintf(&b, "%s%s = %s\n", ind, name, resultValue(r.t))
			}
			names = append(names, name)
		}
		fmt.Fprintf(&b, "%sxw = xbegin(%q, \"return\")\n", ind, key)
		for i, r := range s.results {
			label := r.name
			if !s.named {
				label = fmt.Sprintf("~r%d", i)
			}
			fmt.Fprintf(&b, "%sxw.key(%q, %v)\n%s%s\n", ind, label, i == 0, ind, g.printValue(r.t, names[i], insts))
		}
		fmt.Fprintf(&b, "%sxend(xw)\n", ind)
		if s.named || len(names) == 0 {
			fmt.Fprintf(&b, "%sreturn\n", ind)
		} else {
			fmt.Fprintf(&b, "%sreturn %s\n", ind, strings.Join(names, ", "))
		}
		if paths == 2 && path == 0 {
			b.WriteString("\t}\n")
		}
	}
	return b.String()
}

func (g *gen) args(s sig, args []*typ) string {
	var parts []string
	for i, p := range s.params {
		t := p.t
		if args != nil {
			t = subst(t, args)
		}
		if s.variadic && i == len(s.params)-1 {
			n := g.pick(2, 2, 3)
			if n == 2 {
				n = 2 + g.r.Intn(4)
			}
			for j := 0; j < n; j++ {
				parts = append(parts, g.lit(t.elem, 3))
			}
			continue
		}
		parts = append(parts, g.lit(t, 3))
	}
	return strings.Join(parts, ", ")
}

func (g *gen) concreteType() *typ { return g.randType(2, 3) }

func (g *gen) record(key string, tags []string) {
	g.meta = append(g.meta, funcMeta{key, tags})
}

func (g *gen) plain(id int, variadic bool) []string {
	name := fmt.Sprintf("F%04d", id)
	s := g.concreteSig(variadic)
	key := "main." + name
	fmt.Fprintf(&g.out, "//go:noinline\nfunc %s(%s)%s {\n%s}\n\n", name, s.declParams(), s.declResults(),
		g.body(key, nil, s, nil, func(t *typ) string { return g.lit(t, 3) }))
	tags := []string{"plain"}
	if variadic {
		tags[0] = "variadic"
	}
	g.record(key, append(tags, s.tags()...))
	calls := []string{fmt.Sprintf("%s(%s)", name, g.args(s, nil))}
	if g.r.Intn(2) == 0 {
		calls = append(calls, fmt.Sprintf("%s(%s)", name, g.args(s, nil)))
	}
	return calls
}

// closure: a factory F returns a closure main.F.func1 that captures the factory's argument.
func (g *gen) closure(id int) []string {
	name := fmt.Sprintf("F%04d", id)
	s := g.concreteSig(false)
	inner := "main." + name + ".func1"
	fnType := "func(" + s.declParams() + ")" + s.declResults()
	var b strings.Builder
	fmt.Fprintf(&b, "//go:noinline\nfunc %s(c int) %s {\n", name, fnType)
	fmt.Fprintf(&b, "\txw := xbegin(%q, \"entry\")\n\txw.key(\"c\", true)\n\txw.int(int64(c))\n\txend(xw)\n", "main."+name)
	fmt.Fprintf(&b, "\tf := func(%s)%s {\n\t\tif c == -12345 {\n\t\t\tpanic(c)\n\t\t}\n", s.declParams(), s.declResults())
	body := g.body(inner, nil, s, nil, func(t *typ) string { return g.lit(t, 3) })
	b.WriteString(indent(body))
	b.WriteString("\t}\n")
	fmt.Fprintf(&b, "\txw = xbegin(%q, \"return\")\n\txw.key(\"~r0\", true)\n\txw.fn(f)\n\txend(xw)\n\treturn f\n}\n\n", "main."+name)
	g.out.WriteString(b.String())
	g.record("main."+name, []string{"closure-factory"})
	g.record(inner, append([]string{"closure"}, s.tags()...))
	calls := []string{fmt.Sprintf("%s(%d)(%s)", name, g.r.Intn(100), g.args(s, nil))}
	return calls
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "\t" + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// method: a defined type T over a struct, integer or slice, with one method on a value or a
// pointer receiver.
func (g *gen) method(id int, pointer bool) []string {
	tname := fmt.Sprintf("T%04d", id)
	var under *typ
	switch g.r.Intn(4) {
	case 0:
		under = g.basic(basicNames[g.r.Intn(len(basicNames))])
	case 1:
		under = sliceOf(g.scalar())
	default:
		under = g.structOf(3)
	}
	t := &typ{k: kNamed, name: tname, elem: under}
	fmt.Fprintf(&g.out, "type %s %s\n\n", tname, under.name)
	s := g.concreteSig(false)
	recv := param{"rcv", t}
	key := "main." + tname + ".M"
	recvDecl := "rcv " + tname
	if pointer {
		recv.t = ptrOf(t)
		key = "main.(*" + tname + ").M"
		recvDecl = "rcv *" + tname
	}
	fmt.Fprintf(&g.out, "//go:noinline\nfunc (%s) M(%s)%s {\n%s}\n\n", recvDecl, s.declParams(), s.declResults(),
		g.body(key, &recv, s, nil, func(t *typ) string { return g.lit(t, 3) }))
	tag := "method-value"
	if pointer {
		tag = "method-pointer"
	}
	tags := append([]string{tag}, s.tags()...)
	if under.size0() && !pointer && !contains(tags, "zerosize") {
		tags = append(tags, "zerosize")
	}
	g.record(key, tags)
	var calls []string
	for i := 0; i < 1+g.r.Intn(2); i++ {
		v := g.lit(t, 3)
		if pointer {
			v = "xptr(" + v + ")"
		}
		calls = append(calls, fmt.Sprintf("%s.M(%s)", v, g.args(s, nil)))
	}
	return calls
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// ---- generics ----

type constraint int

const (
	cAny constraint = iota
	cComparable
	cInteger
)

var constraintNames = []string{"any", "comparable", "xinteger"}

// typeArg is a type argument that satisfies c.
func (g *gen) typeArg(c constraint) *typ {
	for {
		var t *typ
		switch c {
		case cInteger:
			for t == nil || t.bits == 0 {
				t = g.basic(basicNames[g.r.Intn(len(basicNames))])
			}
			return t
		default:
			switch g.pick(6, 3, 2, 2, 1, 1, 1) {
			case 0:
				t = g.basic(basicNames[g.r.Intn(len(basicNames))])
			case 1:
				t = mk(kString, "string", nil)
			case 2:
				t = g.structOf(2)
			case 3:
				t = ptrOf(g.structOf(2))
			case 4:
				t = sliceOf(g.scalar())
			case 5:
				t = arrayOf(g.arrayLen()%4, g.scalar())
			case 6:
				t = g.zeroT
			}
		}
		if c == cComparable && !t.comparable() {
			continue
		}
		if g.omit["zerosize"] && t.size0() {
			continue
		}
		return t
	}
}

func paramType(i int) *typ { return &typ{k: kParam, name: fmt.Sprintf("T%d", i), param: i} }

// genericType is a parameter type of generic code: a type parameter, or a composite of one, or a
// concrete type.
func (g *gen) genericType(n int) *typ {
	p := paramType(g.r.Intn(n))
	switch g.pick(8, 2, 2, 1, 1, 1, 5) {
	case 0:
		return p
	case 1:
		return sliceOf(p)
	case 2:
		return ptrOf(p)
	case 3:
		return arrayOf(1+g.r.Intn(3), p)
	case 4:
		return mapOf(mk(kString, "string", nil), p)
	case 5:
		return chanOf(p)
	}
	return g.concreteType()
}

func subst(t *typ, args []*typ) *typ {
	if !t.hasParam() {
		return t
	}
	switch t.k {
	case kParam:
		return args[t.param]
	case kPtr:
		return ptrOf(subst(t.elem, args))
	case kSlice:
		return sliceOf(subst(t.elem, args))
	case kChan:
		return chanOf(subst(t.elem, args))
	case kArray:
		return arrayOf(t.n, subst(t.elem, args))
	case kMap:
		return mapOf(subst(t.key, args), subst(t.elem, args))
	case kStruct:
		c := &typ{k: kStruct, name: t.name, level: t.level}
		var names []string
		for _, a := range args {
			names = append(names, a.name)
		}
		c.name = strings.SplitN(t.name, "[", 2)[0] + "[" + strings.Join(names, ", ") + "]"
		for _, f := range t.fields {
			c.fields = append(c.fields, field{f.name, subst(f.t, args)})
		}
		return c
	}
	panic("subst: " + t.name)
}

func (g *gen) typeParams(n int) ([]constraint, string, string) {
	var cs []constraint
	var decl, use []string
	for i := 0; i < n; i++ {
		c := constraint(g.pick(5, 2, 2))
		cs = append(cs, c)
		decl = append(decl, fmt.Sprintf("T%d %s", i, constraintNames[c]))
		use = append(use, fmt.Sprintf("T%d", i))
	}
	return cs, strings.Join(decl, ", "), strings.Join(use, ", ")
}

func (g *gen) instantiations(cs []constraint) [][]*typ {
	var insts [][]*typ
	for i := 0; i < 1+g.r.Intn(2); i++ {
		var args []*typ
		for _, c := range cs {
			args = append(args, g.typeArg(c))
		}
		insts = append(insts, args)
	}
	return insts
}

func typeArgList(args []*typ) string {
	var names []string
	for _, a := range args {
		names = append(names, a.name)
	}
	return strings.Join(names, ", ")
}

func (g *gen) tagsOf(s sig, insts [][]*typ, extra ...*typ) []string {
	var tags []string
	for _, args := range insts {
		var c sig
		for _, p := range s.params {
			c.params = append(c.params, param{p.name, subst(p.t, args)})
		}
		for _, r := range s.results {
			c.results = append(c.results, param{r.name, subst(r.t, args)})
		}
		for _, e := range extra {
			c.params = append(c.params, param{"", subst(e, args)})
		}
		for _, t := range c.tags() {
			if !contains(tags, t) {
				tags = append(tags, t)
			}
		}
	}
	return tags
}

// zeroOf is the result value of generic code: a parameter of that exact type when there is one,
// else the zero value.
func zeroOf(s sig) func(t *typ) string {
	return func(t *typ) string {
		for _, p := range s.params {
			if p.t.name == t.name && !(s.variadic && p.name == s.params[len(s.params)-1].name) {
				return p.name
			}
		}
		return "*new(" + t.name + ")"
	}
}

func (g *gen) generic(id int) ([]string, bool) {
	name := fmt.Sprintf("G%04d", id)
	n := 1 + g.r.Intn(3)
	cs, decl, _ := g.typeParams(n)
	s := g.randSig(false, func() *typ { return g.genericType(n) })
	insts := g.instantiations(cs)
	tags := append([]string{"generic"}, g.tagsOf(s, insts)...)
	if g.omit["zerosize"] && contains(tags, "zerosize") {
		return nil, false
	}
	key := "main." + name
	concrete := func(t *typ) string {
		if t.hasParam() {
			return zeroOf(s)(t)
		}
		return g.lit(t, 3)
	}
	fmt.Fprintf(&g.out, "//go:noinline\nfunc %s[%s](%s)%s {\n%s}\n\n", name, decl, s.declParams(), s.declResults(),
		g.body(key, nil, s, insts, concrete))
	g.record(key, tags)
	var calls []string
	for _, args := range insts {
		calls = append(calls, fmt.Sprintf("%s[%s](%s)", name, typeArgList(args), g.args(s, args)))
	}
	return calls, true
}

// genericMethod: a generic struct type GT with one method on a value or pointer receiver.
func (g *gen) genericMethod(id int, pointer bool) ([]string, bool) {
	name := fmt.Sprintf("GT%04d", id)
	n := 1 + g.r.Intn(3)
	cs, decl, use := g.typeParams(n)
	st := &typ{k: kStruct, name: name + "[" + use + "]", level: 2}
	for i := 0; i < 1+g.r.Intn(4); i++ {
		var ft *typ
		if g.r.Intn(2) == 0 {
			ft = paramType(g.r.Intn(n))
		} else {
			ft = g.scalar()
		}
		st.fields = append(st.fields, field{fmt.Sprintf("F%d", i), ft})
	}
	st.fields = append(st.fields, field{fmt.Sprintf("F%d", len(st.fields)), paramType(n - 1)}) // uses every... at least the last
	s := g.randSig(false, func() *typ { return g.genericType(n) })
	insts := g.instantiations(cs)
	recvT := st
	key := "main." + name + ".M"
	recvDecl := "rcv " + st.name
	tag := "generic-method-value"
	if pointer {
		recvT = ptrOf(st)
		key = "main.(*" + name + ").M"
		recvDecl = "rcv *" + st.name
		tag = "generic-method-pointer"
	}
	tags := append([]string{tag}, g.tagsOf(s, insts, recvT)...)
	if g.omit["zerosize"] && contains(tags, "zerosize") {
		return nil, false
	}
	fmt.Fprintf(&g.out, "type %s[%s] struct {\n", name, decl)
	for _, f := range st.fields {
		fmt.Fprintf(&g.out, "\t%s %s\n", f.name, f.t.name)
	}
	fmt.Fprintf(&g.out, "}\n\n")
	recv := param{"rcv", recvT}
	fmt.Fprintf(&g.out, "//go:noinline\nfunc (%s) M(%s)%s {\n%s}\n\n", recvDecl, s.declParams(), s.declResults(),
		g.body(key, &recv, s, insts, func(t *typ) string {
			if t.hasParam() {
				return zeroOf(s)(t)
			}
			return g.lit(t, 3)
		}))
	g.record(key, tags)
	var calls []string
	for _, args := range insts {
		v := g.lit(subst(st, args), 3)
		if pointer {
			v = "xptr(" + v + ")"
		}
		calls = append(calls, fmt.Sprintf("%s.M(%s)", v, g.args(s, args)))
	}
	return calls, true
}

const prelude = `// Code generated by tests/oracle/gen (seed %d, count %d, arch %s%s). DO NOT EDIT.

// Each traced function writes, at entry and before each return, one JSON line of what it passed or
// returns to the file named by the first argument; the oracle compares the tracer's events with it.
package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

var (
	_ = errors.New
	_ = fmt.Errorf
	_ = math.Inf
)

type xwr struct{ b []byte }

var xout xwr

func (w *xwr) s(x string) { w.b = append(w.b, x...) }
func (w *xwr) int(x int64) { w.b = strconv.AppendInt(w.b, x, 10) }
func (w *xwr) uint(x uint64) { w.b = strconv.AppendUint(w.b, x, 10) }
func (w *xwr) bool(x bool) { w.b = strconv.AppendBool(w.b, x) }
func (w *xwr) ptr(x uintptr) {
	w.b = append(w.b, "\"0x"...)
	w.b = strconv.AppendUint(w.b, uint64(x), 16)
	w.b = append(w.b, '"')
}

// float: shortest exact form; JSON has no NaN or infinities, so they are strings, as Go spells them.
func (w *xwr) float(x float64, bits int) {
	switch {
	case math.IsNaN(x):
		w.s("\"NaN\"")
	case math.IsInf(x, 1):
		w.s("\"+Inf\"")
	case math.IsInf(x, -1):
		w.s("\"-Inf\"")
	case bits == 32:
		// A float32 is shown in its own shortest form, which read as a float64 is another
		// number: the marker tells the comparator to read both sides as float32.
		w.s("\"\\u0000f32:")
		w.b = strconv.AppendFloat(w.b, x, 'g', -1, 32)
		w.s("\"")
	default:
		w.b = strconv.AppendFloat(w.b, x, 'g', -1, bits)
	}
}

// str: a JSON string; a byte that is not valid UTF-8 is the escape \udcXX (README.md, JSON).
func (w *xwr) str(x string) {
	const hex = "0123456789abcdef"
	w.b = append(w.b, '"')
	for i := 0; i < len(x); {
		r, n := utf8.DecodeRuneInString(x[i:])
		c := x[i]
		switch {
		case r == utf8.RuneError && n == 1:
			w.b = append(w.b, '\\', 'u', 'd', 'c', hex[c>>4], hex[c&15])
		case n > 1:
			w.b = append(w.b, x[i:i+n]...)
		case c == '"' || c == '\\':
			w.b = append(w.b, '\\', c)
		case c < 0x20 || c == 0x7f:
			w.b = append(w.b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			w.b = append(w.b, c)
		}
		i += n
	}
	w.b = append(w.b, '"')
}

func (w *xwr) bytes(x []byte) { w.str(string(x)) }

func (w *xwr) fn(f any) {
	v := reflect.ValueOf(f)
	if v.IsNil() {
		w.s("null")
		return
	}
	w.str(runtime.FuncForPC(v.Pointer()).Name())
}

// iface: the dynamic type's name and what it holds, as the tracer shows interfaces.
func (w *xwr) iface(x any) {
	if x == nil {
		w.s("null")
		return
	}
	t := reflect.TypeOf(x)
	data := (*[2]uintptr)(unsafe.Pointer(&x))[1]
	w.s("{\"type\":")
	w.str(t.String())
	v := reflect.ValueOf(x)
	switch name := t.String(); {
	case name == "*errors.errorString" || name == "*fmt.wrapError" || name == "*fmt.wrapErrors":
		w.s(",\"error\":")
		w.str(x.(error).Error())
	case t.Kind() == reflect.String:
		w.s(",\"value\":")
		w.str(v.String())
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		w.s(",\"value\":")
		w.int(v.Int())
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr:
		w.s(",\"value\":")
		w.uint(v.Uint())
	case t.Kind() == reflect.Bool:
		w.s(",\"value\":")
		w.bool(v.Bool())
	case t.Kind() == reflect.Float32:
		w.s(",\"value\":")
		w.float(v.Float(), 32)
	case t.Kind() == reflect.Float64:
		w.s(",\"value\":")
		w.float(v.Float(), 64)
	case t.Kind() == reflect.Pointer || t.Kind() == reflect.Map || t.Kind() == reflect.Chan ||
		t.Kind() == reflect.Func || t.Kind() == reflect.UnsafePointer:
		w.s(",\"value\":")
		w.ptr(data)
	default:
		w.s(",\"data\":")
		w.ptr(data)
	}
	w.s("}")
}

func (w *xwr) key(k string, first bool) {
	if !first {
		w.b = append(w.b, ',')
	}
	w.str(k)
	w.b = append(w.b, ':')
}

func xbegin(fn, kind string) *xwr {
	w := &xout
	w.s("{\"fn\":")
	w.str(fn)
	w.s(",\"kind\":\"" + kind + "\",\"")
	if kind == "entry" {
		w.s("args\":{")
	} else {
		w.s("results\":{")
	}
	return w
}

func xend(w *xwr) { w.s("}}\n") }

// xendStack ends an entry line with the stack runtime.Callers sees from the generated function
// that called it, its caller first, as the tracer's "stack" lists frames.
//
//go:noinline
func xendStack(w *xwr) {
	w.s("},\"stack\":[")
	var pcs [64]uintptr
	n := runtime.Callers(3, pcs[:]) // runtime.Callers, xendStack and the generated function
	frames := runtime.CallersFrames(pcs[:n])
	for i := 0; ; i++ {
		f, more := frames.Next()
		if i > 0 {
			w.s(",")
		}
		w.s("{\"function\":")
		w.str(f.Function)
		w.s(",\"file\":")
		w.str(f.File)
		w.s(",\"line\":")
		w.int(int64(f.Line))
		w.s("}")
		if !more {
			break
		}
	}
	w.s("]}\n")
}

var xflipState bool

//go:noinline
func xflip() bool {
	xflipState = !xflipState
	return xflipState
}

func xptr[T any](v T) *T { return &v }

func xmkch[T any](c, n int) chan T {
	ch := make(chan T, c)
	var z T
	for i := 0; i < n; i++ {
		ch <- z
	}
	return ch
}

type xinteger interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

type XInt int

type XErr struct{ Code int }

func (e *XErr) Error() string { return "xerr " + strconv.Itoa(e.Code) }

type XErrV struct{ Code int }

func (e XErrV) Error() string { return "xerrv " + strconv.Itoa(e.Code) }

//go:noinline
func xfa0(x int) int { return x + 1 }

//go:noinline
func xfa1(x int) int { return x * 2 }

//go:noinline
func xfb0(s string) error { return nil }

//go:noinline
func xfc0() {}

//go:noinline
func xfc1() { xflipState = false }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: prog TRUTH.jsonl")
		os.Exit(2)
	}
	xrun()
	if err := os.WriteFile(os.Args[1], xout.b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

`

func main() {
	seed := flag.Int64("seed", 1, "random seed")
	count := flag.Int("count", 100, "how many functions")
	arch := flag.String("arch", "amd64", "GOARCH of the program (sizes of int, uint, uintptr): amd64, 386, arm64")
	out := flag.String("o", "", "output directory (main.go, go.mod, meta.json)")
	reuse := flag.Int("reuse", 50, "percent of signatures that repeat an earlier one (fewer BPF programs to compile)")
	stacks := flag.Bool("stacks", false, "every generated function's entry also records its runtime.Callers stack")
	omitList := flag.String("omit", "", "comma-separated categories to leave out, for debugging: generic, zerosize, float")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -o DIR is required")
		os.Exit(2)
	}
	g := &gen{r: rand.New(rand.NewSource(*seed)), ptrBits: 64, omit: map[string]bool{},
		printers: map[string]int{}, dynTypes: map[string]*typ{}, reuse: *reuse, stacks: *stacks}
	if *arch == "386" || *arch == "arm" {
		g.ptrBits = 32
	}
	omitNote := ""
	if *omitList != "" {
		for _, c := range strings.Split(*omitList, ",") {
			g.omit[c] = true
		}
		omitNote = ", omit " + *omitList
	}
	if *reuse != 50 {
		omitNote += fmt.Sprintf(", reuse %d", *reuse)
	}
	if *stacks {
		omitNote += ", stacks"
	}
	fmt.Fprintf(&g.out, prelude, *seed, *count, *arch, omitNote)
	g.makeStructs(20 + *count/25)

	var calls []string
	made := 0
	for made < *count {
		id := made + 1
		var c []string
		ok := true
		mark := g.out.Len()
		metaMark := len(g.meta)
		printersMark := len(g.printerTypes)
		dynMark := map[string]*typ{}
		for k, v := range g.dynTypes {
			dynMark[k] = v
		}
		switch g.pick(40, 7, 8, 8, 8, 11, 9, 9) {
		case 0:
			c = g.plain(id, false)
		case 1:
			c = g.plain(id, true)
		case 2:
			c = g.closure(id)
		case 3:
			c = g.method(id, false)
		case 4:
			c = g.method(id, true)
		case 5:
			if g.omit["generic"] {
				ok = false
				break
			}
			c, ok = g.generic(id)
		case 6:
			if g.omit["generic"] {
				ok = false
				break
			}
			c, ok = g.genericMethod(id, false)
		case 7:
			if g.omit["generic"] {
				ok = false
				break
			}
			c, ok = g.genericMethod(id, true)
		}
		if ok {
			for _, m := range g.meta[metaMark:] {
				for _, t := range m.Tags {
					if g.omit[t] {
						ok = false
					}
				}
			}
		}
		if !ok { // drop what was written for it and draw again
			s := g.out.String()[:mark]
			g.out.Reset()
			g.out.WriteString(s)
			g.meta = g.meta[:metaMark]
			for _, t := range g.printerTypes[printersMark:] {
				delete(g.printers, t.name)
			}
			g.printerTypes = g.printerTypes[:printersMark]
			g.dynTypes = dynMark
			continue
		}
		calls = append(calls, c...)
		made++
	}
	// main's calls, in chunks: one enormous function would slow the compiler down.
	g.out.WriteString("func xrun() {\n")
	for i := 0; i*50 < len(calls); i++ {
		fmt.Fprintf(&g.out, "\txrun%d()\n", i)
	}
	g.out.WriteString("}\n\n")
	for i := 0; i*50 < len(calls); i++ {
		fmt.Fprintf(&g.out, "func xrun%d() {\n", i)
		for _, c := range calls[i*50 : min(len(calls), i*50+50)] {
			fmt.Fprintf(&g.out, "\t%s\n", c)
		}
		g.out.WriteString("}\n\n")
	}
	// Printers last: generating one may register others, so loop until none is new.
	var printers strings.Builder
	for i := 0; i < len(g.printerTypes); i++ {
		t := g.printerTypes[i]
		fmt.Fprintf(&printers, "func xo%d(w *xwr, v %s) {\n%s}\n\n", i, t.name, g.printerBody(t))
	}
	printed := len(g.printerTypes)
	var names []string
	for n := range g.dynTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	printers.WriteString("// xdyn prints a value of generic code by its dynamic (instantiated) type.\nfunc xdyn(w *xwr, v any) {\n\tswitch v := v.(type) {\n")
	for _, n := range names {
		fmt.Fprintf(&printers, "\tcase %s:\n\t\t%s(w, v)\n", n, g.printer(g.dynTypes[n]))
	}
	printers.WriteString("\tdefault:\n\t\tpanic(fmt.Sprintf(\"xdyn: %T\", v))\n\t}\n}\n")
	if n := len(g.printerTypes); n != printed {
		panic(fmt.Sprintf("xdyn registered %d new printers", n-printed)) // printValue registered them all
	}
	g.out.WriteString(printers.String())

	must(os.MkdirAll(*out, 0o755))
	must(os.WriteFile(filepath.Join(*out, "main.go"), []byte(g.out.String()), 0o644))
	must(os.WriteFile(filepath.Join(*out, "go.mod"), []byte("module oracle.test/prog\n\ngo 1.19\n"), 0o644))
	meta, err := json.MarshalIndent(map[string]any{"seed": *seed, "count": *count, "arch": *arch,
		"omit": *omitList, "functions": g.meta}, "", " ")
	must(err)
	must(os.WriteFile(filepath.Join(*out, "meta.json"), append(meta, '\n'), 0o644))
	// chunks.txt: "PP PATTERN" lines, the globs that match the functions numbered PP00-PP99 (the
	// test builds one tracer per hundred functions; a glob that matches nothing is an error).
	seen := map[string]bool{}
	var chunks []string
	for _, f := range g.meta {
		m := chunkRe.FindStringSubmatch(f.Key)
		line := m[3] + " " + m[1] + m[2] + m[3] + "*"
		if !seen[line] {
			seen[line] = true
			chunks = append(chunks, line)
		}
	}
	sort.Strings(chunks)
	must(os.WriteFile(filepath.Join(*out, "chunks.txt"), []byte(strings.Join(chunks, "\n")+"\n"), 0o644))
	// lines.txt: "FUNCTION LINE" for each function with a parameter, the line of main.go where it
	// starts printing them (run.sh's line probes).
	var lines strings.Builder
	for i, l := range strings.Split(g.out.String(), "\n") {
		if at := strings.Index(l, lineMarker); at >= 0 {
			fmt.Fprintf(&lines, "%s %d\n", l[at+len(lineMarker):], i+1)
		}
	}
	must(os.WriteFile(filepath.Join(*out, "lines.txt"), []byte(lines.String()), 0o644))
}

// lineMarker ends the line a line probe reads a function's parameters at, followed by its name.
const lineMarker = "// probe line: "

var chunkRe = regexp.MustCompile(`^(main\.(?:\(\*)?)(F|G|T|GT)(\d\d)\d\d`)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
