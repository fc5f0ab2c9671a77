package main

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// casDelete deletes KEYS[1] if it still holds ARGV[1].
var casDelete = redis.NewScript(`if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)

// raw is the floor of a two-round-trip Redlock, with no library around it:
// SET NX PX on every node in parallel, then a compare-and-delete script
// (EVALSHA) on every node in parallel, each round waiting for all nodes.
type raw struct {
	clients []*redis.Client
	quorum  int
}

func newRaw(clients []*redis.Client) (Locker, error) {
	return &raw{clients: clients, quorum: len(clients)/2 + 1}, nil
}

func (r *raw) Cycle(ctx context.Context, name string) (bool, error) {
	key := "lockbench-raw:{" + name + "}:lock"
	value := rand.Text()
	start := time.Now()
	granted := make([]bool, len(r.clients))
	errs := make([]error, len(r.clients))
	r.onEach(nil, func(i int, c *redis.Client) {
		cmd := redis.NewBoolCmd(ctx, "set", key, value, "px", lockTTL.Milliseconds(), "nx")
		_ = c.Process(ctx, cmd)
		granted[i], errs[i] = cmd.Result()
	})
	yes := 0
	for _, g := range granted {
		if g {
			yes++
		}
	}
	// Redlock's validity check: the lock counts only while its TTL, less
	// the time spent acquiring and a 1% drift allowance, is left.
	acquired := yes >= r.quorum && time.Since(start) < lockTTL*99/100
	// Release on all nodes when acquired, else only where it was granted.
	targets := granted
	if acquired {
		targets = nil
	}
	r.onEach(targets, func(i int, c *redis.Client) {
		if err := casDelete.Run(ctx, c, []string{key}, value).Err(); err != nil {
			errs[i] = errors.Join(errs[i], err)
		}
	})
	return acquired, errors.Join(errs...)
}

// onEach runs f for every client whose target flag is set (all when targets
// is nil), one goroutine per client, and waits for all of them.
func (r *raw) onEach(targets []bool, f func(i int, c *redis.Client)) {
	var wg sync.WaitGroup
	for i, c := range r.clients {
		if targets == nil || targets[i] {
			wg.Go(func() { f(i, c) })
		}
	}
	wg.Wait()
}
