package mutex_test

import (
	"testing"
	"time"

	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestFenceOneNode: on one node, a fenced acquisition without an
// occurrence commits its fence with its vote, in one round trip; its
// tokens keep increasing, mixed with acquisitions that claim an
// occurrence (vote, then commit), and after the node restarted empty.
func TestFenceOneNode(t *testing.T) {
	c := redistest.Start(t, 1)
	r := newRedlock(t, c)
	node := lockwire.Of(r).Nodes[0]
	ctx := ctxTimeout(t, time.Minute)
	var last uint64
	acquire := func(stage string, opts ...mutex.LockOption) {
		t.Helper()
		before := node.Stats().Pipelines
		l, err := r.TryLock(ctx, "fenced", time.Second, opts...)
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		trips := node.Stats().Pipelines - before
		if l.Fence() <= last {
			t.Fatalf("%s: fence %d after %d: not increasing", stage, l.Fence(), last)
		}
		last = l.Fence()
		if len(opts) == 0 && trips != 1 {
			t.Errorf("%s: %d round trips, want 1 (the fence committed with the vote)", stage, trips)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("%s: release: %v", stage, err)
		}
	}
	for range 3 {
		acquire("without occurrence")
	}
	acquire("claiming an occurrence", mutex.Occurrence(time.Now().Truncate(time.Second)))
	acquire("without occurrence, after a claim")
	c.Node(0).Restart()
	for i := 0; ; i++ { // the first call after the restart fails on its broken connection
		l, err := r.TryLock(ctx, "warm-up", time.Second)
		if err == nil {
			_ = l.Release(ctx)
			break
		}
		if i == 20 {
			t.Fatalf("no lock after the restart: %v", err)
		}
		<-time.After(50 * time.Millisecond)
	}
	acquire("after a restart")
}
