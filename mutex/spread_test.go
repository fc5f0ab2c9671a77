package mutex_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestLockOnEveryNode: a lock is sent to every node, not only to the
// first quorum to answer. One node of five is slow (20 ms each way), so
// that while it works on one pipeline the others' answers decide the next
// acquisitions; their calls to it, queued meanwhile, still go, and every
// lock ends up on all five nodes (once Flush has waited for the late
// answers), not on a bare majority one failure from lost. (A shard's lease
// and its replica's anchor, each on a different bare majority, would let
// the shard's claims find no majority holding both.)
func TestLockOnEveryNode(t *testing.T) {
	c := redistest.Start(t, 5, redistest.WithProxy())
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	warm, err := r.TryLock(ctx, "warm-up", 8*time.Second) // connections dialed, servers read
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c.Node(4).SetLatency(20 * time.Millisecond)
	const n = 32
	locks := make([]*mutex.Lock, n)
	var wg sync.WaitGroup
	for s := range n {
		wg.Go(func() {
			l, err := r.TryLock(ctx, fmt.Sprintf("shard-%d", s), 8*time.Second)
			if err != nil {
				t.Error(err)
			}
			locks[s] = l
		})
	}
	wg.Wait()
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c.Node(4).SetLatency(0)
	missing := 0
	for s := range n {
		k := lockKey(t, r, fmt.Sprintf("shard-%d", s))
		if !c.KeyOn(t, k.Lock)[4] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d locks are not on the slow node", missing, n)
	}
	for _, l := range locks {
		if l != nil {
			_ = l.Release(ctx)
		}
	}
}
