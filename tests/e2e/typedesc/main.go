// typedesc passes standard-library and its own named types to traced functions, so that a stripped
// build (no DWARF) can be traced with parameters declared by type name alone: the layouts come from
// the runtime's type descriptors. Before each call main writes one JSON line with the values the
// tests capture (the ground truth). The unstripped twin is the DWARF side of the reader's unit test.
package main

import (
	"encoding/json"
	"flag"
	"net/http"
	"net/url"
	"os"
	"strings"
)

type Money struct {
	Units int64
	Cents int8
}

type Customer struct {
	Name string
	VIP  bool
}

// Order embeds Customer and nests a struct, an array and a pointer to a standard-library struct.
type Order struct {
	ID int32
	Customer
	Total Money
	Tags  [2]string
	Link  *url.URL
	Lines []Money
	Notes map[string]int
}

// Receipt is converted to an interface by value only (no pointer, slice or field names it).
type Receipt struct {
	Number int64
	Paid   bool
}

var truth *json.Encoder

// orders holds every Order as an interface value: the compiler writes a type descriptor only for
// types a program converts to an interface (or reaches from one), and stripped tracing needs it.
var orders []any

func record(function string, args map[string]any) {
	if err := truth.Encode(map[string]any{"function": function, "args": args}); err != nil {
		panic(err)
	}
}

//go:noinline
func Handle(r *http.Request) int {
	return len(r.URL.Path) + len(r.Method)
}

//go:noinline
func Place(o *Order, count int) int {
	return int(o.ID) + count + len(o.Name)
}

func main() {
	truthPath := flag.String("truth", "", "file to write the ground truth to, one JSON line per call")
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

	targets := []struct{ method, target, body string }{
		{"GET", "http://example.test/ok/a%2Fb?x=1#frag", ""},
		{"POST", "https://user:pw@api.example.test:8443/v1/items?id=42&q=" + strings.Repeat("z", 10), "payload"},
		{"PUT", "http://[::1]:80/", "xy"},
	}
	for _, t := range targets {
		r, err := http.NewRequest(t.method, t.target, strings.NewReader(t.body))
		if err != nil {
			panic(err)
		}
		record("main.Handle", map[string]any{
			"r.Method": r.Method, "r.URL.Path": r.URL.Path, "r.URL.RawPath": r.URL.RawPath,
			"r.URL.RawQuery": r.URL.RawQuery, "r.URL.Fragment": r.URL.Fragment, "r.URL.Host": r.URL.Host,
			"r.Host": r.Host, "r.ContentLength": r.ContentLength, "r.ProtoMajor": r.ProtoMajor,
		})
		Handle(r)
	}
	for i := int32(1); i <= 2; i++ {
		link, _ := url.Parse("https://shop.test/orders/" + strings.Repeat("9", int(i)))
		o := &Order{ID: 100 + i, Customer: Customer{Name: "Ada " + strings.Repeat("L", int(i)), VIP: i == 2},
			Total: Money{Units: 1<<40 + int64(i), Cents: -int8(i)}, Tags: [2]string{"new", "gift"}, Link: link,
			Lines: []Money{{Units: 3}}, Notes: map[string]int{"a": 1}}
		record("main.Place", map[string]any{
			"o.ID": o.ID, "o.Customer.Name": o.Name, "o.Customer.VIP": o.VIP, "o.Total.Units": o.Total.Units,
			"o.Total.Cents": o.Total.Cents, "o.Tags": o.Tags, "o.Link.Path": o.Link.Path, "o.Link.Host": o.Link.Host,
			"count": int(i) * 7,
		})
		orders = append(orders, o, Receipt{Number: int64(i), Paid: true})
		Place(o, int(i)*7)
	}
}
