// initinline: package-level variables built by an inlined constructor (package sem), and the same
// constructor inlined into main. Every call main makes writes its argument to -truth first (one JSON
// line); the initializers' calls are written as what they produced. The tracer's events at
// kv.Int64Value's copies are compared with these, call for call.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"initinline/kv"

	"initinline/sem"
)

func main() {
	truthPath := flag.String("truth", "", "file to write each call's argument to, one JSON line each")
	rounds := flag.Int("rounds", 4, "calls main makes")
	flag.Parse()
	f, err := os.Create(*truthPath)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	truth := json.NewEncoder(f)
	for _, p := range sem.Codes {
		_ = truth.Encode(map[string]any{"site": "init", "v": int64(p.Value.Numeric)})
	}
	var made []kv.KeyValue
	for i := 0; i < *rounds; i++ {
		v := i*7 - 3
		_ = truth.Encode(map[string]any{"site": "main", "v": int64(v)})
		made = append(made, sem.CodeKey.Int(v))
	}
	fmt.Println("init calls", len(sem.Codes), "main calls", len(made))
}
