package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/metrics"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestLockResults drives every result of acquisitions, extensions and
// releases through a real Redlock.
func TestLockResults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t, 3)
	m, reg := newCollector(t)
	r := c.redlock(t, m)

	a, err := r.TryLock(ctx, "x", 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.TryLock(ctx, "x", 6*time.Second); !errors.Is(err, mutex.ErrHeld) {
		t.Fatalf("second TryLock: %v", err)
	}
	if err := a.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}

	tick := time.Now().Truncate(time.Second)
	o, err := r.TryLock(ctx, "y", 6*time.Second, mutex.Occurrence(tick))
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.TryLock(ctx, "y", 6*time.Second, mutex.Occurrence(tick)); !errors.Is(err, mutex.ErrAlreadyRun) {
		t.Fatalf("TryLock of a tick already run: %v", err)
	}

	// A kept-alive lease whose key disappears from every node is lost at
	// its next extension (after TTL/3 = 2s).
	l, err := r.TryLock(ctx, "z", 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kept, stop := l.KeepAlive(ctx)
	c.del(t, lockKey(t, "z"))
	await(t, kept.Done(), "the lease to be lost after its key was deleted")
	stop() // waits for the keepalive goroutine, which reports the loss
	if err := l.Release(ctx); !errors.Is(err, mutex.ErrLost) {
		t.Fatalf("Release of a lost lock: %v", err)
	}

	compare(t, m, `
		redcron_lock_acquire_attempts_total{result="acquired"} 3
		redcron_lock_acquire_attempts_total{result="already_run"} 1
		redcron_lock_acquire_attempts_total{result="held"} 1
		redcron_lock_acquire_attempts_total{result="no_quorum"} 0
		redcron_lock_acquire_attempts_total{result="paused"} 0
		redcron_lock_extensions_total{result="extended"} 1
		redcron_lock_extensions_total{result="lost"} 1
		redcron_lock_extensions_total{result="no_quorum"} 0
		redcron_lock_releases_total{result="lost"} 1
		redcron_lock_releases_total{result="no_quorum"} 0
		redcron_lock_releases_total{result="released"} 2
		redcron_lock_leases_lost_total 1
	`, "redcron_lock_acquire_attempts_total", "redcron_lock_extensions_total", "redcron_lock_releases_total",
		"redcron_lock_leases_lost_total")
	if got := get(t, reg, "redcron_lock_acquire_duration_seconds"); got != 5 {
		t.Errorf("%v acquire durations observed for 5 attempts", got)
	}
	// Nodes were learned from their answers; none failed. Operations are
	// decided by the first two answers of three, so a node that was always
	// the slowest may have no answer in any event.
	var seen []string
	for _, n := range c.names {
		if _, ok := value(t, m2g(m), "redcron_lock_node_up", "node", n); ok {
			seen = append(seen, n)
		}
	}
	if len(seen) < 2 {
		t.Errorf("nodes learned from answers: %q, want at least 2 of %q", seen, c.names)
	}
	compare(t, m, nodeSeries(seen, always(1), always(0), noErrors), nodeNames...)
	lint(t, m)
}

// TestWarmingUpNodes: fresh servers are quarantined by a Redlock that
// does not trust them (their uptime is below the max TTL), also when they
// answer that another owner holds the lock, and no longer once a vote of
// theirs counts.
func TestWarmingUpNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// One node, so that its answer decides every operation and is always
	// seen (with three, the operation is decided by the first two).
	c := startCluster(t, 1)
	m, _ := newCollector(t)
	untrusting, err := mutex.New(c.nodes, mutex.WithNodeTimeout(time.Second), mutex.WithObserver(m.LockObserver()))
	if err != nil {
		t.Fatal(err)
	}
	// quarantinedAfter checks that after noQuorum failed attempts, and
	// none with another result, every node is up and quarantined.
	quarantinedAfter := func(noQuorum int) {
		t.Helper()
		compare(t, m, fmt.Sprintf(`
			redcron_lock_acquire_attempts_total{result="acquired"} 0
			redcron_lock_acquire_attempts_total{result="already_run"} 0
			redcron_lock_acquire_attempts_total{result="held"} 0
			redcron_lock_acquire_attempts_total{result="no_quorum"} %d
			redcron_lock_acquire_attempts_total{result="paused"} 0
		`, noQuorum)+nodeSeries(c.names, always(1), always(1), noErrors),
			append(nodeNames, "redcron_lock_acquire_attempts_total")...)
	}
	if _, err := untrusting.TryLock(ctx, "q", 6*time.Second); !errors.Is(err, mutex.ErrNoQuorum) {
		t.Fatalf("TryLock on fresh untrusted nodes: %v", err)
	}
	quarantinedAfter(1)

	// Held by an owner that trusts the node (and reports elsewhere): the
	// node is still quarantined for the untrusting one, and the hold does
	// not count as held.
	other, _ := newCollector(t)
	h, err := c.redlock(t, other).TryLock(ctx, "q", 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusting.TryLock(ctx, "q", 6*time.Second); !errors.Is(err, mutex.ErrNoQuorum) {
		t.Fatalf("TryLock of a lock held on fresh untrusted nodes: %v, want ErrNoQuorum", err)
	}
	quarantinedAfter(2)
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}

	l, err := c.redlock(t, m).TryLock(ctx, "q", 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	compare(t, m, nodeSeries(c.names, always(1), always(0), noErrors), nodeNames...)
}

// TestKilledNode: a node killed while a job runs every second shows as
// down, with unreachable errors, while the two others keep the quorum and
// the job keeps running.
func TestKilledNode(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	m, reg := newCollector(t, metrics.WithNodes(c.names...))
	s := newScheduler(t, scheduler.NewRedlockLocker(c.redlock(t, m)), m)
	if err := s.Add("tick", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	// Declared nodes exist, up, before any traffic.
	compare(t, m, nodeSeries(c.names, always(1), always(0), noErrors), nodeNames...)
	start(t, s)
	successes := func() float64 {
		return get(t, reg, "redcron_scheduler_runs_total", "job_name", "tick", "result", "success")
	}
	waitFor(t, "a first run", func() bool { return successes() >= 1 })

	dead := c.names[1]
	c.servers.Node(1).Kill()
	after := successes()
	waitFor(t, "the killed node to show as down, and two more runs", func() bool {
		return get(t, reg, "redcron_lock_node_up", "node", dead) == 0 &&
			get(t, reg, "redcron_lock_node_errors_total", "node", dead, "vote", "unreachable") > 0 &&
			successes() >= after+2
	})
	for i, n := range c.names {
		if i == 1 {
			continue
		}
		if up := get(t, reg, "redcron_lock_node_up", "node", n); up != 1 {
			t.Errorf("live node %s: node_up %v", n, up)
		}
		if errs := sum(t, reg, "redcron_lock_node_errors_total", "node", n); errs != 0 {
			t.Errorf("live node %s: %v errors", n, errs)
		}
	}
	// The two live nodes always decide. (Ticks may be skipped as overlap:
	// a release waits for every node, the dead one for the node timeout,
	// and the run counts as in progress until then.)
	if got := get(t, reg, "redcron_scheduler_skips_total", "job_name", "tick", "reason", "no_quorum"); got != 0 {
		t.Errorf("%v ticks skipped for no quorum with 2 of 3 nodes up", got)
	}
	lint(t, m)
}

// TestWarmingUpEndsWithACountedVote: a node's quarantine gauge, set by a
// vote not counted because the node restarted recently, goes back to 0 at
// its next answer to an acquisition from out of quarantine, a refusal
// (held, already run) as well as a yes: a replica that keeps losing ticks
// to others must not keep it at 1. (A refusal from a node still in
// quarantine keeps it at 1: TestWarmingUpNodes.)
func TestWarmingUpEndsWithACountedVote(t *testing.T) {
	for _, vote := range []string{"yes", "held", "already_run"} {
		t.Run(vote, func(t *testing.T) {
			m, reg := newCollector(t, metrics.WithNodes("n1"))
			o := m.LockObserver()
			o(mutex.Event{Op: "acquire", Name: "j", Err: &mutex.QuorumError{Op: "acquire", Reason: mutex.ErrNoQuorum},
				Nodes: []mutex.NodeResult{{Node: "n1", Vote: "warming_up", WarmingUp: true}}})
			if v, _ := value(t, reg, "redcron_lock_node_warming_up", "node", "n1"); v != 1 {
				t.Fatalf("quarantined %v after a restarted vote, want 1", v)
			}
			o(mutex.Event{Op: "acquire", Name: "j", Nodes: []mutex.NodeResult{{Node: "n1", Vote: vote}}})
			if v, _ := value(t, reg, "redcron_lock_node_warming_up", "node", "n1"); v != 0 {
				t.Errorf("quarantined %v after a counted %s vote, want 0", v, vote)
			}
		})
	}
}

// lockKey returns the lock key of the lock called name under the default
// prefix.
func lockKey(t *testing.T, name string) string {
	t.Helper()
	ks, err := engine.NewKeyspace("")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ks.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	return k.Lock
}
