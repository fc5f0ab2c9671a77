package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// TestPausedLock: while the lock's pause key exists, a claim of an
// occurrence is refused with the key's value (Paused), and a lock without
// an occurrence (a manual run) is still granted; once it is gone, claims
// are granted again. A pause key is not a leak.
func TestPausedLock(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	c := s.Client(t)
	if err := c.Set(ctx, k.Pause, "1795240000000|ops@host", 0).Err(); err != nil {
		t.Fatal(err)
	}
	v := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Occurrence: 1000}.String()
	rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: v, TTL: time.Minute, Occurrence: 1000})
	if err != nil || rep.Status != engine.Paused || rep.Holder != "1795240000000|ops@host" {
		t.Fatalf("claim of a paused lock: %+v, %v; want Paused with the pause key's value", rep, err)
	}
	if exists, _ := c.Exists(ctx, k.Lock).Result(); exists != 0 {
		t.Fatal("a paused claim set the lock")
	}
	manual := engine.Value{Token: engine.NewToken(), Acquired: time.Now()}.String()
	if rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: manual, TTL: time.Minute}); err != nil || rep.Status != engine.Acquired {
		t.Fatalf("a lock without an occurrence on a paused job: %+v, %v; want acquired", rep, err)
	}
	if _, err := n.Release(ctx, k, manual, 0, time.Hour, engine.LedgerWrite{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Del(ctx, k.Pause).Err(); err != nil {
		t.Fatal(err)
	}
	if rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: v, TTL: time.Minute, Occurrence: 1000}); err != nil || rep.Status != engine.Acquired {
		t.Fatalf("claim after the resume: %+v, %v; want acquired", rep, err)
	}
	ks, _ := engine.NewKeyspace("t")
	if kind, name := ks.Parse(k.Pause); kind != engine.KindPause || name != k.Name {
		t.Errorf("Parse(%q) = %v, %q", k.Pause, kind, name)
	}
}
