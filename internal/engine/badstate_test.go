package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// TestBadStateFailsItsLockAlone: a state hash whose mark or fence is not a
// number fails its own lock, with an error naming the key and the field,
// and not the other locks of the same script call (acquire, commit and
// release alike).
func TestBadStateFailsItsLockAlone(t *testing.T) {
	n, s, _ := setup(t)
	ctx := context.Background()
	rc := s.Client(t)
	ks, _ := engine.NewKeyspace("t")
	badMark, _ := ks.Lock("bad-mark")
	badFence, _ := ks.Lock("bad-fence")
	good, _ := ks.Lock("good")
	rc.HSet(ctx, badMark.State, badMark.MarkField(), "abc", badMark.FenceField(), 3)
	rc.HSet(ctx, badFence.State, badFence.FenceField(), "x1")
	huge, _ := ks.Lock("huge-fence")
	rc.HSet(ctx, huge.State, huge.FenceField(), "9007199254740993") // 2^53 + 1: a double cannot tell it from 2^53

	reqs := []engine.AcquireRequest{
		{Keys: badMark, Value: "v0", TTL: time.Minute, Occurrence: 5000},
		{Keys: badFence, Value: "v1", TTL: time.Minute, Occurrence: 5000},
		{Keys: good, Value: "v2", TTL: time.Minute, Occurrence: 5000},
	}
	rs := n.AcquireAll(ctx, reqs)
	for i, want := range []string{"field m|bad-mark is not a whole number below 2^53: abc", "field f|bad-fence is not a whole number below 2^53: x1"} {
		if err := rs[i].Err; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), reqs[i].Keys.State) {
			t.Errorf("acquire %s: %v, want an error naming %s and %q", reqs[i].Keys.Name, err, reqs[i].Keys.State, want)
		}
	}
	if rs[2].Err != nil || rs[2].Reply.Status != engine.Acquired {
		t.Fatalf("acquire of the good lock in the same call: %+v, %v", rs[2].Reply, rs[2].Err)
	}
	if rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: huge, Value: "v3", TTL: time.Minute}); err == nil ||
		!strings.Contains(err.Error(), "below 2^53: 9007199254740993") {
		t.Errorf("acquire with a fence of 2^53 + 1: %+v, %v, want an error", rep, err)
	}

	// Commit and release, the bad lock holding our value so that the
	// scripts reach its state.
	rc.Set(ctx, badMark.Lock, "v0", time.Minute)
	commits := make(chan []engine.CommitResult, 1)
	n.CommitAllAsync(ctx, []engine.CommitRequest{
		{Keys: badMark, Value: "v0", Fence: 9, Occurrence: 6000},
		{Keys: good, Value: "v2", Fence: 9, Occurrence: 6000},
	}, time.Hour, func(rs []engine.CommitResult) { commits <- rs })
	cs := <-commits
	if err := cs[0].Err; err == nil || !strings.Contains(err.Error(), "field m|bad-mark is not a whole number below 2^53") {
		t.Errorf("commit of the bad lock: %v", err)
	}
	if cs[1].Err != nil || !cs[1].Held {
		t.Errorf("commit of the good lock in the same call: %+v", cs[1])
	}

	type answer struct {
		ok  bool
		err error
	}
	answers := []chan answer{make(chan answer, 1), make(chan answer, 1)}
	for i, r := range []struct {
		k engine.LockKeys
		v string
	}{{badMark, "v0"}, {good, "v2"}} { // adjacent releases are merged into one call
		n.ReleaseAsync(ctx, r.k, r.v, 7000, time.Hour, engine.LedgerWrite{}, func(ok bool, err error) { answers[i] <- answer{ok, err} })
	}
	bad, ok := <-answers[0], <-answers[1]
	if bad.err == nil || !strings.Contains(bad.err.Error(), badMark.State) {
		t.Errorf("release of the bad lock: %v, want an error naming its state", bad.err)
	}
	if ok.err != nil || !ok.ok {
		t.Errorf("release of the good lock merged with it: %v, %v", ok.ok, ok.err)
	}
	if mark, _ := rc.HGet(ctx, good.State, good.MarkField()).Result(); mark != "7000" {
		t.Errorf("good lock's mark after release: %q, want 7000", mark)
	}
}
