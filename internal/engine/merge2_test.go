package engine

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/redistest"
)

// sameShard returns a second name whose shard is name's.
func sameShard(t *testing.T, name string) string {
	t.Helper()
	for i := range 10000 {
		other := name + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26))
		if ShardOf(other) == ShardOf(name) {
			return other
		}
	}
	t.Fatal("no name of the same shard")
	return ""
}

func mergeNode(t *testing.T) (*Node, *redis.Client) {
	t.Helper()
	s := redistest.Start(t, 1).Node(0)
	rc := s.Client(t)
	n, err := NewNode(s.Addr(), rc)
	if err != nil {
		t.Fatal(err)
	}
	return n, rc
}

// TestMergedAcquireSameLock: two acquisitions of one lock (two
// goroutines of one process locking the same name, or a TryLockAll with a
// name twice) that the worker merges into one script call: one wins, and
// the other must be told the lock is held, as when they are sent apart,
// not fail with a server error.
func TestMergedAcquireSameLock(t *testing.T) {
	n, _ := mergeNode(t)
	ctx := context.Background()
	ks, _ := NewKeyspace("t")
	k, _ := ks.Lock("job")
	type ans struct {
		rep AcquireReply
		err error
	}
	answers := make([]chan ans, 2)
	calls := make([]*call, 2)
	for i := range calls {
		answers[i] = make(chan ans, 1)
		value := []string{"v1", "v2"}[i]
		calls[i] = &call{ctx: ctx, script: acquireScript, keys: []string{k.Lock, k.State, k.Pause, k.Turn},
			args: []any{"0", k.Name, value, int64(60000), int64(1000), int64(0), int64(1), "", int64(1)}, items: 1, done: func(cmd *redis.Cmd) {
				res, err := acquireScript.answer(cmd, 1)
				var rep AcquireReply
				if err == nil {
					rep, err = parseAcquire(res[2:])
				}
				answers[i] <- ans{rep, err}
			}}
	}
	n.batch.flush(calls)
	a, b := <-answers[0], <-answers[1]
	if a.err != nil || a.rep.Status != Acquired {
		t.Fatalf("first: %+v, %v; want acquired", a.rep, a.err)
	}
	if b.err != nil || b.rep.Status != Held || b.rep.Holder != "v1" {
		t.Errorf("second, merged into the same script call: %+v, %v; want held by v1", b.rep, b.err)
	}
}

// TestMergedReleaseLedgerOffFirst: releases of two locks of one
// shard, merged into one call by the node's worker, the first with a zero
// LedgerWrite: the release of an abandoned acquisition (mutex's round.finish
// releases a lock that lost the vote with strags.ledger unset, i.e. Cap 0,
// Window 0 sent as millis(0) = 1 ms), the second a finished run's release
// carrying its final record. The script takes cap and window of the
// shard's group from its first lock, so the shard's whole ledger (every
// job's history) is given a 1 ms TTL. The second's record must be kept.
func TestMergedReleaseLedgerOffFirst(t *testing.T) {
	n, rc := mergeNode(t)
	ctx := context.Background()
	ks, _ := NewKeyspace("t")
	ka, _ := ks.Lock("a")
	kb, _ := ks.Lock(sameShard(t, "a"))
	rc.Set(ctx, ka.Lock, "va", time.Minute)
	rc.Set(ctx, kb.Lock, "vb", time.Minute)
	done := make(chan struct{}, 2)
	mk := func(k LockKeys, value string, w LedgerWrite) *call {
		return &call{ctx: ctx, script: releaseScript, keys: []string{k.Lock, k.State, k.Ledger},
			args:  []any{int64(3600000), k.Name, value, int64(1000), w.Old, w.New, w.Score, w.Cap, millis(w.Window)},
			items: 1, done: func(*redis.Cmd) { done <- struct{}{} }}
	}
	n.batch.flush([]*call{
		mk(ka, "va", LedgerWrite{}),
		mk(kb, "vb", LedgerWrite{New: `{"job":"` + kb.Name + `","tick":1000}`, Score: 1000, Cap: 20, Window: time.Hour}),
	})
	<-done
	<-done
	card, _ := rc.ZCard(ctx, kb.Ledger).Result()
	ttl, _ := rc.PTTL(ctx, kb.Ledger).Result()
	if card != 1 || ttl < 59*time.Minute {
		t.Errorf("shard ledger after the merged releases: %d records, TTL %v; want b's record, TTL about 1h", card, ttl)
	}
}

// TestPauseKeyOfAnotherType: a pause key that is not a string still
// pauses the lock (the acquire read it with EXISTS before): bad data at a
// pause key must not let ticks run.
func TestPauseKeyOfAnotherType(t *testing.T) {
	n, rc := mergeNode(t)
	ctx := context.Background()
	ks, _ := NewKeyspace("t")
	k, _ := ks.Lock("job")
	rc.HSet(ctx, k.Pause, "by", "op")
	rep, err := n.Acquire(ctx, AcquireRequest{Keys: k, Value: "v", TTL: time.Minute, Occurrence: 1000})
	if err == nil && rep.Status == Acquired {
		t.Errorf("acquire of a lock whose pause key is a hash: %+v; want paused (or an error), not acquired", rep)
	}
}
