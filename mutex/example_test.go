package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
)

// Build a Redlock over three independent Redis masters, take a lock, keep
// it alive while working, and pass the fencing token to the storage.
// Before the process exits, Flush waits for releases a slow node has not
// answered yet.
func Example() {
	ctx := context.Background()
	locks := connect()
	defer locks.Flush(ctx)

	l, err := locks.Lock(ctx, "invoice-run", 30*time.Second)
	if err != nil {
		log.Fatal(err) // errors.As(err, new(*mutex.QuorumError)) gives every node's answer
	}
	defer l.Release(context.Background())

	// work is cancelled, with a cause matching mutex.ErrLost, as soon as the
	// lock can no longer be proven.
	work, stop := l.KeepAlive(ctx)
	defer stop()
	if err := writeInvoices(work, l.Fence()); err != nil {
		log.Print(err, context.Cause(work))
	}
}

// connect builds a Redlock over three independent masters. It does no I/O.
func connect() *mutex.Redlock {
	var nodes []*store.Node
	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
		// redcron decides what to retry: no retries nor repeated dials in
		// the client.
		n, err := store.NewNode(addr, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1}))
		if err != nil {
			log.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	locks, err := mutex.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	return locks
}

func writeInvoices(ctx context.Context, fence uint64) error {
	// e.g. UPDATE invoices SET ..., fence = $1 WHERE id = $2 AND fence < $1
	return ctx.Err()
}

// TryLock makes one attempt; its error says why it failed.
func ExampleRedlock_TryLock() {
	ctx := context.Background()
	locks := connect()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	l, err := locks.TryLock(ctx, "report", 10*time.Second, mutex.Occurrence(today.Add(6*time.Hour)))
	switch {
	case errors.Is(err, mutex.ErrAlreadyRun):
		fmt.Println("another replica ran the 06:00 report")
	case errors.Is(err, mutex.ErrHeld):
		var qe *mutex.QuorumError
		errors.As(err, &qe)
		fmt.Println("running on", qe.HolderOwner, "until at least", qe.HolderUntil.Format(time.TimeOnly))
	case err != nil:
		fmt.Println("no quorum:", err) // the tally says which nodes failed
	default:
		defer l.Release(ctx)
		fmt.Println("ours, fence", l.Fence())
	}
}

// At most two report exports at once in the fleet: each holder takes one
// of the lock's two permits, keeps it alive while it works, and releases it.
func ExamplePermits() {
	ctx := context.Background()
	locks := connect()
	permit, err := locks.Lock(ctx, "report-export", 30*time.Second, mutex.Permits(2)) // waits for a free permit
	if err != nil {
		log.Fatal(err) // errors.Is(err, mutex.ErrHeld): all held until ctx ended
	}
	defer permit.Release(context.Background())
	work, stop := permit.KeepAlive(ctx)
	defer stop()
	_ = writeInvoices(work, permit.Fence())
}

// A holder reenters its lock: code running under the lock's KeepAlive
// context that takes the same lock again (here a helper that also runs on
// its own) gets a second handle on the same hold, at once; the lock leaves
// the nodes when the last handle is released.
func ExampleLock_KeepAlive_reentrant() {
	ctx := context.Background()
	locks := connect()
	l, err := locks.Lock(ctx, "ledger-close", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(context.Background())
	held, stop := l.KeepAlive(ctx) // held carries the lock
	defer stop()
	closeDay := func(ctx context.Context) error {
		l, err := locks.Lock(ctx, "ledger-close", 30*time.Second) // reentrant under held
		if err != nil {
			return err
		}
		defer l.Release(context.Background()) // one hold less
		return writeInvoices(ctx, l.Fence())
	}
	if err := closeDay(held); err != nil {
		log.Print(err)
	}
}
