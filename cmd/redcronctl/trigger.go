package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redcron/redcron/mutex"
)

// trigger runs trigger JOB: it places a request (a ticket naming the
// operator) on every node, which one replica with the job takes within
// about a second and runs once, under the job's lock; and it waits, within
// -timeout, for the run's record in the job's ledger, and prints it. A
// request no replica took in time is withdrawn. It needs a majority of the
// nodes to place the request. See admin.Client.Trigger; the job's ledger
// records the trigger, by the operator.
func (a *cmd) trigger(ctx context.Context) int {
	cfg, stdout, stderr, hide := a.cfg, a.stdout, a.stderr, a.hide
	run, errs, err := a.c.Trigger(ctx, cfg.job)
	if a.noSuchJob(err) {
		return exitError
	}
	placed := 0
	for i, e := range errs {
		if e != nil {
			fmt.Fprintf(stderr, "redcronctl: trigger on node %s: %s\n", hide(cfg.addrs[i]), hide(errors.Unwrap(e).Error()))
			continue
		}
		placed++
	}
	switch {
	case errors.Is(err, mutex.ErrNoQuorum):
		fmt.Fprintf(stderr, "redcronctl: trigger %s reached %d of %s, not a majority (withdrawn): run it again\n", cfg.job, placed,
			plural(len(cfg.addrs), "node", "nodes"))
		return exitError
	case errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(stderr, "redcronctl: no replica took the trigger of %s within -timeout %v (is a replica with the job running?); withdrawn\n",
			cfg.job, cfg.timeout)
		return exitError
	case err != nil:
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	if cfg.json {
		doc := struct {
			Job     string `json:"job"`
			Ticket  string `json:"ticket"`
			Replica string `json:"replica"`
			Fence   uint64 `json:"fence"`
			Start   string `json:"start"`
		}{cfg.job, run.Ticket, run.Owner, run.Fence, run.Start.UTC().Format(time.RFC3339Nano)}
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
