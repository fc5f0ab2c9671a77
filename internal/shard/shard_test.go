package shard

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// countingLocker answers every request with ErrAlreadyRun and counts the
// requests it was asked.
type countingLocker struct{ asked []string }

func (c *countingLocker) Acquire(_ context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	c.asked = append(c.asked, req.Job)
	return nil, mutex.ErrAlreadyRun
}

func (c *countingLocker) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	out := make([]scheduler.LockResult, len(reqs))
	for i, r := range reqs {
		_, out[i].Err = c.Acquire(ctx, r)
	}
	return out
}

// jobIn returns a job name in shard k.
func jobIn(k int) string {
	for i := 0; ; i++ {
		if name := fmt.Sprintf("job-%d", i); Of(name) == k {
			return name
		}
	}
}

// TestGate: a gate turned on asks the nodes only for the jobs of the shards
// it holds, answers ErrNoQuorum (ask again) for a shard it is to hold but
// has not won, ErrHeld for the others' shards, and passes manual runs and
// the jobs not every replica runs; off, it passes everything.
func TestGate(t *testing.T) {
	inner := &countingLocker{}
	g := NewGate(inner)
	tick := time.Unix(1000, 0)
	held, wanted, other := jobIn(1), jobIn(2), jobIn(3)
	reqs := []scheduler.LockRequest{{Job: held, Tick: tick}, {Job: wanted, Tick: tick}, {Job: other, Tick: tick}, {Job: other}}

	g.AcquireAll(context.Background(), reqs)
	if len(inner.asked) != 4 {
		t.Fatalf("gate off: %d of 4 requests passed", len(inner.asked))
	}

	g.on.Store(true)
	g.held[1].Store(true)
	g.want[1].Store(true)
	g.want[2].Store(true)
	inner.asked = nil
	res := g.AcquireAll(context.Background(), reqs)
	if fmt.Sprint(inner.asked) != fmt.Sprint([]string{held, other}) {
		t.Errorf("asked %v; want the held shard's job and the manual run", inner.asked)
	}
	if !errors.Is(res[0].Err, mutex.ErrAlreadyRun) || !errors.Is(res[1].Err, mutex.ErrNoQuorum) ||
		!errors.Is(res[2].Err, mutex.ErrHeld) || !errors.Is(res[3].Err, mutex.ErrAlreadyRun) {
		t.Errorf("results %v; want the inner answer, no quorum, held, the inner answer", res)
	}
	if _, err := g.Acquire(context.Background(), reqs[2]); !errors.Is(err, mutex.ErrHeld) {
		t.Errorf("Acquire of another's shard: %v; want ErrHeld", err)
	}

	shared := map[string]bool{held: true, wanted: true} // other is not run by every replica
	g.shared.Store(&shared)
	inner.asked = nil
	g.AcquireAll(context.Background(), reqs[2:3])
	if len(inner.asked) != 1 {
		t.Errorf("a job not every replica runs was not passed: asked %v", inner.asked)
	}
}

// TestTargets: each of 3 replicas is given 20 to 22 of the 64 shards, and
// when one leaves, most shards of the other two stay where they were.
func TestTargets(t *testing.T) {
	fleet := []string{"replica-a", "replica-b", "replica-c"}
	before := targets(fleet)
	count := map[string]int{}
	for _, r := range before {
		count[r]++
	}
	for _, r := range fleet {
		if count[r] < Count/3-1 || count[r] > Count/3+1 {
			t.Errorf("replica %s targets %d of %d shards: %v", r, count[r], Count, count)
		}
	}
	after, moved := targets(fleet[:2]), 0
	for s := range Count {
		if before[s] != "replica-c" && after[s] != before[s] {
			moved++
		}
	}
	if moved > Count/8 {
		t.Errorf("%d shards of the staying replicas moved when replica-c left", moved)
	}
	if got := targets(nil); got[0] != "" {
		t.Errorf("targets of no fleet: %q", got[0])
	}
}
