package locks

import (
	"context"
	"errors"
	"slices"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// redcronLocker is the library under test: TryLock then Release.
type redcronLocker struct {
	r *mutex.Redlock
}

// newRedcron returns the constructor of a redcron Locker, with fencing
// tokens on (one more round trip, the commit) or off, and with the lock
// ledger on (the default: a record per acquisition, written by the commit
// and the release) or off (mutex.WithLedger(0, 0)). The nodes are trusted
// so that freshly started servers vote at once. Each variant has a key
// prefix of its own.
func newRedcron(fencing, ledger bool) func([]*redis.Client) (Locker, error) {
	prefix := "lockbench-nofence"
	if fencing {
		prefix = "lockbench-fence"
	}
	opts := []mutex.Option{mutex.WithTrustedNodes(), mutex.WithFencing(fencing)}
	if !ledger {
		prefix += "-noledger"
		opts = append(opts, mutex.WithLedger(0, 0))
	}
	opts = append(opts, mutex.WithKeyPrefix(prefix))
	return func(clients []*redis.Client) (Locker, error) {
		r, err := NewRedlock(clients, opts...)
		if err != nil {
			return nil, err
		}
		return redcronLocker{r}, nil
	}
}

// NewRedlock returns a Redlock over one store.Node per client, each named
// after its client's address.
func NewRedlock(clients []*redis.Client, opts ...mutex.Option) (*mutex.Redlock, error) {
	nodes := make([]*store.Node, len(clients))
	for i, c := range clients {
		n, err := store.NewNode(c.Options().Addr, c)
		if err != nil {
			return nil, err
		}
		nodes[i] = n
	}
	return mutex.New(nodes, opts...)
}

func (l redcronLocker) TryLock(ctx context.Context, name string) (Held, error) {
	lk, err := l.r.TryLock(ctx, name, TTL)
	if err == nil {
		return lk, nil
	}
	if refused(err) {
		return nil, nil
	}
	return nil, err
}

// Lock implements Waiter with mutex.Redlock.Lock: woken by the release
// (pub/sub), its retry delay at its default (100 ms).
func (l redcronLocker) Lock(ctx context.Context, name string) (Held, error) {
	return l.r.Lock(ctx, name, TTL)
}

// Flush implements Locker with mutex.Redlock.Flush: the clean-up of
// failed attempts and the releases to slow nodes go on in the background.
func (l redcronLocker) Flush(ctx context.Context) error { return l.r.Flush(ctx) }

// NodeStats implements NodeStatser.
func (l redcronLocker) NodeStats() []engine.Stats {
	stats := make([]engine.Stats, len(lockwire.Of(l.r).Nodes))
	for i, n := range lockwire.Of(l.r).Nodes {
		stats[i] = (*engine.Node)(n).Stats()
	}
	return stats
}

// refused reports whether err is a failed acquisition in which every node
// answered (held, split vote), rather than one where nodes failed.
func refused(err error) bool {
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrNotAcquired) || !errors.As(err, &qe) || qe.Cause != nil {
		return false
	}
	return !slices.ContainsFunc(qe.Nodes, func(r mutex.NodeResult) bool {
		return r.Vote == "timeout" || r.Vote == "unreachable" || r.Vote == "error" || r.Vote == "canceled"
	})
}
