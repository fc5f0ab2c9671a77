package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
)

// triggerWithdraw is the time kept, out of -timeout, to withdraw a request
// no replica took.
const triggerWithdraw = 3 * time.Second

// trigger runs trigger JOB: it places a request (a ticket naming the
// operator) on every node, which one replica with the job takes within
// about a second and runs once, under the job's lock; and it waits, within
// -timeout, for the run's record in the job's ledger, and prints it. A
// request no replica took in time is withdrawn. It needs a majority of the
// nodes to place the request.
func trigger(ctx context.Context, cfg *config, nodes []*engine.Node, keys engine.Keyspace, stdout, stderr io.Writer, hide func(string) string) int {
	lk, err := keys.Lock(cfg.job)
	if err != nil {
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	ticket := who() + "|" + strconv.FormatInt(time.Now().UnixMilli(), 10) + "|" + engine.NewToken()[:8]
	placed := onEveryNode(nodes, func(_ int, n *engine.Node) error { return n.PlaceTrigger(ctx, keys, lk, ticket, cfg.timeout) })
	ok := 0
	for i, err := range placed {
		if err != nil {
			fmt.Fprintf(stderr, "redcronctl: trigger on node %s: %s\n", nodes[i].Name(), hide(err.Error()))
			continue
		}
		ok++
	}
	if ok < len(nodes)/2+1 {
		withdraw(ctx, nodes, lk, ticket)
		fmt.Fprintf(stderr, "redcronctl: trigger %s reached %d of %d nodes, not a majority (withdrawn): run it again\n", cfg.job, ok, len(nodes))
		return exitError
	}
	wait, cancel := context.WithDeadline(ctx, deadlineOf(ctx).Add(-min(triggerWithdraw, cfg.timeout/3)))
	defer cancel()
	run, found := awaitRecord(wait, nodes, lk, ticket)
	if !found {
		withdraw(ctx, nodes, lk, ticket)
		run, found = findRecord(ctx, nodes, lk, ticket) // taken just before the withdrawal
	}
	if !found {
		fmt.Fprintf(stderr, "redcronctl: no replica took the trigger of %s within -timeout %v (is a replica with the job running?); withdrawn\n",
			cfg.job, cfg.timeout)
		return exitError
	}
	if cfg.json {
		doc := struct {
			Job     string `json:"job"`
			Ticket  string `json:"ticket"`
			Replica string `json:"replica"`
			Fence   uint64 `json:"fence"`
			Start   string `json:"start"`
		}{cfg.job, ticket, run.Owner, run.Fence, ledger.Time(run.Start).UTC().Format(time.RFC3339Nano)}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if enc.Encode(doc) != nil {
			return exitError
		}
		return exitClean
	}
	fmt.Fprintf(stdout, "triggered %s: taken by %s (fence %d); its result: redcronctl history %s\n",
		cfg.job, printable(run.Owner), run.Fence, cfg.job)
	return exitClean
}

// awaitRecord polls the job's ledger until it holds the record of the run
// that took ticket, or ctx ends.
func awaitRecord(ctx context.Context, nodes []*engine.Node, lk engine.LockKeys, ticket string) (ledger.Run, bool) {
	for {
		if r, ok := findRecord(ctx, nodes, lk, ticket); ok {
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
func findRecord(ctx context.Context, nodes []*engine.Node, lk engine.LockKeys, ticket string) (ledger.Run, bool) {
	runs, _ := ledger.Read(ctx, nodes, lk, 50)
	for _, r := range runs {
		if r.Ticket == ticket && r.Nodes >= len(nodes)/2+1 {
			return r, true
		}
	}
	return ledger.Run{}, false
}

// withdraw deletes the request where it still holds ticket.
func withdraw(ctx context.Context, nodes []*engine.Node, lk engine.LockKeys, ticket string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), triggerWithdraw)
	defer cancel()
	onEveryNode(nodes, func(_ int, n *engine.Node) error { _, err := n.WithdrawTrigger(ctx, lk, ticket); return err })
}

// onEveryNode calls f on every node in parallel and returns the errors, in
// the nodes' order.
func onEveryNode(nodes []*engine.Node, f func(int, *engine.Node) error) []error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = f(i, n) })
	}
	wg.Wait()
	return errs
}

// deadlineOf returns ctx's deadline (run sets one: -timeout).
func deadlineOf(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(time.Minute)
	}
	return d
}
