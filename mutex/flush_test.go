package mutex_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redis/go-redis/v9"
)

// TestReleaseAtQuorumThenFlush: with one node of five paused, Release
// returns on a majority of answers, without waiting for the paused one (it
// has no answer in the release's event, not a timeout); Flush then waits
// until every node, the resumed one too, got its release: no key is left.
func TestReleaseAtQuorumThenFlush(t *testing.T) {
	c := redistest.Start(t, 5)
	obs := &recorder{}
	r := newRedlock(t, c, mutex.WithObserver(obs.ObserveLock))
	ctx := ctxTimeout(t, 30*time.Second)
	slow := c.Node(4)

	l, err := r.TryLock(ctx, "job", 10*time.Second, mutex.Occurrence(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	slow.Pause()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release with one node paused: %v", err)
	}
	ev, ok := obs.last("release")
	if !ok {
		t.Fatal("no release event")
	}
	yes := 0
	for _, n := range ev.Nodes {
		if n.Vote == "yes" {
			yes++
		}
	}
	if yes < len(lockwire.Of(r).Nodes)/2+1 || ev.Nodes[4].Vote != "" {
		t.Errorf("release votes %+v: want a quorum of yes and no answer from the paused node (not waited for)", ev.Nodes)
	}

	// The paused node's release is under way: Flush waits for it.
	flushWaitsFor(ctx, t, r, slow, "a release")
	if held := c.KeyOn(t, lockKey(t, r, "job").Lock); slices.Contains(held, true) {
		t.Errorf("lock key left after Flush: %v", held)
	}
	// Nothing under way: Flush returns at once, even with a done context.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if err := r.Flush(done); err != nil {
		t.Errorf("Flush with nothing under way: %v", err)
	}
}

// TestReleaseWaitsForTheOutcome: a release that can still turn out lost is
// not decided by a fast failure. Of three nodes, the lock was taken over on
// two, one of which is slow, and the third refuses connections: Release
// waits for the slow node and says lost, not "no quorum".
func TestReleaseWaitsForTheOutcome(t *testing.T) {
	c := redistest.Start(t, 3, redistest.WithProxy())
	r := newRedlockOn(t, nodesWith(t, c, func(i int, cl *redis.Client) *redis.Client {
		if i != 1 {
			return cl
		}
		// No retries: a refused connection fails at once.
		cl = redis.NewClient(&redis.Options{Addr: c.Node(i).Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}))
	ctx := ctxTimeout(t, 30*time.Second)
	l, err := r.TryLock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	takeOver(ctx, t, c, lockKey(t, r, "job").Lock, 0, 2)
	c.Node(1).Cut()
	c.Node(2).SetLatency(50 * time.Millisecond)

	err = l.Release(ctx)
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrLost) || !errors.As(err, &qe) || qe.Nodes[2].Vote != "not_owner" {
		t.Errorf("Release = %v; want ErrLost, with the slow node's answer", err)
	}
}

// TestFlushWaitsForLateAcquisitions: an attempt refused (held on three
// nodes of five) while a paused node has not answered its acquisition is
// abandoned; that node's answer, when it comes, calls for a release. Flush
// waits for the answer and the release: no key of the attempt is left.
func TestFlushWaitsForLateAcquisitions(t *testing.T) {
	c := redistest.Start(t, 5)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, 30*time.Second)
	key := lockKey(t, r, "job").Lock
	takeOver(ctx, t, c, key, 0, 1, 2)
	slow := c.Node(4)
	slow.Pause()
	if _, err := r.TryLock(ctx, "job", 10*time.Second); !errors.Is(err, mutex.ErrHeld) {
		t.Fatalf("TryLock = %v, want ErrHeld", err)
	}
	flushWaitsFor(ctx, t, r, slow, "an acquisition")
	if held := c.KeyOn(t, key); held[3] || held[4] {
		t.Errorf("the refused attempt's key left on nodes 3 or 4: %v", held)
	}
}

// flushWaitsFor checks that Flush waits while slow, paused, has not
// answered what (a call under way on it), and returns once slow is resumed
// and has answered.
func flushWaitsFor(ctx context.Context, t *testing.T, r *mutex.Redlock, slow *redistest.Server, what string) {
	t.Helper()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := r.Flush(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush with %s under way on a paused node returned %v, want it to wait (deadline exceeded)", what, err)
	}
	slow.Resume()
	if err := r.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// takeOver sets key to another owner's value on the given nodes of c, as
// if another process held the lock there.
func takeOver(ctx context.Context, t *testing.T, c *redistest.Cluster, key string, nodes ...int) {
	t.Helper()
	for _, i := range nodes {
		if err := c.Node(i).Client(t).Set(ctx, key, "another owner", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
