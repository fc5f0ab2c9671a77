package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
)

// shardPair returns the keys of two locks of one shard.
func shardPair(t *testing.T, a string) (engine.LockKeys, engine.LockKeys) {
	t.Helper()
	ks, _ := engine.NewKeyspace("t")
	ka, _ := ks.Lock(a)
	for i := range 100000 {
		kb, _ := ks.Lock(fmt.Sprintf("%s-%d", a, i))
		if kb.State == ka.State && kb.Name != a {
			return ka, kb
		}
	}
	t.Fatal("no second lock in the shard")
	return ka, ka
}

// shardRun runs one occurrence of the lock on the node, as the mutex does:
// acquire, commit (fence, mark, started record), and, unless keep, release
// (final record with a run id, replacing the started one). It returns the
// value and the started record's text.
func shardRun(t *testing.T, n *engine.Node, k engine.LockKeys, occ int64, fence uint64, cap int, stateTTL time.Duration, keep bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	value := fmt.Sprintf("v-%s-%d", k.Name, occ)
	rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: value, TTL: time.Minute, Occurrence: occ})
	if err != nil || rep.Status != engine.Acquired {
		t.Fatalf("acquire %s at %d: %+v, %v", k.Name, occ, rep, err)
	}
	started := engine.Record{Job: k.Name, Owner: "r1", Tick: occ, Fence: fence}.Text()
	w := engine.LedgerWrite{New: started, Score: occ, Cap: cap, Window: time.Hour}
	if ok, err := n.Commit(ctx, engine.CommitRequest{Keys: k, Value: value, Fence: fence, Occurrence: occ, Ledger: w}, stateTTL); !ok || err != nil {
		t.Fatalf("commit %s at %d: %v, %v", k.Name, occ, ok, err)
	}
	if !keep {
		shardRelease(t, n, k, value, occ, fence, started, cap, stateTTL)
	}
	return value, started
}

func shardRelease(t *testing.T, n *engine.Node, k engine.LockKeys, value string, occ int64, fence uint64, started string, cap int, stateTTL time.Duration) {
	t.Helper()
	final := engine.Record{Job: k.Name, Owner: "r1", Tick: occ, Fence: fence, Run: "run", Result: "success"}.Text()
	w := engine.LedgerWrite{Old: started, New: final, Score: occ, Cap: cap, Window: time.Hour}
	if ok, err := n.Release(context.Background(), k, value, occ, stateTTL, w); !ok || err != nil {
		t.Fatalf("release %s at %d: %v, %v", k.Name, occ, ok, err)
	}
}

// TestShardStateTTLOnlyGrows: a lock's mark must be kept for the
// state TTL its commit asked for, whatever other locks of its shard ask
// later (a second Redlock on the same nodes, WithStateTTL(5m) for short
// locks; a rolling deploy that changes the option): the shard's state
// TTL only grows. Otherwise the occurrence could be won again, within its
// reach, once the shard's state expired.
func TestShardStateTTLOnlyGrows(t *testing.T) {
	n, s, _ := setup(t)
	rc := s.Client(t)
	ctx := context.Background()
	ka, kb := shardPair(t, "long")
	shardRun(t, n, ka, 1000, 1, 20, time.Hour, false)
	shardRun(t, n, kb, 1000, 1, 20, 5*time.Minute, false)
	if ttl := rc.PTTL(ctx, ka.State).Val(); ttl < 59*time.Minute {
		t.Errorf("state TTL after a's commit (1h) and b's (5m): %v; a's mark would go before its hour", ttl)
	}
}

// TestShardLedgerDropFloor: a long run of lock a whose started
// record was trimmed from the shard's ledger (other locks' records pushed
// it out) ends: its release puts its final record back at a's tick, below
// the records the trim dropped. The missed-tick check, which judges a tick
// only above the highest score the shard's ledger dropped, must not call missed
// the ticks of b whose records were dropped: they ran.
func TestShardLedgerDropFloor(t *testing.T) {
	n, _, _ := setup(t)
	ctx := context.Background()
	ka, kb := shardPair(t, "long")
	const cap = 1 // per lock: 2 locks, 2 records kept
	t0 := int64(1_000_000)
	va, started := shardRun(t, n, ka, t0, 1, cap, time.Hour, true)
	var due []time.Time
	for i := range 6 {
		tick := t0 + int64(i+1)*1000
		shardRun(t, n, kb, tick, uint64(i+1), cap, time.Hour, false)
		due = append(due, time.UnixMilli(tick))
	}
	shardRelease(t, n, ka, va, t0, 1, started, cap, time.Hour)

	byJob, dropped, err := n.ShardLedger(ctx, ka)
	if err != nil {
		t.Fatal(err)
	}
	copies := []ledger.Copy{{Entries: byJob[kb.Name], Since: dropped + 1}} // as leakscan's checkMissed builds it
	if m := ledger.Missed(due, copies, 1, 1, nil, ""); len(m) > 0 {
		t.Errorf("highest score dropped %d; %d of b's ticks that ran called missed, first %d (b's records kept: %d)",
			dropped, len(m), m[0].Tick, len(byJob[kb.Name]))
	}
}
