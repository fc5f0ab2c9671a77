package mutex_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestReleaseAtQuorumThenFlush: with one node of five paused, Release
// returns on a majority of answers, without waiting for the paused one (it
// has no answer in the release's event, not a timeout); Flush then waits
// until every node, the resumed one too, got its release: no key is left.
func TestReleaseAtQuorumThenFlush(t *testing.T) {
	c := redistest.Start(t, 5)
	obs := &recorder{}
	r := newRedlock(t, c, mutex.WithObserver(obs))
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
	ev, ok := obs.last(mutex.EventRelease)
	if !ok {
		t.Fatal("no release event")
	}
	yes := 0
	for _, n := range ev.Nodes {
		if n.Vote == mutex.VoteYes {
			yes++
		}
	}
	if yes < r.Quorum() || ev.Nodes[4].Vote != 0 {
		t.Errorf("release votes %+v: want a quorum of yes and no answer from the paused node (not waited for)", ev.Nodes)
	}

	// The paused node's release is under way: Flush waits for it.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = r.Flush(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush with a release under way on a paused node returned %v, want it to wait (deadline exceeded)", err)
	}

	slow.Resume()
	if err := r.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if held := keysOn(t, c, lockKey(t, r, "job").Lock); slices.Contains(held, true) {
		t.Errorf("lock key left after Flush: %v", held)
	}
	// Nothing under way: Flush returns at once, even with a done context.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if err := r.Flush(done); err != nil {
		t.Errorf("Flush with nothing under way: %v", err)
	}
}
