package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// lockTTL is the TTL of every lock taken by the benchmark. Locks are
// released at once, so it only has to outlast one cycle.
const lockTTL = 10 * time.Second

// Locker is one lock implementation under test.
type Locker interface {
	// Cycle makes one attempt to acquire the lock called name and, if it
	// got it, releases it. acquired is false when the lock was held by
	// another owner; err reports any other failure (timeout, network,
	// no quorum).
	Cycle(ctx context.Context, name string) (acquired bool, err error)
}

// impl is a named implementation: newLocker builds its Locker over one
// go-redis client per node.
type impl struct {
	name      string
	newLocker func(clients []*redis.Client) (Locker, error)
}

// impls is the registry of implementations, in report order; "raw" is the
// reference the others are compared with. To add another library (e.g.
// redsync), write its Locker in a file of its own and add an entry here.
var impls = []impl{
	{"raw", newRaw},
	{"redcron-nofence", newRedcron(false)},
	{"redcron-fence", newRedcron(true)},
}

func implNames() []string {
	names := make([]string, len(impls))
	for i, im := range impls {
		names[i] = im.name
	}
	return names
}

func lookupImpl(name string) (impl, bool) {
	for _, im := range impls {
		if im.name == name {
			return im, true
		}
	}
	return impl{}, false
}
