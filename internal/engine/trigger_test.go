package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// TestTriggerTicket: an acquisition whose commit carries a trigger's
// ticket takes it (the key is gone, the commit succeeds, and succeeds
// again when sent again); another acquisition with the same ticket, or
// one with a ticket nobody placed, fails its commit.
func TestTriggerTicket(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	ks, err := engine.NewKeyspace("t") // setup's
	if err != nil {
		t.Fatal(err)
	}
	if err := n.PlaceTrigger(ctx, ks, k, "T1", time.Minute); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]engine.KeyKind{k.Trigger: engine.KindTrigger, ks.Triggers(): engine.KindTriggers, k.Ledger: engine.KindLedger, ks.JobTable("ab12"): engine.KindJobTable} {
		if kind, _ := ks.Parse(key); kind != want {
			t.Errorf("Parse(%q) = %v, want %v", key, kind, want)
		}
	}
	if tickets, err := n.Tickets(ctx, ks); err != nil || len(tickets) != 1 || tickets[k.Name] != "T1" {
		t.Fatalf("pending triggers %v, %v; want %s: T1", tickets, err, k.Name)
	}
	other, _ := ks.Lock("other")
	if err := n.PlaceTrigger(ctx, ks, other, "O1", time.Second); err != nil {
		t.Fatal(err)
	}
	if ttl := s.Client(t).PTTL(ctx, ks.Triggers()).Val(); ttl < 50*time.Second {
		t.Errorf("a shorter request cut the pending set's TTL to %v", ttl)
	}
	lockWith := func(ticket string) (string, bool) {
		t.Helper()
		v := engine.Value{Token: engine.NewToken(), Acquired: time.Now()}.String()
		if rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: v, TTL: time.Minute}); err != nil || rep.Status != engine.Acquired {
			t.Fatalf("acquire: %+v, %v", rep, err)
		}
		ok, err := n.Commit(ctx, engine.CommitRequest{Keys: k, Value: v, Fence: 1, Ticket: ticket}, time.Hour)
		if err != nil {
			t.Fatalf("commit with ticket %q: %v", ticket, err)
		}
		return v, ok
	}
	v, ok := lockWith("T1")
	if !ok {
		t.Fatal("commit with the placed ticket: refused")
	}
	if tk, err := n.Ticket(ctx, k); err != nil || tk != "" {
		t.Errorf("ticket after it was taken: %q, %v; want none", tk, err)
	}
	if ok, err := n.Commit(ctx, engine.CommitRequest{Keys: k, Value: v, Fence: 1, Ticket: "T1"}, time.Hour); !ok || err != nil {
		t.Errorf("the same commit sent again: %v, %v; want it to succeed", ok, err)
	}
	if _, err := n.Release(ctx, k, v, 0, time.Hour, engine.LedgerWrite{}); err != nil {
		t.Fatal(err)
	}
	v2, ok := lockWith("T1")
	if ok {
		t.Error("a second acquisition took the same ticket")
	}
	if _, err := n.Release(ctx, k, v2, 0, time.Hour, engine.LedgerWrite{}); err != nil {
		t.Fatal(err)
	}
	if err := n.PlaceTrigger(ctx, ks, k, "T2", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := n.WithdrawTrigger(ctx, k, "T2"); !ok || err != nil {
		t.Fatalf("withdraw: %v, %v", ok, err)
	}
	if _, ok := lockWith("T2"); ok {
		t.Error("an acquisition took a withdrawn ticket")
	}
}
