package shard

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redcron/redcron/scheduler"
)

// countingLocker answers every request with ErrAlreadyRun and counts the
// requests it was asked.
type countingLocker struct{ asked []string }

func (c *countingLocker) Acquire(_ context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	c.asked = append(c.asked, req.Job)
	return nil, scheduler.ErrAlreadyRun
}

func (c *countingLocker) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	out := make([]scheduler.LockResult, len(reqs))
	for i, r := range reqs {
		_, out[i].Err = c.Acquire(ctx, r)
	}
	return out
}

func (c *countingLocker) Check(scheduler.LockRequest) error { return nil }

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
	if !errors.Is(res[0].Err, scheduler.ErrAlreadyRun) || !errors.Is(res[1].Err, scheduler.ErrNoQuorum) ||
		!errors.Is(res[2].Err, scheduler.ErrHeld) || !errors.Is(res[3].Err, scheduler.ErrAlreadyRun) {
		t.Errorf("results %v; want the inner answer, no quorum, held, the inner answer", res)
	}
	if _, err := g.Acquire(context.Background(), reqs[2]); !errors.Is(err, scheduler.ErrHeld) {
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

// TestTargets: rendezvous hashing gives each of 3 replicas a fair part of
// the shards, and when one leaves only its shards move.
func TestTargets(t *testing.T) {
	fleet := []string{"replica-a", "replica-b", "replica-c"}
	count := map[string]int{}
	before := make([]string, Count)
	for s := range Count {
		before[s] = target(fleet, s)
		count[before[s]]++
	}
	for _, r := range fleet {
		if count[r] < Count/6 || count[r] > Count/2 {
			t.Errorf("replica %s targets %d of %d shards: %v", r, count[r], Count, count)
		}
	}
	for s := range Count {
		after := target(fleet[:2], s)
		if before[s] != "replica-c" && after != before[s] {
			t.Errorf("shard %d moved from %s to %s when replica-c left", s, before[s], after)
		}
	}
}
