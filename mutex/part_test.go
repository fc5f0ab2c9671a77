package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/parts"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// underParent returns ctx carrying parent as every lock's right and
// parent.
func underParent(ctx context.Context, parent *mutex.Lock) context.Context {
	return parts.With(ctx, func(string) (any, any) { return parent, parent })
}

// TestParts: occurrences claimed under a held parent (a shard's lease) are
// won once each, with fences above the lock's own acquisitions and below
// the next; while one runs, the lock itself is held by it; when its parent
// is released, the part's KeepAlive context is cancelled with ErrLost and
// its Release says so; a part of a parent on other nodes, or one taking a
// ticket, is acquired as a lock of its own.
func TestParts(t *testing.T) {
	c := redistest.Start(t, 3)
	nodes := nodesOf(t, c)
	jobs := newRedlockOn(t, nodes, mutex.WithFencing(true))
	shards := newRedlockOn(t, nodes, mutex.WithKeyPrefix("redcron~shards"))
	ctx := ctxTimeout(t, 30*time.Second)

	parent, err := shards.TryLock(ctx, "shard-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := parent.KeepAlive(context.Background())
	defer stop()

	base := time.Now().Truncate(time.Second)
	own, err := jobs.TryLock(ctx, "job", time.Minute, mutex.Occurrence(base))
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Release(ctx); err != nil {
		t.Fatal(err)
	}
	tick := base.Add(time.Second)
	res := jobs.TryLockAll(underParent(ctx, parent), []mutex.Request{
		{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(tick), mutex.Owner("r1")}},
		{Name: "other", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(tick)}},
	})
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("claim under the parent: %v", r.Err)
		}
	}
	part := res[0].Lock
	if part.Fence() <= own.Fence() {
		t.Errorf("part's fence %d not above the lock's earlier %d", part.Fence(), own.Fence())
	}
	again := jobs.TryLockAll(underParent(ctx, parent), []mutex.Request{{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(tick)}}})
	if !errors.Is(again[0].Err, mutex.ErrAlreadyRun) {
		t.Errorf("the same occurrence again: %v, want ErrAlreadyRun", again[0].Err)
	}
	_, err = jobs.TryLock(ctx, "job", time.Minute)
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrHeld) || !errors.As(err, &qe) || qe.HolderOwner != "r1" || !qe.HolderOccurrence.Equal(tick) {
		t.Errorf("the lock while its part runs: %v, want held by r1's part at %v", err, tick)
	}
	next := jobs.TryLockAll(underParent(ctx, parent), []mutex.Request{{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(tick.Add(time.Second))}}})
	if !errors.Is(next[0].Err, mutex.ErrHeld) {
		t.Errorf("the next occurrence while the part runs: %v, want ErrHeld", next[0].Err)
	}
	if err := part.Release(ctx); err != nil {
		t.Fatalf("part's release: %v", err)
	}
	after, err := jobs.TryLock(ctx, "job", time.Minute)
	if err != nil {
		t.Fatalf("the lock after its part's release: %v", err)
	}
	if after.Fence() <= part.Fence() {
		t.Errorf("lock's fence %d after the part's %d", after.Fence(), part.Fence())
	}
	if err := after.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// The parent ends: its part is lost.
	other := res[1].Lock
	octx, ostop := other.KeepAlive(context.Background())
	defer ostop()
	stop()
	if err := parent.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-pctx.Done()
	<-octx.Done()
	if cause := context.Cause(octx); !errors.Is(cause, mutex.ErrLost) {
		t.Errorf("part's context after its parent's release: %v, want ErrLost", cause)
	}
	if err := other.Release(ctx); !errors.Is(err, mutex.ErrLost) {
		t.Errorf("release of a part lost with its parent: %v, want ErrLost", err)
	}

	// A parent on other nodes is no parent: the lock is acquired alone.
	elsewhere := newRedlockOn(t, nodesOf(t, redistest.Start(t, 3)), mutex.WithKeyPrefix("x~shards"))
	foreign, err := elsewhere.TryLock(ctx, "shard-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	alone := jobs.TryLockAll(underParent(ctx, foreign), []mutex.Request{{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(tick.Add(5 * time.Second))}}})
	if alone[0].Err != nil {
		t.Fatal(alone[0].Err)
	}
	if got := c.Node(0).Client(t).Get(ctx, lockKey(t, jobs, "job").Lock).Val(); got != alone[0].Lock.Value() {
		t.Errorf("lock key with a foreign parent: %q, want the lock's own value", got)
	}
}

// TestPartsOutliveTheirRight: a shard's lease (the right to claim) changes
// hands while a part claimed under it runs under its replica's anchor (the
// parent): the part is not lost, and the new holder's claim of the job's
// next occurrence finds it running (held by the part, the previous run
// still going) until it is released.
func TestPartsOutliveTheirRight(t *testing.T) {
	c := redistest.Start(t, 3)
	nodes := nodesOf(t, c)
	jobs := newRedlockOn(t, nodes, mutex.WithFencing(true))
	shards := newRedlockOn(t, nodes, mutex.WithKeyPrefix("redcron~shards"))
	ctx := ctxTimeout(t, 30*time.Second)
	hold := func(name string) (*mutex.Lock, context.Context, func()) {
		l, err := shards.TryLock(ctx, name, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		kctx, stop := l.KeepAlive(context.Background())
		t.Cleanup(stop)
		return l, kctx, stop
	}
	right1, _, stop1 := hold("shard-1")
	anchor1, _, _ := hold("replica-1")
	anchor2, _, _ := hold("replica-2")
	tick := time.Now().Truncate(time.Second)
	req := func(at time.Time) []mutex.Request {
		return []mutex.Request{{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(at), mutex.Owner("r1")}}}
	}
	res := jobs.TryLockAll(parts.With(ctx, func(string) (any, any) { return right1, anchor1 }), req(tick))
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	part := res[0].Lock
	pctx, pstop := part.KeepAlive(context.Background())
	defer pstop()

	stop1()
	if err := right1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	right2, _, _ := hold("shard-1")
	if pctx.Err() != nil {
		t.Fatalf("part lost with its right: %v", context.Cause(pctx))
	}
	under2 := parts.With(ctx, func(string) (any, any) { return right2, anchor2 })
	next := jobs.TryLockAll(under2, req(tick.Add(time.Second)))
	// Held by the part on a quorum, or, where a lease reached only a
	// quorum of the nodes, no quorum: never won.
	if next[0].Err == nil || !errors.Is(next[0].Err, mutex.ErrHeld) && !errors.Is(next[0].Err, mutex.ErrNoQuorum) {
		t.Fatalf("next occurrence by the right's new holder while the part runs: %v, want held or no quorum", next[0].Err)
	}
	stale := jobs.TryLockAll(parts.With(ctx, func(string) (any, any) { return right1, anchor1 }), req(tick.Add(2*time.Second)))
	if stale[0].Err == nil {
		t.Fatal("a claim by the right's former holder was won")
	}
	if err := part.Release(ctx); err != nil {
		t.Fatalf("release of the part after its right changed hands: %v", err)
	}
	after := jobs.TryLockAll(under2, req(tick.Add(3*time.Second)))
	if after[0].Err != nil {
		t.Fatalf("next occurrence after the part's release: %v", after[0].Err)
	}
	if after[0].Lock.Fence() <= part.Fence() {
		t.Errorf("fence %d after the part's %d", after[0].Lock.Fence(), part.Fence())
	}
}

// TestPartEndsBeforeItsRight: a part released while its right (a shard's
// lease) holds leaves its end for the shard's next claim; when the right
// is released first, the end goes before it, so the right's next holder
// (another Redlock) claims the job's next occurrence at once rather than
// finding the part still running; also with a claim of another shard by
// the same replica in flight (slow nodes) at the release, which does not
// carry the end.
func TestPartEndsBeforeItsRight(t *testing.T) {
	for _, midClaim := range []bool{false, true} {
		t.Run(fmt.Sprint("claim in flight ", midClaim), func(t *testing.T) {
			c := redistest.Start(t, 3, redistest.WithProxy())
			nodes := nodesOf(t, c)
			jobs, others := newRedlockOn(t, nodes), newRedlockOn(t, nodes) // this replica's, and the next holder's
			shards := newRedlockOn(t, nodes, mutex.WithKeyPrefix("redcron~shards"))
			ctx := ctxTimeout(t, 30*time.Second)
			hold := func(name string) *mutex.Lock { return holdOnAll(t, ctx, c, shards, name, 10*time.Second) }
			right1, right2, anchor1, anchor2 := hold("shard-1"), hold("shard-2"), hold("replica-1"), hold("replica-2")
			tick := time.Now().Truncate(time.Second)
			req := func(name string, at time.Time) []mutex.Request {
				return []mutex.Request{{Name: name, TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(at)}}}
			}
			res := jobs.TryLockAll(parts.With(ctx, func(string) (any, any) { return right1, anchor1 }), req("job", tick))
			if res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
			if err := res[0].Lock.Release(ctx); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			if midClaim {
				other := "o0" // a job of another shard
				for i := 1; engine.ShardOf(other) == engine.ShardOf("job"); i++ {
					other = fmt.Sprint("o", i)
				}
				for _, s := range c.Nodes() {
					s.SetLatency(150 * time.Millisecond)
				}
				go func() {
					defer close(done)
					jobs.TryLockAll(parts.With(ctx, func(string) (any, any) { return right2, anchor1 }), req(other, tick))
				}()
				time.Sleep(30 * time.Millisecond) // the claim under way: it lasts at least 150 ms
				for _, s := range c.Nodes() {
					s.SetLatency(0)
				}
			} else {
				close(done)
			}
			if err := right1.Release(ctx); err != nil {
				t.Fatal(err)
			}
			<-done
			next := others.TryLockAll(parts.With(ctx, func(string) (any, any) { return hold("shard-1"), anchor2 }), req("job", tick.Add(time.Second)))
			if next[0].Err != nil {
				t.Fatalf("next occurrence by the right's new holder, the part released before the right: %v", next[0].Err)
			}
		})
	}
}
