package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// bsmLocker is github.com/bsm/redislock, a lock on one Redis server:
// Obtain without retries (its default: one attempt, a Lua script that
// sets the key with NX PX, or resets its TTL when the caller's token
// already holds it), then Release (a compare-and-delete script). It has
// no quorum, so it is measured on one node only (Impl.SingleNode).
type bsmLocker struct {
	c *redislock.Client
}

func newBSM(clients []*redis.Client) (Locker, error) {
	if len(clients) != 1 {
		return nil, fmt.Errorf("bsm/redislock locks on one node, not %d", len(clients))
	}
	return bsmLocker{redislock.New(clients[0])}, nil
}

func (l bsmLocker) TryLock(ctx context.Context, name string) (Held, error) {
	lk, err := l.c.Obtain(ctx, "lockbench-bsm:{"+name+"}", TTL, nil)
	switch {
	case err == nil:
		return bsmHeld{lk}, nil
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, nil
	}
	return nil, err
}

// Lock implements Waiter with Obtain retrying every 100 ms (redcron's
// default retry delay; redislock's default is not to retry) until ctx is
// done: it polls.
func (l bsmLocker) Lock(ctx context.Context, name string) (Held, error) {
	lk, err := l.c.Obtain(ctx, "lockbench-bsm:{"+name+"}", TTL, &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
	if err != nil {
		return nil, err
	}
	return bsmHeld{lk}, nil
}

// Flush implements Locker: redislock leaves nothing under way.
func (bsmLocker) Flush(context.Context) error { return nil }

type bsmHeld struct{ lk *redislock.Lock }

func (h bsmHeld) Release(ctx context.Context) error { return h.lk.Release(ctx) }
