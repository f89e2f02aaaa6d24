// The spawn fixture: a request loop that starts a goroutine per request, each of which starts a
// goroutine per piece of work, and nested calls on every goroutine. It records, for every call, what
// the program itself knows: its goroutine id (from runtime.Stack's "goroutine N [" header), its
// arguments and result, and for every goroutine it starts, the parent goroutine and the line of the
// go statement. tests/e2e/test_calls.cpp compares the tracer's call ids with these records.
//
// With -early N it first starts N goroutines that wait, says "ready" on stderr and waits for SIGUSR1
// (sent once a tracer has attached by --pid), and then lets them run main.Work(0, k, 2): goroutines
// made before the tracer attached, whose maker the tracer has not seen.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

// Record is one line of the truth file.
type Record struct {
	Kind     string `json:"kind"`               // "call" or "spawn"
	Function string `json:"function,omitempty"` // calls: main.Work or main.Handle
	Goid     uint64 `json:"goid"`               // the goroutine the call ran on, or the one spawned
	Parent   uint64 `json:"parent,omitempty"`   // spawns: the goroutine that ran the go statement
	Line     int    `json:"line,omitempty"`     // spawns: the go statement's line in this file
	Req      int    `json:"req"`
	K        int    `json:"k"`
	Depth    int    `json:"depth"`
	Result   int    `json:"result"`
}

var (
	mu      sync.Mutex
	records []Record
)

func note(r Record) {
	mu.Lock()
	records = append(records, r)
	mu.Unlock()
}

// goid reads the calling goroutine's id from the header runtime.Stack writes: "goroutine 18 [running]:".
func goid() uint64 {
	buf := make([]byte, 64)
	n := runtime.Stack(buf, false)
	fields := bytes.Fields(buf[:n])
	id, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		panic(err)
	}
	return id
}

// Work nests: Work(req, k, 2) calls Work(req, k, 1) calls Work(req, k, 0), all on one goroutine,
// each with its own result, so a return paired with the wrong entry shows.
//
//go:noinline
func Work(req, k, depth int) int {
	r := req*1000 + k*10 + depth
	if depth > 0 {
		r += Work(req, k, depth-1)
	}
	note(Record{Kind: "call", Function: "main.Work", Goid: goid(), Req: req, K: k, Depth: depth, Result: r})
	return r
}

// Handle serves one request on a goroutine of its own: a goroutine per piece of work.
//
//go:noinline
func Handle(req, spawn int) int {
	me := goid()
	var wg sync.WaitGroup
	for k := 0; k < spawn; k++ {
		wg.Add(1)
		_, _, line, _ := runtime.Caller(0)
		go func(k int) { // the go statement: the line after runtime.Caller's
			defer wg.Done()
			note(Record{Kind: "spawn", Goid: goid(), Parent: me, Line: line + 1, Req: req, K: k})
			Work(req, k, 2)
		}(k)
	}
	wg.Wait()
	r := req * 7
	note(Record{Kind: "call", Function: "main.Handle", Goid: me, Req: req, Result: r})
	return r
}

func main() {
	requests := flag.Int("requests", 4, "requests to serve, a goroutine each")
	spawn := flag.Int("spawn", 3, "goroutines each request starts")
	truth := flag.String("truth", "", "write what the program recorded here, a JSON line each")
	early := flag.Int("early", 0, "goroutines to start before saying ready and waiting for SIGUSR1")
	flag.Parse()
	me := goid()
	var wg sync.WaitGroup
	if *early > 0 {
		usr1 := make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		start := make(chan struct{})
		for k := 0; k < *early; k++ {
			wg.Add(1)
			_, _, line, _ := runtime.Caller(0)
			go func(k int) { // the go statement: the line after runtime.Caller's
				defer wg.Done()
				note(Record{Kind: "spawn", Goid: goid(), Parent: me, Line: line + 1, K: k})
				<-start
				Work(0, k, 2)
			}(k)
		}
		os.Stderr.WriteString("ready\n")
		<-usr1
		close(start)
	}
	for req := 1; req <= *requests; req++ {
		wg.Add(1)
		_, _, line, _ := runtime.Caller(0)
		go func(req int) { // the go statement: the line after runtime.Caller's
			defer wg.Done()
			note(Record{Kind: "spawn", Goid: goid(), Parent: me, Line: line + 1, Req: req})
			Handle(req, *spawn)
		}(req)
	}
	wg.Wait()
	if *truth != "" {
		f, err := os.Create(*truth)
		if err != nil {
			panic(err)
		}
		enc := json.NewEncoder(f)
		for _, r := range records {
			enc.Encode(r)
		}
		f.Close()
	}
}
