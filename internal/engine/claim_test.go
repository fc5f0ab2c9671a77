package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

func claimOne(t *testing.T, n *engine.Node, p engine.Parent, k engine.LockKeys, value string, occ int64, fence uint64) engine.AcquireReply {
	t.Helper()
	rec := engine.Record{Job: k.Name, Owner: "r1", Tick: occ, Fence: fence}.Text()
	ch := make(chan []engine.AcquireResult, 1)
	n.ClaimAllAsync(context.Background(), []engine.ClaimRequest{{Right: p, Keys: k, Running: engine.RunningValue(p, value), Occurrence: occ, Fence: fence,
		Ledger: engine.LedgerWrite{New: rec, Score: occ, Cap: 10, Window: time.Hour}}}, nil, time.Hour, func(rs []engine.AcquireResult, _ []bool) { ch <- rs })
	rs := <-ch
	if rs[0].Err != nil {
		t.Fatalf("claim %s at %d: %v", k.Name, occ, rs[0].Err)
	}
	if rs[0].Reply.Info == nil {
		t.Errorf("claim %s at %d: no server info", k.Name, occ)
	}
	return rs[0].Reply
}

func free(t *testing.T, n *engine.Node, k engine.LockKeys, running string) bool {
	t.Helper()
	ch := make(chan []engine.CommitResult, 1)
	n.FreeAllAsync(context.Background(), []engine.FreeRequest{{Keys: k, Running: running}}, func(rs []engine.CommitResult) { ch <- rs })
	rs := <-ch
	if rs[0].Err != nil {
		t.Fatalf("free %s: %v", k.Name, rs[0].Err)
	}
	return rs[0].Held
}

// TestClaimParts: a part is claimed while its parent holds, once per
// occurrence, with a fence above the counter; while it runs, neither a
// second part nor the lock itself is had, and once freed (or once its
// parent is gone) both are.
func TestClaimParts(t *testing.T) {
	n, s, k := setup(t)
	rc := s.Client(t)
	ctx := context.Background()
	p := engine.Parent{Key: "t~shards:shard-1", Value: "parent-1"}
	rc.Set(ctx, p.Key, p.Value, time.Minute)

	if rep := claimOne(t, n, p, k, "part-a", 1000, 5); rep.Status != engine.Acquired {
		t.Fatalf("first claim: %v", rep.Status)
	}
	if rep := claimOne(t, n, p, k, "part-b", 2000, 6); rep.Status != engine.Held || rep.Holder != "part-a" {
		t.Errorf("claim while part-a runs: %v %q, want held by part-a", rep.Status, rep.Holder)
	}
	rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "lock-v", TTL: time.Minute})
	if err != nil || rep.Status != engine.Held || rep.Holder != "part-a" {
		t.Errorf("the lock while part-a runs: %+v, %v; want held by part-a", rep, err)
	}
	if !free(t, n, k, engine.RunningValue(p, "part-a")) {
		t.Error("free of a running part: not running")
	}
	if free(t, n, k, engine.RunningValue(p, "part-a")) {
		t.Error("second free: still running")
	}
	if rep := claimOne(t, n, p, k, "part-c", 1000, 7); rep.Status != engine.AlreadyRun {
		t.Errorf("claim of a claimed occurrence: %v, want already run", rep.Status)
	}
	if rep := claimOne(t, n, p, k, "part-d", 2000, 5); rep.Status != engine.FenceAhead || rep.Fence != 5 {
		t.Errorf("claim with a fence at the counter: %v (counter %d), want fence ahead at 5", rep.Status, rep.Fence)
	}
	if rep := claimOne(t, n, p, k, "part-e", 2000, 8); rep.Status != engine.Acquired {
		t.Fatalf("claim after the free: %v", rep.Status)
	}
	// The parent goes: the part ends with it, for the lock and for claims.
	rc.Set(ctx, p.Key, "parent-2", time.Minute)
	if rep := claimOne(t, n, p, k, "part-f", 3000, 9); rep.Status != engine.ParentLost || rep.Holder != "parent-2" {
		t.Errorf("claim under a lost parent: %v %q, want parent lost to parent-2", rep.Status, rep.Holder)
	}
	p2 := engine.Parent{Key: p.Key, Value: "parent-2"}
	if rep := claimOne(t, n, p2, k, "part-g", 3000, 9); rep.Status != engine.Acquired {
		t.Errorf("claim under the new parent while the old one's part is left: %v", rep.Status)
	}
	rc.Del(ctx, p.Key)
	rep, err = n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "lock-v", TTL: time.Minute})
	if err != nil || rep.Status != engine.Acquired {
		t.Errorf("the lock once the parent is gone: %+v, %v", rep, err)
	}
	if rep := claimOne(t, n, p2, k, "part-h", 4000, 10); rep.Status != engine.ParentLost {
		t.Errorf("claim without its parent: %v", rep.Status)
	}
	// Pause.
	rc.Set(ctx, p.Key, p2.Value, time.Minute)
	rc.Del(ctx, k.Lock)
	free(t, n, k, engine.RunningValue(p2, "part-g"))
	rc.Set(ctx, k.Pause, "op", 0)
	if rep := claimOne(t, n, p2, k, "part-i", 5000, 11); rep.Status != engine.Paused {
		t.Errorf("claim of a paused lock: %v", rep.Status)
	}
}

// TestClaimNeedsItsParent: the holder of the right claims no part on a
// node where the part's parent (its replica's anchor) does not hold: the
// part would not run there (its running value counts only while its parent
// holds), so a claim won with that node's vote would leave the job free
// for another holder there.
func TestClaimNeedsItsParent(t *testing.T) {
	n, s, k := setup(t)
	rc := s.Client(t)
	ctx := context.Background()
	right := engine.Parent{Key: "t~shards:shard-1", Value: "right-1"}
	anchor := engine.Parent{Key: "t~shards:replica-1", Value: "anchor-1"}
	rc.Set(ctx, right.Key, right.Value, time.Minute)
	ch := make(chan []engine.AcquireResult, 1)
	n.ClaimAllAsync(ctx, []engine.ClaimRequest{{Right: right, Keys: k, Running: engine.RunningValue(anchor, "part-a"), Occurrence: 1000, Fence: 5}},
		nil, time.Hour, func(rs []engine.AcquireResult, _ []bool) { ch <- rs })
	rs := <-ch
	if rs[0].Err != nil || rs[0].Reply.Status != engine.ParentLost {
		t.Fatalf("claim under a parent that does not hold: %+v, %v; want parent lost", rs[0].Reply, rs[0].Err)
	}
	if f := rc.HMGet(ctx, k.State, "r|"+k.Name, "m|"+k.Name).Val(); f[0] != nil || f[1] != nil {
		t.Errorf("state after the refused claim: running %v, mark %v; want neither", f[0], f[1])
	}
}
