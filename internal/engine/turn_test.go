package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/engine"
)

// TestWaitersTurn: a waiter refused by a holder takes the lock's turn;
// while it is set, any other attempt (a plain acquisition too, whose SET
// is undone) is refused, and a waiter who began later does not take it,
// but one who began earlier acquires the lock, deletes the turn and says
// so on the lock's channel; a release is published there too while a
// client is subscribed, but not the release of a lock claiming an
// occurrence.
func TestWaitersTurn(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	rc := s.Client(t)
	sub := rc.Subscribe(ctx, k.Lock)
	if _, err := sub.Receive(ctx); err != nil { // the confirmation: subscribed from here on
		t.Fatal(err)
	}
	msgs := sub.Channel()
	next := func(want string) {
		t.Helper()
		select {
		case m := <-msgs:
			if m.Payload != want {
				t.Fatalf("message %q on the lock's channel, want %q", m.Payload, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %q message on the lock's channel", want)
		}
	}
	attempt := func(value, waiter string) engine.AcquireReply {
		t.Helper()
		rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: value, TTL: time.Minute, WantInfo: true, Waiter: waiter, TurnTTL: time.Minute})
		if err != nil {
			t.Fatalf("attempt of %q (waiter %q): %v", value, waiter, err)
		}
		return rep
	}
	turn := func() string {
		t.Helper()
		v, err := rc.Get(ctx, k.Turn).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		return v
	}

	attempt("first", "") // the node's connection reads the server: the next plain attempts are plain commands
	n.Release(ctx, k, "first", 0, time.Hour, engine.LedgerWrite{})
	next("released")
	rc.Set(ctx, k.Lock, "holder", time.Minute)
	const w0, w1, w2 = "w0|1000", "w1|2000", "w2|3000"
	if rep := attempt("v1", w1); rep.Status != engine.Held || rep.Holder != "holder" || turn() != w1 {
		t.Fatalf("waiter refused by the holder: %+v, turn %q; want held, turn %s", rep, turn(), w1)
	}
	if rep := attempt("v2", w2); rep.Status != engine.Held || turn() != w1 {
		t.Fatalf("a later waiter: %+v, turn %q; want held, turn still %s", rep, turn(), w1)
	}
	rc.Del(ctx, k.Lock) // the holder goes
	plain := n.Stats().Plain
	if rep := attempt("barger", ""); rep.Status != engine.Held || rep.Holder != "turn "+w1 {
		t.Errorf("an attempt that does not wait, while a waiter's turn is set: %+v; want held by the turn", rep)
	}
	if n.Stats().Plain == plain {
		t.Error("the attempt that does not wait was not sent as plain commands")
	}
	if v, err := rc.Get(ctx, k.Lock).Result(); err != redis.Nil {
		t.Errorf("lock key %q, %v after the refused plain attempt: want none", v, err)
	}
	if rep := attempt("v2", w2); rep.Status != engine.Held || rep.Holder != "turn "+w1 {
		t.Errorf("a later waiter, the lock free: %+v; want held by the turn", rep)
	}
	if rep := attempt("v0", w0); rep.Status != engine.Acquired || turn() != "" {
		t.Fatalf("an earlier waiter: %+v, turn %q; want acquired, the turn deleted", rep, turn())
	}
	next("turn")
	if ok, err := n.Release(ctx, k, "v0", 0, time.Hour, engine.LedgerWrite{}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	next("released")

	// A lock claiming an occurrence: its release is not published; the
	// next message is the waiter's below, who takes the lock on its turn.
	if rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "tick", TTL: time.Minute, Occurrence: 5000}); err != nil || rep.Status != engine.Acquired {
		t.Fatal(rep, err)
	}
	if ok, err := n.Release(ctx, k, "tick", 5000, time.Hour, engine.LedgerWrite{}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rc.Set(ctx, k.Turn, w2, time.Minute)
	if rep := attempt("v2", w2); rep.Status != engine.Acquired {
		t.Fatal(rep)
	}
	next("turn")
}
