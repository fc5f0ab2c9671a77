package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/engine"
)

// TestPlainAcquisitionDefers: an acquisition of one lock without an
// occurrence is sent as plain commands, and whatever they cannot tell is
// decided as the acquire script decides it, the plain SET undone where it
// must not hold: a lock held as a running part of a parent that holds
// (refused, with the part's value), a part whose parent is gone (granted),
// a fence field that is not a number and a lock key of another type (the
// lock's error), a fence counter read after the SET (the reply's fence).
func TestPlainAcquisitionDefers(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	rc := s.Client(t)
	attempt := func(stage string) (engine.AcquireReply, error) {
		t.Helper()
		before := n.Stats().Plain
		rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "mine", TTL: time.Minute})
		if n.Stats().Plain != before+1 {
			t.Fatalf("%s: not sent as plain commands", stage)
		}
		return rep, err
	}
	lockValue := func() string {
		v, err := rc.Get(ctx, k.Lock).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		return v
	}
	reset := func() {
		if err := rc.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// A running part of a parent that holds: refused with the part's value,
	// the SET undone.
	rc.Set(ctx, "parent", "pv", time.Minute)
	rc.HSet(ctx, k.State, "r|"+k.Name, "parent\npv\nrunning-part")
	rep, err := attempt("part held")
	if err != nil || rep.Status != engine.Held || rep.Holder != "running-part" {
		t.Fatalf("part held: %+v, %v; want held by the running part", rep, err)
	}
	if v := lockValue(); v != "" {
		t.Fatalf("part held: the lock key holds %q after the refusal, want none", v)
	}
	// Its parent gone: the part no longer runs, and the lock is granted.
	rc.Del(ctx, "parent")
	if rep, err := attempt("part's parent gone"); err != nil || rep.Status != engine.Acquired || lockValue() != "mine" {
		t.Fatalf("part's parent gone: %+v, %v, lock %q; want acquired", rep, err, lockValue())
	}
	reset()

	// A fence read after the SET.
	rc.HSet(ctx, k.State, k.FenceField(), "41")
	if rep, err := attempt("fenced"); err != nil || rep.Status != engine.Acquired || rep.Fence != 41 {
		t.Fatalf("fenced: %+v, %v; want acquired with fence 41", rep, err)
	}
	reset()

	// A fence that is not a number: the lock's error, naming the field.
	rc.HSet(ctx, k.State, k.FenceField(), "x1")
	if _, err := attempt("bad fence"); err == nil || !strings.Contains(err.Error(), k.FenceField()) {
		t.Fatalf("bad fence: %v; want an error naming %s", err, k.FenceField())
	}
	reset()

	// A lock key of another type.
	rc.HSet(ctx, k.Lock, "a", "b")
	if _, err := attempt("wrong type"); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("wrong type: %v; want WRONGTYPE", err)
	}
}
