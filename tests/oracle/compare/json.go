package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// value is a parsed JSON value that keeps what encoding/json would lose: a string's exact bytes
// (the tracer writes a byte that is not UTF-8 as \udcXX, which encoding/json turns into U+FFFD, so
// two different bytes would compare equal) and a number's exact text (a uint64 above 2^53).
type value struct {
	kind byte // 'n' null, 'b' bool, 'd' number, 's' string, 'a' array, 'o' object
	b    bool
	s    string // number text, or string bytes
	arr  []*value
	keys []string // object keys in order
	obj  map[string]*value
}

type parser struct {
	in  string
	pos int
}

func parseJSON(s string) (*value, error) {
	p := &parser{in: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.in) {
		return nil, p.errorf("trailing data")
	}
	return v, nil
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("json at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) space() {
	for p.pos < len(p.in) && (p.in[p.pos] == ' ' || p.in[p.pos] == '\t' || p.in[p.pos] == '\n' || p.in[p.pos] == '\r') {
		p.pos++
	}
}

func (p *parser) literal(word string) bool {
	if len(p.in)-p.pos >= len(word) && p.in[p.pos:p.pos+len(word)] == word {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *parser) value() (*value, error) {
	p.space()
	if p.pos >= len(p.in) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		p.pos++
		v := &value{kind: 'o', obj: map[string]*value{}}
		p.space()
		if p.pos < len(p.in) && p.in[p.pos] == '}' {
			p.pos++
			return v, nil
		}
		for {
			p.space()
			k, err := p.string()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.pos >= len(p.in) || p.in[p.pos] != ':' {
				return nil, p.errorf("expected ':'")
			}
			p.pos++
			e, err := p.value()
			if err != nil {
				return nil, err
			}
			if _, dup := v.obj[k]; dup {
				return nil, p.errorf("duplicate key %q", k)
			}
			v.keys = append(v.keys, k)
			v.obj[k] = e
			p.space()
			if p.pos < len(p.in) && p.in[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.in) && p.in[p.pos] == '}' {
				p.pos++
				return v, nil
			}
			return nil, p.errorf("expected ',' or '}'")
		}
	case c == '[':
		p.pos++
		v := &value{kind: 'a'}
		p.space()
		if p.pos < len(p.in) && p.in[p.pos] == ']' {
			p.pos++
			return v, nil
		}
		for {
			e, err := p.value()
			if err != nil {
				return nil, err
			}
			v.arr = append(v.arr, e)
			p.space()
			if p.pos < len(p.in) && p.in[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.in) && p.in[p.pos] == ']' {
				p.pos++
				return v, nil
			}
			return nil, p.errorf("expected ',' or ']'")
		}
	case c == '"':
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return &value{kind: 's', s: s}, nil
	case p.literal("null"):
		return &value{kind: 'n'}, nil
	case p.literal("true"):
		return &value{kind: 'b', b: true}, nil
	case p.literal("false"):
		return &value{kind: 'b'}, nil
	default:
		start := p.pos
		for p.pos < len(p.in) && (p.in[p.pos] == '-' || p.in[p.pos] == '+' || p.in[p.pos] == '.' ||
			p.in[p.pos] == 'e' || p.in[p.pos] == 'E' || (p.in[p.pos] >= '0' && p.in[p.pos] <= '9')) {
			p.pos++
		}
		if start == p.pos {
			return nil, p.errorf("unexpected %q", c)
		}
		text := p.in[start:p.pos]
		if _, err := strconv.ParseFloat(text, 64); err != nil {
			return nil, p.errorf("bad number %q", text)
		}
		return &value{kind: 'd', s: text}, nil
	}
}

func hex4(s string) (rune, bool) {
	v, err := strconv.ParseUint(s, 16, 16)
	return rune(v), err == nil
}

// string decodes a JSON string to its bytes; \udc80..\udcff (a lone low surrogate) is the raw
// byte 0x80..0xff, the tracer's surrogate escape.
func (p *parser) string() (string, error) {
	if p.pos >= len(p.in) || p.in[p.pos] != '"' {
		return "", p.errorf("expected a string")
	}
	p.pos++
	var out []byte
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(out), nil
		case c < 0x20:
			return "", p.errorf("control byte in a string")
		case c != '\\':
			out = append(out, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.in) {
			return "", p.errorf("unterminated escape")
		}
		e := p.in[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if p.pos+4 > len(p.in) {
				return "", p.errorf("short \\u escape")
			}
			r, ok := hex4(p.in[p.pos : p.pos+4])
			if !ok {
				return "", p.errorf("bad \\u escape")
			}
			p.pos += 4
			switch {
			case r >= 0xdc80 && r <= 0xdcff:
				out = append(out, byte(r-0xdc00))
			case r >= 0xd800 && r < 0xdc00: // a surrogate pair
				if p.pos+6 > len(p.in) || p.in[p.pos:p.pos+2] != "\\u" {
					return "", p.errorf("lone high surrogate")
				}
				lo, ok := hex4(p.in[p.pos+2 : p.pos+6])
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return "", p.errorf("bad surrogate pair")
				}
				p.pos += 6
				out = utf8.AppendRune(out, 0x10000+(r-0xd800)<<10+(lo-0xdc00))
			case r >= 0xdc00 && r <= 0xdfff:
				return "", p.errorf("lone low surrogate \\u%04x", r)
			default:
				out = utf8.AppendRune(out, r)
			}
		default:
			return "", p.errorf("bad escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

func isInteger(text string) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// float32Marker starts the program's text of a float32 (see gen's xwr.float).
const float32Marker = "\x00f32:"

// sameFloat32: two texts of one float32, bit for bit.
func sameFloat32(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 32)
	y, err2 := strconv.ParseFloat(b, 32)
	return err1 == nil && err2 == nil && math.Float32bits(float32(x)) == math.Float32bits(float32(y))
}

// sameNumber: integers by their exact text; floats (the shortest form on both sides, but spelled
// differently: 1e+06 and 1000000) by their double value, bit for bit.
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	if isInteger(a) && isInteger(b) {
		return false
	}
	x, _ := strconv.ParseFloat(a, 64)
	y, _ := strconv.ParseFloat(b, 64)
	return math.Float64bits(x) == math.Float64bits(y)
}

// zeroFieldsLeftOut counts struct fields of zero size ({} or [], nothing to show) that the tracer
// leaves out of a struct: the only values a comparison lets pass unseen, and they are counted.
var zeroFieldsLeftOut int

// mapsByLen counts maps the tracer showed by their len alone (inside a slice or array, or pairs of
// a type it does not copy, which the manifest says): the len is compared, the pairs cannot be.
// mapPairs counts the pairs compared.
var mapsByLen, mapPairs int

// isMap: the truth's form of a map, {"len": N, "items": [{"key": K, "value": V}...]} (a slice has
// a cap too).
func isMap(v *value) bool {
	items, ok := v.obj["items"]
	if !ok || len(v.keys) != 2 || v.obj["len"] == nil || items.kind != 'a' {
		return false
	}
	for _, p := range items.arr {
		if p.kind != 'o' || len(p.keys) != 2 || p.obj["key"] == nil || p.obj["value"] == nil {
			return false
		}
	}
	return true
}

// diffMap compares a map's pairs as a set: Go iterates in random order, the tracer in memory order.
func diffMap(want, got *value, path string) string {
	if got.kind != 'o' || got.obj["len"] == nil {
		return fmt.Sprintf("%s: want a map %s, got %s", path, want, got)
	}
	if d := diff(want.obj["len"], got.obj["len"], path+".len"); d != "" {
		return d
	}
	items, ok := got.obj["items"]
	if !ok {
		if len(got.keys) != 1 {
			return fmt.Sprintf("%s: want a map %s, got %s", path, want, got)
		}
		mapsByLen++
		return ""
	}
	if items.kind != 'a' || len(items.arr) != len(want.obj["items"].arr) {
		return fmt.Sprintf("%s: want the pairs %s, got %s", path, want.obj["items"], items)
	}
	used := make([]bool, len(items.arr))
	for _, p := range items.arr {
		found := false
		for i, w := range want.obj["items"].arr {
			if !used[i] && diff(w, p, path) == "" {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return fmt.Sprintf("%s: the pair %s is not one of the map's %s", path, p, want.obj["items"])
		}
		mapPairs++
	}
	return ""
}

func zeroSize(v *value) bool {
	switch v.kind {
	case 'a':
		for _, e := range v.arr {
			if !zeroSize(e) {
				return false
			}
		}
		return true
	case 'o':
		for _, k := range v.keys {
			if !zeroSize(v.obj[k]) {
				return false
			}
		}
		return true
	}
	return false
}

// diff says where want and got first differ ("" when they are equal), path naming the place.
func diff(want, got *value, path string) string {
	if want.kind == 's' && got.kind == 'd' && strings.HasPrefix(want.s, float32Marker) {
		if !sameFloat32(strings.TrimPrefix(want.s, float32Marker), got.s) {
			return fmt.Sprintf("%s: want float32 %s, got %s", path, strings.TrimPrefix(want.s, float32Marker), got)
		}
		return ""
	}
	if want.kind != got.kind {
		return fmt.Sprintf("%s: want %s, got %s", path, want, got)
	}
	switch want.kind {
	case 'b':
		if want.b != got.b {
			return fmt.Sprintf("%s: want %s, got %s", path, want, got)
		}
	case 'd':
		if !sameNumber(want.s, got.s) {
			return fmt.Sprintf("%s: want %s, got %s", path, want, got)
		}
	case 's':
		if want.s != got.s {
			return fmt.Sprintf("%s: want %s, got %s", path, want, got)
		}
	case 'a':
		if len(want.arr) != len(got.arr) {
			return fmt.Sprintf("%s: want %d items %s, got %d items %s", path, len(want.arr), want, len(got.arr), got)
		}
		for i := range want.arr {
			if d := diff(want.arr[i], got.arr[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case 'o':
		if isMap(want) {
			return diffMap(want, got, path)
		}
		for _, k := range want.keys {
			g, ok := got.obj[k]
			if !ok && zeroSize(want.obj[k]) {
				zeroFieldsLeftOut++
				continue
			}
			if !ok {
				return fmt.Sprintf("%s: %q missing in %s", path, k, got)
			}
			if d := diff(want.obj[k], g, path+"."+k); d != "" {
				return d
			}
		}
		for _, k := range got.keys {
			if _, ok := want.obj[k]; !ok {
				return fmt.Sprintf("%s: %q unexpected in %s", path, k, got)
			}
		}
	}
	return ""
}

// String is the value as compact JSON (strings with Go's %q, so bytes stay visible), cut short.
func (v *value) String() string {
	s := v.text()
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func (v *value) text() string {
	switch v.kind {
	case 'n':
		return "null"
	case 'b':
		return strconv.FormatBool(v.b)
	case 'd':
		return v.s
	case 's':
		return strconv.Quote(v.s)
	case 'a':
		s := "["
		for i, e := range v.arr {
			if i > 0 {
				s += ","
			}
			s += e.text()
		}
		return s + "]"
	}
	s := "{"
	for i, k := range v.keys {
		if i > 0 {
			s += ","
		}
		s += strconv.Quote(k) + ":" + v.obj[k].text()
	}
	return s + "}"
}
