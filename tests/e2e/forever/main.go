// forever starts goroutines whose bodies never return (a loop with no way out, so no RET in their
// code) and exits once each has sent a value. Before each `go` statement main writes the
// arguments it passes to -truth (one JSON line), so a tracer's entry events can be compared with them.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

//go:noinline
func spin(id int, name string, out chan<- int) {
	for i := 0; ; i++ {
		out <- id*1000 + i
	}
}

func main() {
	truthPath := flag.String("truth", "", "file to write each goroutine's arguments to")
	workers := flag.Int("workers", 3, "goroutines to start")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	truth := json.NewEncoder(f)
	out := make(chan int)
	heard := map[int]bool{}
	received := 0
	for id := 1; id <= *workers; id++ {
		name := fmt.Sprintf("worker-%d", id)
		if err := truth.Encode(map[string]any{"id": id, "name": name}); err != nil {
			panic(err)
		}
		go spin(id, name, out)
		// One at a time: the next starts once this one has sent, so it has entered spin.
		for !heard[id] {
			heard[<-out/1000] = true
			received++
		}
	}
	fmt.Println("received", received, "from", len(heard), "goroutines")
}
