// Package locks holds the lock implementations the benchmarks compare,
// behind one interface, over the same go-redis clients (one per node).
package locks

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redis/go-redis/v9"
)

// TTL is the TTL of every lock taken through this package.
const TTL = 10 * time.Second

// Locker is one lock implementation under test.
type Locker interface {
	// TryLock makes one attempt to acquire the lock called name, for TTL.
	// It returns the held lock; (nil, nil) when it was refused because
	// other owners hold it (on a quorum, or in a split vote between
	// contenders), after undoing its partial grants; and an error for any
	// other failure (timeouts, network errors, too few nodes answering).
	TryLock(ctx context.Context, name string) (Held, error)
	// Flush waits until the calls the Locker still has under way after
	// TryLock or Release returned (a failed attempt's clean-up, a release
	// to a node slower than the majority) are answered or given up, or
	// until ctx is done. A benchmark calls it after each measurement,
	// outside the timed part, so that one implementation's leftover work
	// does not run into the next one's measurement. The Lockers have
	// nothing else to close: the clients are the caller's.
	Flush(ctx context.Context) error
}

// FlushTimeout bounds the wait for a Locker's background calls after a
// measurement: redcron gives a release up after at most
// max(10 × node timeout, 1 s), 2.5 s by default.
const FlushTimeout = 10 * time.Second

// FlushAfter waits for l's background calls (Locker.Flush), up to
// FlushTimeout, after a measurement of implementation impl; a failure is
// reported to progress, as a warning.
func FlushAfter(ctx context.Context, impl string, l Locker, progress io.Writer) {
	fctx, cancel := context.WithTimeout(ctx, FlushTimeout)
	defer cancel()
	if err := l.Flush(fctx); err != nil && ctx.Err() == nil {
		fmt.Fprintf(progress, "  warning: %s: background calls still under way after %v: %v\n", impl, FlushTimeout, err)
	}
}

// Held is an acquired lock.
type Held interface {
	// Release deletes the lock where it still holds this acquisition's
	// value. It fails when fewer than a quorum of nodes confirmed it.
	Release(ctx context.Context) error
}

// Waiter is implemented by the Lockers that can wait for a held lock
// (lockbench -wake): Lock returns once it holds the lock called name, for
// TTL, or ctx is done. How each waits is said on its Locker.
type Waiter interface {
	Lock(ctx context.Context, name string) (Held, error)
}

// NodeStatser is implemented by the redcron Lockers: the lock traffic of
// each of their nodes so far (store.Node.Stats), in node order.
type NodeStatser interface {
	NodeStats() []engine.Stats
}

// Impl is a named implementation: New builds its Locker over one go-redis
// client per node. A SingleNode implementation locks on one node only: it
// is left out of the scenarios of several.
type Impl struct {
	Name       string
	New        func(clients []*redis.Client) (Locker, error)
	SingleNode bool
}

// Impls is the registry of implementations, in report order; "raw" is the
// reference the others are compared with. The "-noledger" variants are
// redcron with its lock ledger off, measured against the same name
// without the suffix (NoLedgerSuffix). To add another library, write its
// Locker in a file of its own and add an entry here.
var Impls = []Impl{
	{"raw", newRaw, false},
	{"redcron-nofence", newRedcron(false, true), false},
	{"redcron-fence", newRedcron(true, true), false},
	{"redsync", newRedsync(false), false},
	{"bsm-redislock", newBSM, true},
	{"redsync-failfast", newRedsync(true), false},
	{"redcron-nofence" + NoLedgerSuffix, newRedcron(false, false), false},
	{"redcron-fence" + NoLedgerSuffix, newRedcron(true, false), false},
}

// NoLedgerSuffix ends the names of the redcron variants with the ledger
// off.
const NoLedgerSuffix = "-noledger"

// Names returns the names of the implementations, in report order.
func Names() []string {
	names := make([]string, len(Impls))
	for i, im := range Impls {
		names[i] = im.Name
	}
	return names
}

// Lookup returns the implementation called name.
func Lookup(name string) (Impl, bool) {
	for _, im := range Impls {
		if im.Name == name {
			return im, true
		}
	}
	return Impl{}, false
}

// Parse returns the implementations named in list, comma-separated, in
// its order.
func Parse(list string) ([]Impl, error) {
	var impls []Impl
	for _, n := range strings.Split(list, ",") {
		im, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("unknown implementation %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		impls = append(impls, im)
	}
	return impls, nil
}
