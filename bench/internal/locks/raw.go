package locks

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// casDelete deletes KEYS[1] if it still holds ARGV[1].
var casDelete = redis.NewScript(`if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)

// raw is the floor of a two-round-trip Redlock, with no library around it:
// SET NX PX on every node in parallel, then a compare-and-delete script
// (EVALSHA) on every node in parallel, each round waiting for all nodes
// (each node bounded only by the client's 1 s read timeout).
type raw struct {
	clients []*redis.Client
	quorum  int
}

func newRaw(clients []*redis.Client) (Locker, error) {
	return &raw{clients: clients, quorum: len(clients)/2 + 1}, nil
}

type rawHeld struct {
	r          *raw
	key, value string
}

func (r *raw) TryLock(ctx context.Context, name string) (Held, error) {
	key := "lockbench-raw:{" + name + "}:lock"
	value := rand.Text()
	start := time.Now()
	granted := make([]bool, len(r.clients))
	errs := make([]error, len(r.clients))
	r.onEach(nil, func(i int, c *redis.Client) {
		cmd := redis.NewBoolCmd(ctx, "set", key, value, "px", TTL.Milliseconds(), "nx")
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
	if yes >= r.quorum && time.Since(start) < TTL*99/100 {
		return &rawHeld{r: r, key: key, value: value}, nil
	}
	r.onEach(granted, func(i int, c *redis.Client) {
		_ = casDelete.Run(ctx, c, []string{key}, value).Err()
	})
	return nil, errors.Join(errs...) // nil when every node answered
}

// Flush implements Locker: raw leaves nothing under way, since TryLock and
// Release wait for every node.
func (r *raw) Flush(context.Context) error { return nil }

func (h *rawHeld) Release(ctx context.Context) error {
	deleted := make([]bool, len(h.r.clients))
	errs := make([]error, len(h.r.clients))
	h.r.onEach(nil, func(i int, c *redis.Client) {
		n, err := casDelete.Run(ctx, c, []string{h.key}, h.value).Int()
		deleted[i], errs[i] = n == 1, err
	})
	yes := 0
	for _, d := range deleted {
		if d {
			yes++
		}
	}
	if yes < h.r.quorum {
		return fmt.Errorf("raw release: %d of %d nodes, quorum %d: %w", yes, len(deleted), h.r.quorum, errors.Join(errs...))
	}
	return nil
}

// onEach runs f for every client whose target flag is set (all when
// targets is nil), one goroutine per client, and waits for all of them.
func (r *raw) onEach(targets []bool, f func(i int, c *redis.Client)) {
	var wg sync.WaitGroup
	for i, c := range r.clients {
		if targets == nil || targets[i] {
			wg.Go(func() { f(i, c) })
		}
	}
	wg.Wait()
}
