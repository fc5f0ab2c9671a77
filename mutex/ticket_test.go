package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestTicketRestartedNode: a trigger's ticket taken by one lease is not
// taken again through a node that restarted since the ticket was placed
// and came back with the ticket (a failover to a replica that lacks the
// deletion): that node's vote and commit do not count for the ticket,
// even once its warm-up is over.
func TestTicketRestartedNode(t *testing.T) {
	c := redistest.Start(t, 3)
	r, err := mutex.New(nodesOf(t, c), mutex.WithMaxTTL(time.Second)) // a restarted node warms up ~2 s
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("job")
	place := func(i int, ticket string) {
		t.Helper()
		n, err := engine.NewNode(c.Node(i).Addr(), c.Node(i).Client(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.PlaceTrigger(ctx, keys, lk, ticket, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	lockWith := func(ticket string) (*mutex.Lock, error) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			l, err := r.TryLock(lockwire.WithTickets(ctx, map[string]string{"job": ticket}), "job", time.Second)
			var qe *mutex.QuorumError
			if err == nil || !errors.As(err, &qe) || qe.Op == "commit" || time.Now().After(deadline) {
				return l, err
			}
			<-time.After(200 * time.Millisecond) // nodes warming up: wait for their votes
		}
	}

	<-time.After(5 * time.Second) // a ticket placed in a server's first seconds is not vouched for
	ticket := engine.NewTicket("ops", time.Now())
	place(0, ticket)
	place(1, ticket)
	a, err := lockWith(ticket)
	if err != nil {
		t.Fatalf("the first lease with the ticket: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	place(2, ticket) // a request that reached node 2 late: it still has it
	c.Node(1).Restart()
	place(1, ticket)              // node 1 came back without the deletion
	<-time.After(3 * time.Second) // past node 1's warm-up

	if b, err := lockWith(ticket); err == nil {
		_ = b.Release(ctx)
		t.Fatal("a second lease took the ticket through a node restarted since it was placed")
	}
	fresh := engine.NewTicket("ops", time.Now())
	for i := range 3 {
		place(i, fresh)
	}
	if l, err := lockWith(fresh); err != nil {
		t.Errorf("a ticket placed after the restart: %v", err)
	} else {
		_ = l.Release(ctx)
	}
}
