package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/redcron/redcron/internal/ledger"
)

// The State of a Record that is not one of the ledger's: a tick a replica
// reported skipped in its heartbeat (Replica.Skips).
const stateSkipped = "skipped"

// Record is one record of a job's ledger, merged over the nodes: a run, a
// tick that ran nowhere, or an operator's action.
type Record struct {
	Job string
	// State is "started" (no release reached a node: running, or its
	// replica died), "released", "lost" (its lease had gone at the
	// release), "missed" (a tick that ran nowhere: Error has every
	// replica's report), "operator" (an operator's action) or, in
	// Replica.Skips, "skipped".
	State string
	// Result is a run's result (success, failure, panic, ...); a missed
	// tick's reason; an operator's action (paused, resumed, triggered,
	// leaks_fixed); a skip's reason.
	Result string
	Owner  string    // the replica that ran it; for an operator's action, the operator
	Run    string    // the run's id
	Fence  uint64    // its lease's fence
	Tick   time.Time // the tick it ran; zero for a manual run (a trigger's) and an action
	Start  time.Time // when its lease's acquisition started; an action's time
	End    time.Time // when it released its lease; zero until it did
	// Delay is how long after its tick it started (the ledger keeps
	// milliseconds).
	Delay  time.Duration
	Try    int    // the tries it took, from 1
	Error  string // its error, cut to 200 bytes
	Ticket string // the trigger's request it ran, if any
	Nodes  int    // nodes holding the record
}

// recordOf returns a ledger record as a Record.
func recordOf(r ledger.Run) Record {
	return Record{Job: r.Job, State: r.State, Result: r.Result, Owner: r.Owner, Run: r.Run, Fence: r.Fence,
		Tick: msTime(r.Tick), Start: msTime(r.Start), End: msTime(r.End), Delay: time.Duration(r.Delay) * time.Millisecond,
		Try: r.Try, Error: r.Error, Ticket: r.Ticket, Nodes: r.Nodes}
}

// msTime returns unix ms as a time, the zero time for 0.
func msTime(ms int64) time.Time { return ledger.Time(ms) }

// History returns up to n of the newest records of the job's ledger,
// merged over the nodes, newest first: its runs, the ticks that ran
// nowhere and the operators' actions; and each node's error (nil for a
// node read), in the order given to New. Its error names the job: it
// matches scheduler.ErrUnknownJob for a name no live replica publishes
// (see Options.AnyJob), mutex.ErrNoQuorum when fewer than a majority
// of the nodes could be read (the records read are returned: the history
// may miss runs).
func (c *Client) History(ctx context.Context, job string, n int) ([]Record, []error, error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("history of %q: n is %d, want at least 1", job, n)
	}
	if err := c.checkJob(ctx, job); err != nil {
		return nil, nil, err
	}
	runs, errs, err := c.cl.History(ctx, job, n)
	out := make([]Record, len(runs))
	for i, r := range runs {
		out[i] = recordOf(r)
	}
	return out, c.perNode(errs), wrap(fmt.Sprintf("history of %q", job), err)
}
