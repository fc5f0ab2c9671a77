package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/mutex"
)

// The states of a record (admin.Record.State).
const (
	stateReleased = "released"
	stateLost     = "lost"
	stateMissed   = "missed"
	stateOperator = "operator"
)

// historyRun is one run of history's JSON document.
type historyRun struct {
	Tick     time.Time `json:"tick,omitzero"` // zero for a manual run
	State    string    `json:"state"`         // started, released, lost, missed or operator
	Result   string    `json:"result,omitempty"`
	Replica  string    `json:"replica,omitempty"` // an operator's action: the operator
	RunID    string    `json:"run_id,omitempty"`
	Fence    uint64    `json:"fence,omitempty"`
	Start    time.Time `json:"start,omitzero"` // when the lease's acquisition started
	DelayMS  int64     `json:"start_delay_ms"`
	Duration *float64  `json:"duration_s,omitempty"` // from the start to the release; 0: within its millisecond
	Try      int       `json:"try,omitempty"`
	Error    string    `json:"error,omitempty"`
	Nodes    int       `json:"nodes"` // nodes holding the record
}

// history prints the job's ledger, merged over the nodes, newest first:
// a table, or with -json a document. It exits 2 when fewer than a majority
// of the nodes could be read (the history could miss runs).
func (a *cmd) history(ctx context.Context) int {
	cfg, stdout, stderr, hide := a.cfg, a.stdout, a.stderr, a.hide
	runs, errs, err := a.c.History(ctx, cfg.job, cfg.last)
	if a.noSuchJob(err) {
		return exitError
	}
	read := 0
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(stderr, "redcronctl: node %s not read: %s\n", hide(cfg.addrs[i]), hide(errors.Unwrap(err).Error()))
			continue
		}
		read++
	}
	switch {
	case errors.Is(err, mutex.ErrNoQuorum):
		fmt.Fprintf(stderr, "redcronctl: %d of %s read, not a majority: the history could miss runs\n", read, plural(len(cfg.addrs), "node", "nodes"))
		return exitError
	case err != nil:
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	out := make([]historyRun, len(runs))
	for i, r := range runs {
		out[i] = historyRunOf(r, hide)
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		doc := struct {
			Job  string       `json:"job"`
			Runs []historyRun `json:"runs"`
		}{cfg.job, out}
		if enc.Encode(doc) != nil {
			return exitError
		}
		return exitClean
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TICK\tRESULT\tREPLICA\tFENCE\tDELAY\tDURATION\tTRY\tERROR\n")
	for _, r := range out {
		tick := "manual"
		switch {
		case !r.Tick.IsZero():
			tick = r.Tick.UTC().Format(time.RFC3339)
		case r.State == stateOperator: // when the operator acted
			tick = r.Start.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\n", tick, resultText(r), printable(orDash(r.Replica)), r.Fence,
			delayText(r), durationText(r), r.Try, printable(orDash(r.Error)))
	}
	if err := tw.Flush(); err != nil {
		return exitError
	}
	fmt.Fprintf(stdout, "%s of %q on %d/%s\n", plural(len(out), "record", "records"), cfg.job, read, plural(len(cfg.addrs), "node", "nodes"))
	return exitClean
}

// durationText is a run's duration for the table: "-" until it ended,
// "<1ms" for a run that ended within the millisecond it started in (the
// ledger's precision).
func durationText(r historyRun) string {
	switch {
	case r.Duration == nil:
		return "-"
	case *r.Duration < 0.001:
		return "<1ms"
	}
	return time.Duration(*r.Duration * float64(time.Second)).Round(time.Millisecond).String()
}

// delayText is how long after its tick a run started, for the table: "-"
// for a record that is not a tick's run (a manual run, a missed tick, an
// operator's action), "<1ms" within the tick's millisecond.
func delayText(r historyRun) string {
	switch {
	case r.Tick.IsZero() || r.State == stateMissed || r.State == stateOperator:
		return "-"
	case r.DelayMS <= 0:
		return "<1ms"
	}
	return (time.Duration(r.DelayMS) * time.Millisecond).String()
}

// orDash returns s, or "-" for "".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// historyRunOf returns the record r as history prints it, its error
// through hide.
func historyRunOf(r admin.Record, hide func(string) string) historyRun {
	h := historyRun{Tick: r.Tick, State: r.State, Result: r.Result, Replica: r.Owner, RunID: r.Run,
		Fence: r.Fence, Start: r.Start, DelayMS: r.Delay.Milliseconds(), Try: r.Try, Error: hide(r.Error), Nodes: r.Nodes}
	began := r.Start // a manual run starts with its lease
	if !r.Tick.IsZero() {
		began = r.Tick.Add(r.Delay)
	}
	if !r.End.IsZero() && !began.IsZero() && !r.End.Before(began) {
		d := float64(r.End.Sub(began).Milliseconds()) / 1000
		h.Duration = &d
	}
	return h
}

// resultText is a record's result for a table: the run's result, or
// lock_lost, started, missed; an operator's action (its replica is the
// operator).
func resultText(r historyRun) string {
	switch {
	case r.State == stateOperator:
		return "operator: " + r.Result
	case r.State == stateMissed:
		return "missed: " + r.Result
	case r.State == stateLost:
		return "lock_lost"
	case r.State != stateReleased || r.Result == "":
		return r.State
	}
	return r.Result
}
