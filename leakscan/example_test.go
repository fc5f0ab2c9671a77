package leakscan_test

import (
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
)

// A replica wired by hand, as redcron.New wires it: the Redlock asks the
// scanner, before every acquisition and extension, whether the owner's
// heartbeat is fresh; Run keeps the heartbeat and scans every 10 minutes,
// one replica at a time.
func ExampleNew() {
	var nodes []*store.Node
	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
		n, err := store.NewNode(addr, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}))
		if err != nil {
			log.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	var scan *leakscan.Scanner
	locks, err := mutex.New(nodes, mutex.WithOwnerCheck(func(owner string, extending bool) error { return scan.Check(owner, extending) }))
	if err != nil {
		log.Fatal(err)
	}
	scan, err = leakscan.New(locks, "replica-1", leakscan.WithInterval(10*time.Minute),
		leakscan.WithObserver(func(e leakscan.Event) {
			if e.Scan && e.Err == nil {
				fmt.Println("leaked:", e.Leaks)
			}
		}))
	if err != nil {
		log.Fatal(err)
	}
	// A replica then runs it beside the scheduler, whose instance id is
	// "replica-1" too, until it stops: go scan.Run(ctx).
	fmt.Println(scan.Check("replica-1", false)) // no heartbeat sent yet: nothing to refuse
	// Output: <nil>
}
