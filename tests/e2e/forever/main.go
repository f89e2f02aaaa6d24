// forever starts goroutines whose bodies never return (a loop with no way out, so no RET in their
// code) and exits once it has heard from each inside that body. For each goroutine it writes to
// -truth (one JSON line) the arguments it passed and the goroutine id the body reported, and only
// once the body has reported it: every line is a goroutine that did enter spin, so a tracer's
// entry events can be compared with them one for one.
//
// main is locked to the main thread (init), so every worker runs, and enters spin, on another.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

func init() {
	runtime.LockOSThread()
}

// report is what a spinning goroutine sends: which worker it is, and its goroutine id. The id
// travels as a field of its own: folded into one number with a counter (id*1000 + i), worker 1's
// 1001st send read as worker 2's, and main could hear "from" a worker that had not yet run.
type report struct {
	id   int
	goid int64
}

//go:noinline
func spin(id int, name string, out chan<- report) {
	r := report{id: id, goid: goid()}
	for {
		out <- r
	}
}

// goid reads the calling goroutine's id from the header of its stack trace ("goroutine 18 [...").
func goid() int64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	n, err := strconv.ParseInt(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func main() {
	truthPath := flag.String("truth", "", "file to write each goroutine's arguments and id to")
	workers := flag.Int("workers", 3, "goroutines to start")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	truth := json.NewEncoder(f)
	out := make(chan report)
	goids := map[int]int64{}
	received := 0
	for id := 1; id <= *workers; id++ {
		name := fmt.Sprintf("worker-%d", id)
		go spin(id, name, out)
		// One at a time: the next starts once this one has sent from inside spin. The workers
		// started before it keep sending meanwhile; each report says whose it is.
		for goids[id] == 0 {
			r := <-out
			if r.id < 1 || r.id > id || (goids[r.id] != 0 && goids[r.id] != r.goid) {
				panic(fmt.Sprintf("report %+v from no worker started", r))
			}
			goids[r.id] = r.goid
			received++
		}
		if err := truth.Encode(map[string]any{"id": id, "name": name, "goid": goids[id]}); err != nil {
			panic(err)
		}
	}
	fmt.Println("received", received, "from", len(goids), "goroutines")
}
