package mutex_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestPausedOccurrence: a claim of an occurrence refused by a quorum of
// nodes on which the lock is paused fails at once, as none of ErrHeld,
// ErrAlreadyRun and ErrNoQuorum, with the nodes' votes "paused", and Lock
// does not retry it; paused on a minority, the claim is won.
func TestPausedOccurrence(t *testing.T) {
	c := redistest.Start(t, 3)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	k := lockKey(t, r, "job")
	pause := func(nodes ...int) {
		for i := range 3 {
			cl := c.Node(i).Client(t)
			var err error
			if len(nodes) > i && nodes[i] == 1 {
				err = cl.Set(ctx, k.Pause, "now|ops", 0).Err()
			} else {
				err = cl.Del(ctx, k.Pause).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	pause(1, 1, 0)
	tick := time.Now().Truncate(time.Second)
	start := time.Now()
	l, err := r.Lock(ctx, "job", 5*time.Second, mutex.Occurrence(tick))
	if err == nil {
		_ = l.Release(ctx)
		t.Fatal("a tick of a job paused on a majority was won")
	}
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrNotAcquired) || errors.Is(err, mutex.ErrHeld) || errors.Is(err, mutex.ErrAlreadyRun) ||
		errors.Is(err, mutex.ErrNoQuorum) || !errors.As(err, &qe) || count(qe.Nodes, "paused") != 2 || !strings.Contains(err.Error(), "paused") {
		t.Fatalf("claim of a paused job: %v; want a refusal with two paused votes", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Lock retried a paused job for %v", d)
	}
	pause(1, 0, 0) // a minority: the claim is won
	l, err = r.TryLock(ctx, "job", 5*time.Second, mutex.Occurrence(tick))
	if err != nil {
		t.Fatalf("claim of a job paused on one node of three: %v", err)
	}
	_ = l.Release(ctx)
}
