package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
)

// ErrNotTaken is matched by the error of a trigger that no replica took in
// time: the request was withdrawn.
var ErrNotTaken = errors.New("no replica took the trigger")

// withdrawTime is the time kept, out of the context's, to withdraw a
// request no replica took.
const withdrawTime = 3 * time.Second

// Triggered is what became of a trigger.
type Triggered struct {
	Ticket string     // the request: who|unix ms|random
	Placed []error    // each node's error placing it (nil where it was)
	Run    ledger.Run // the record of the run that took it, when one did
}

// Trigger places a request that one replica with the job run it once, now,
// under its lock: a ticket naming who, on every node, for ttl. Replicas
// look for requests every second; the lease whose commit takes the ticket
// on a majority runs it, and its ledger record carries the ticket, which
// Trigger waits for until withdrawTime (3 s, or a third of ttl if less)
// before ctx's deadline (or a minute without one). A request placed on fewer than a majority, or that
// no replica took, is withdrawn: the error matches ErrNoMajority or
// ErrNotTaken. The trigger is recorded in the job's ledger (triggered, by
// who, with the run that took it, or the reason none did) once it was
// placed on a majority.
func (c *Cluster) Trigger(ctx context.Context, job, who string, ttl time.Duration) (Triggered, error) {
	lk, err := c.Keys.Lock(job)
	if err != nil {
		return Triggered{}, err
	}
	now := time.Now()
	tr := Triggered{Ticket: engine.NewTicket(who, now)}
	tr.Placed = c.onEveryNode(func(_ int, n *engine.Node) error { return n.PlaceTrigger(ctx, c.Keys, lk, tr.Ticket, ttl) })
	if ok := engine.Answered(tr.Placed); ok < c.Quorum() {
		c.withdraw(ctx, lk, tr.Ticket)
		return tr, fmt.Errorf("%w: the request reached %d of %d nodes (withdrawn)", ErrNoMajority, ok, len(c.Nodes))
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = now.Add(time.Minute)
	}
	wait, cancel := context.WithDeadline(ctx, deadline.Add(-min(withdrawTime, ttl/3)))
	defer cancel()
	run, found := c.awaitRecord(wait, lk, tr.Ticket)
	if !found {
		c.withdraw(ctx, lk, tr.Ticket)
		// Taken just before the withdrawal? Asked even when ctx is done (a
		// closed page), so that a run is never reported as not taken.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTime)
		run, found = c.findRecord(fctx, lk, tr.Ticket)
		cancel()
	}
	rec := engine.Record{Owner: who, Start: now.UnixMilli(), Result: ledger.ActionTriggered}
	if !found {
		rec.Error = "no replica took it; withdrawn"
		c.record(ctx, lk, rec)
		return tr, fmt.Errorf("%w (withdrawn)", ErrNotTaken)
	}
	tr.Run = run
	rec.Run, rec.Fence = run.Run, run.Fence
	c.record(ctx, lk, rec)
	return tr, nil
}

// awaitRecord polls the job's ledger until it holds the record of the run
// that took ticket, or ctx ends.
func (c *Cluster) awaitRecord(ctx context.Context, lk engine.LockKeys, ticket string) (ledger.Run, bool) {
	for {
		if r, ok := c.findRecord(ctx, lk, ticket); ok {
			return r, true
		}
		select {
		case <-ctx.Done():
			return ledger.Run{}, false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// findRecord returns the record of the run that took ticket, once the
// ledger holds it on a majority of the nodes: a commit that failed may
// leave it on fewer, taken back after.
func (c *Cluster) findRecord(ctx context.Context, lk engine.LockKeys, ticket string) (ledger.Run, bool) {
	runs, _ := ledger.Read(ctx, c.Nodes, lk, 50)
	for _, r := range runs {
		if r.Ticket == ticket && r.State != ledger.StateOperator && r.Nodes >= c.Quorum() {
			return r, true
		}
	}
	return ledger.Run{}, false
}

// withdraw deletes the request where it still holds ticket.
func (c *Cluster) withdraw(ctx context.Context, lk engine.LockKeys, ticket string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTime)
	defer cancel()
	c.onEveryNode(func(_ int, n *engine.Node) error { _, err := n.WithdrawTrigger(ctx, lk, ticket); return err })
}
