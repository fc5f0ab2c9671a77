package main

import (
	"context"
	"errors"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// redcronLocker is the library under test: TryLock then Release.
type redcronLocker struct {
	r *mutex.Redlock
}

// newRedcron returns the constructor of a redcron Locker, with fencing
// tokens on (one more round trip, the commit) or off. The nodes are
// trusted so that the freshly started servers vote at once.
func newRedcron(fencing bool) func([]*redis.Client) (Locker, error) {
	prefix := "lockbench-nofence"
	if fencing {
		prefix = "lockbench-fence"
	}
	return func(clients []*redis.Client) (Locker, error) {
		nodes := make([]*store.Node, len(clients))
		for i, c := range clients {
			n, err := store.NewNode(c.Options().Addr, c)
			if err != nil {
				return nil, err
			}
			nodes[i] = n
		}
		r, err := mutex.New(nodes, mutex.WithTrustedNodes(), mutex.WithFencing(fencing), mutex.WithKeyPrefix(prefix))
		if err != nil {
			return nil, err
		}
		return redcronLocker{r}, nil
	}
}

func (l redcronLocker) Cycle(ctx context.Context, name string) (bool, error) {
	lk, err := l.r.TryLock(ctx, name, lockTTL)
	switch {
	case errors.Is(err, mutex.ErrHeld):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, lk.Release(ctx)
}
