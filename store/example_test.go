package store_test

import (
	"context"
	"fmt"
	"log"

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
	_, err = store.NewNode("", client)
	fmt.Println(node != nil, err)
	// Output: true redcron: NewNode: empty node name
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
