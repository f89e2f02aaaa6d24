// paths passes values whose fields a capture reaches the way Go's selectors do: promoted through
// embedded structs and embedded pointers at several depths, and results whose fields are read at the
// return (an unnamed *PutResponse, named results). Before each call main writes one JSON line with
// what it passes, and each function writes what it returns: the ground truth the tracer must match.
package main

import (
	"encoding/json"
	"flag"
	"net/url"
	"os"
)

type pubArg struct {
	subject string
	size    int64
}

type parseState struct {
	state int32
	pa    pubArg
}

type Inner struct {
	Deep  int64
	Label string
}

type Mid struct {
	pad int8
	Inner
}

type Extra struct {
	Code int32
	Note string
}

type Base struct {
	ID   int64
	Name string
}

type Left struct{ X int64 }
type Right struct{ X int64 }

// client promotes pa and state (parseState, depth 1), Code and Note through a pointer (*Extra),
// Deep and Label from depth 2 (Mid.Inner), and Name from Base, whose ID the client's own ID hides.
// X is promoted from both Left and Right at depth 1: ambiguous, as Go says.
type client struct {
	kind int8
	parseState
	*Extra
	Mid
	Left
	Right
	ID int64
	Base
}

type ResponseHeader struct {
	ClusterID uint64
	Revision  int64
}

type PutResponse struct {
	Header *ResponseHeader
	Prev   string
}

type Pair[K comparable, V any] struct {
	Key K
	Val V
}

var truth *json.Encoder

func record(function, kind string, values map[string]any) {
	if err := truth.Encode(map[string]any{"function": function, "kind": kind, "values": values}); err != nil {
		panic(err)
	}
}

//go:noinline
func (c *client) processPub(n int) int {
	return n + int(c.pa.size) + int(c.Code)
}

var revision int64 = 100

//go:noinline
func Put(key string, val int64) *PutResponse {
	revision += val
	resp := &PutResponse{Header: &ResponseHeader{ClusterID: uint64(len(key)) * 7, Revision: revision}, Prev: key}
	record("main.Put", "return", map[string]any{"~r0.Header.Revision": resp.Header.Revision,
		"~r0.Header.ClusterID": resp.Header.ClusterID, "~r0.Prev": resp.Prev})
	return resp
}

//go:noinline
func Lookup(key string, into *Base) (resp *PutResponse, found bool, count int) {
	into.ID++
	resp = &PutResponse{Header: &ResponseHeader{ClusterID: 3, Revision: revision + into.ID}, Prev: key + "!"}
	found = len(key)%2 == 0
	count = len(key) * 3
	record("main.Lookup", "return", map[string]any{"resp.Header.Revision": resp.Header.Revision,
		"resp.Prev": resp.Prev, "found": found, "count": count, "into.ID": into.ID})
	return resp, found, count
}

//go:noinline
func Visit(u *url.URL, n int) int {
	return len(u.Path) + len(u.RawQuery) + n
}

//go:noinline
func UsePair(p *Pair[string, int64], scale int) int64 {
	return p.Val * int64(scale)
}

func main() {
	truthPath := flag.String("truth", "", "file to write the ground truth to, one JSON line per value set")
	rounds := flag.Int("rounds", 2, "calls of each function")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	truth = json.NewEncoder(f)
	for i := 0; i < *rounds; i++ {
		c := &client{kind: 2, parseState: parseState{state: int32(10 + i), pa: pubArg{subject: "orders.new", size: int64(128 + i)}},
			Extra: &Extra{Code: int32(7 + i), Note: "extra"}, Mid: Mid{pad: 1, Inner: Inner{Deep: int64(900 + i), Label: "deep"}},
			Left: Left{X: 1}, Right: Right{X: 2}, ID: int64(55 + i), Base: Base{ID: -1, Name: "base-name"}}
		record("main.(*client).processPub", "entry", map[string]any{"c.pa.subject": c.pa.subject, "c.pa.size": c.pa.size,
			"c.state": c.state, "c.Code": c.Code, "c.Note": c.Note, "c.Deep": c.Deep, "c.Label": c.Label,
			"c.ID": c.ID, "c.Name": c.Name, "n": i})
		c.processPub(i)

		key := "key" + string(rune('a'+i))
		record("main.Put", "entry", map[string]any{"key": key, "val": int64(5 + i)})
		Put(key, int64(5+i))

		b := &Base{ID: int64(20 * i), Name: "b"}
		lk := "lookup" + string(rune('a'+i))[:i%2]
		record("main.Lookup", "entry", map[string]any{"key": lk})
		Lookup(lk, b)

		u, _ := url.Parse("http://example.com/ok/a%2Fb?x=1&y=" + string(rune('0'+i)) + "#frag")
		record("main.Visit", "entry", map[string]any{"u.Path": u.Path, "u.RawPath": u.RawPath, "u.RawQuery": u.RawQuery,
			"u.Fragment": u.Fragment, "n": i})
		Visit(u, i)

		p := &Pair[string, int64]{Key: "pair", Val: int64(40 + i)}
		record("main.UsePair", "entry", map[string]any{"p.Key": p.Key, "p.Val": p.Val, "scale": i + 1})
		UsePair(p, i+1)
	}
}
