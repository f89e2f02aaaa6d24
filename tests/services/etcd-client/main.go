// A client of etcd written with the official Go client: it puts -n keys one at a time and prints
// what it sent and what the server answered, one JSON object a line, for the test to compare with
// what weave traced inside the server.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

type record struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	Lease    int64  `json:"lease"`
	Revision int64  `json:"revision"`
}

func main() {
	endpoint := flag.String("endpoint", "", "client URL of the server")
	n := flag.Int("n", 20, "puts to make")
	flag.Parse()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{*endpoint}, DialTimeout: 30 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-client:", err)
		os.Exit(1)
	}
	defer cli.Close()
	// Every third put is bound to a lease, so the traced lease IDs are not all zero.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	lease, err := cli.Grant(ctx, 600)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-client: grant:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	for i := 0; i < *n; i++ {
		key := fmt.Sprintf("/weave/key-%03d", i)
		// Values of varied lengths, one longer than a default capture of a string.
		value := fmt.Sprintf("value %d %s", i, strings.Repeat("v", i*7))
		var opts []clientv3.OpOption
		var leaseID int64
		if i%3 == 2 {
			opts = append(opts, clientv3.WithLease(lease.ID))
			leaseID = int64(lease.ID)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		resp, err := cli.Put(ctx, key, value, opts...)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "etcd-client: put:", err)
			os.Exit(1)
		}
		enc.Encode(record{Key: key, Value: value, Lease: leaseID, Revision: resp.Header.Revision})
	}
}
