// The min_duration and capture_at_return fixture: Handle is called -calls times, every other call
// sleeping -slow-ms, with a nested traced call (Step) before and after the sleep. Each call sets
// w.status and grows buf.b, and the program prints what it did, one JSON line per call, for the
// tracer's output to be compared with.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"
)

type Writer struct {
	name   string
	status int
}

type Buffer struct {
	b []byte
}

type Options struct {
	Level int
	Tag   *int
}

//go:noinline
func Step(n int) int { return n*2 + 1 }

var panicAt = -1

//go:noinline
func Handle(w *Writer, buf *Buffer, i int, sleepMs int, opts Options) int {
	Step(i)
	if i == panicAt {
		panic("call " + fmt.Sprint(i) + " panics") // never returns: its held entry stays behind
	}
	if sleepMs > 0 {
		time.Sleep(time.Duration(sleepMs) * time.Millisecond)
	}
	w.status = 200 + i
	buf.b = append(buf.b, make([]byte, i+1)...)
	Step(i + 100)
	return i * 10
}

// serve calls Handle from the same stack depth every time, and recovers its panic.
//
//go:noinline
func serve(w *Writer, buf *Buffer, i int, sleep int) (r int, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return Handle(w, buf, i, sleep, Options{Level: i}), false
}

func main() {
	calls := flag.Int("calls", 6, "calls of Handle")
	slowMs := flag.Int("slow-ms", 20, "how long every other call sleeps")
	flag.IntVar(&panicAt, "panic-at", -1, "the call of Handle that panics (recovered by its caller)")
	hang := flag.Bool("hang", false, "also call Handle on another goroutine that is still in it at exit")
	flag.Parse()
	out := json.NewEncoder(os.Stdout)
	if *hang {
		started := make(chan bool)
		go func() {
			started <- true
			Handle(&Writer{}, &Buffer{}, 99, 600000, Options{})
		}()
		<-started
		time.Sleep(10 * time.Millisecond) // in Handle's sleep by now
		out.Encode(map[string]any{"i": 99, "hanging": true})
	}
	for i := 0; i < *calls; i++ {
		sleep := 0
		if i%2 == 1 {
			sleep = *slowMs
		}
		w := &Writer{name: fmt.Sprint("w", i)}
		buf := &Buffer{b: make([]byte, 0, 4)}
		start := time.Now()
		r, panicked := serve(w, buf, i, sleep)
		elapsed := time.Since(start)
		out.Encode(map[string]any{"i": i, "sleep_ms": sleep, "status": w.status, "len": len(buf.b),
			"result": r, "elapsed_ns": elapsed.Nanoseconds(), "panicked": panicked})
	}
}
