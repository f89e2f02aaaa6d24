// A client of NATS written with the official Go client: it subscribes to "weave.>", publishes -n
// messages (every other with a reply subject), waits until it has received each back, and prints
// what it sent, one JSON object a line, for the test to compare with what weave traced inside the server.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

type record struct {
	Subject string `json:"subject"`
	Reply   string `json:"reply"`
	Size    int    `json:"size"`
}

func main() {
	url := flag.String("url", "", "server URL")
	n := flag.Int("n", 20, "messages to publish")
	flag.Parse()
	nc, err := nats.Connect(*url, nats.Timeout(30*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "nats-client:", err)
		os.Exit(1)
	}
	defer nc.Close()
	got := make(chan *nats.Msg, *n)
	if _, err := nc.ChanSubscribe("weave.>", got); err != nil {
		fmt.Fprintln(os.Stderr, "nats-client: subscribe:", err)
		os.Exit(1)
	}
	if err := nc.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "nats-client: flush:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	for i := 0; i < *n; i++ {
		m := &nats.Msg{Subject: fmt.Sprintf("weave.orders.%d", i), Data: []byte(strings.Repeat("x", i*13))}
		if i%2 == 1 {
			m.Reply = fmt.Sprintf("_INBOX.weave.%d", i)
		}
		if err := nc.PublishMsg(m); err != nil {
			fmt.Fprintln(os.Stderr, "nats-client: publish:", err)
			os.Exit(1)
		}
		enc.Encode(record{Subject: m.Subject, Reply: m.Reply, Size: len(m.Data)})
	}
	for i := 0; i < *n; i++ {
		select {
		case <-got:
		case <-time.After(time.Minute):
			fmt.Fprintln(os.Stderr, "nats-client: a message never came back")
			os.Exit(1)
		}
	}
}
