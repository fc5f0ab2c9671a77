package locks

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// redsyncLocker is github.com/go-redsync/redsync/v4 over its goredis/v9
// pools: one TryLockContext (WithTries(1): a single attempt, no retry) with
// the same TTL (WithExpiry), then UnlockContext. Its other options keep
// their defaults: drift factor 0.01, an attempt bounded by 5% of the TTL,
// and (unless failFast) every attempt waiting for every node.
type redsyncLocker struct {
	rs       *redsync.Redsync
	prefix   string
	failFast bool
}

func newRedsync(failFast bool) func([]*goredislib.Client) (Locker, error) {
	prefix := "lockbench-redsync:"
	if failFast {
		prefix = "lockbench-redsync-ff:"
	}
	return func(clients []*goredislib.Client) (Locker, error) {
		pools := make([]redis.Pool, len(clients))
		for i, c := range clients {
			pools[i] = goredis.NewPool(c)
		}
		return &redsyncLocker{rs: redsync.New(pools...), prefix: prefix, failFast: failFast}, nil
	}
}

type redsyncHeld struct{ m *redsync.Mutex }

func (l *redsyncLocker) TryLock(ctx context.Context, name string) (Held, error) {
	m := l.rs.NewMutex(l.prefix+"{"+name+"}", redsync.WithExpiry(TTL), redsync.WithTries(1), redsync.WithFailFast(l.failFast))
	err := m.TryLockContext(ctx)
	var re *redsync.RedisError
	switch {
	case err == nil:
		return redsyncHeld{m}, nil
	case errors.As(err, &re):
		return nil, err
	}
	return nil, nil // ErrFailed, ErrTaken, ErrNodeTaken: refused by the nodes
}

// Lock implements Waiter with LockContext and redsync's default retries
// (32 tries, 50 to 250 ms apart): it polls.
func (l *redsyncLocker) Lock(ctx context.Context, name string) (Held, error) {
	m := l.rs.NewMutex(l.prefix+"{"+name+"}", redsync.WithExpiry(TTL), redsync.WithFailFast(l.failFast))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

// Flush implements Locker: redsync leaves nothing under way, since its
// TryLockContext and UnlockContext return once their calls are answered.
func (l *redsyncLocker) Flush(context.Context) error { return nil }

func (h redsyncHeld) Release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if !ok {
		return fmt.Errorf("redsync unlock %s: %w", h.m.Name(), errors.Join(errors.New("no quorum"), err))
	}
	return nil
}
