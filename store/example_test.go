package store_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/store"
)

// A Node wraps a go-redis client you configure (TLS, ACL, Sentinel or
// Cluster); NewNode does no I/O.
func ExampleNewNode() {
	client := redis.NewClient(&redis.Options{Addr: "redis-a:6379", MaxRetries: -1, DialerRetries: 1})
	node, err := store.NewNode("redis-a:6379", client)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(node.Name())
	// Output: redis-a:6379
}

// Every key of a lock shares a Redis Cluster hash tag.
func ExampleKeyspace_Lock() {
	ks, err := store.NewKeyspace("billing")
	if err != nil {
		log.Fatal(err)
	}
	k, err := ks.Lock("nightly-invoices")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(k.Lock)
	fmt.Println(k.State)
	_, err = ks.Lock("bad{name}")
	fmt.Println(err)
	// Output:
	// billing:{nightly-invoices}:lock
	// billing:{nightly-invoices}:state
	// store: lock name "bad{name}": character '{' not allowed
}

// A lock value says who holds the lock and since when, for the leak scan.
func ExampleParseValue() {
	v := store.Value{Token: "0123456789abcdef0123456789abcdef", Acquired: time.UnixMilli(1795240000000), Owner: "billing-7f9c"}
	got, err := store.ParseValue(v.String())
	fmt.Println(v.String())
	fmt.Println(got.Owner, got.Acquired.UTC().Format(time.RFC3339), err)
	// Output:
	// rc1|0123456789abcdef0123456789abcdef|1795240000000|0|billing-7f9c
	// billing-7f9c 2026-11-21T05:46:40Z <nil>
}

// The storage side of fencing: a write carries the run's fencing token and
// is refused once a write with a larger token came first.
func ExampleFencedSet() {
	ctx := context.Background()
	data := redis.NewClient(&redis.Options{Addr: "data:6379"})
	var fence uint64 = 1795240000123456 // scheduler.RunInfo.Fence or mutex.Lock.Fence
	ok, err := store.FencedSet(ctx, data, "report:latest", fence, "contents")
	if err != nil {
		log.Fatal(err)
	}
	if !ok {
		log.Print("a newer run wrote first; this run's lease had ended")
	}
}
