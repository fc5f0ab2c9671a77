package statuspage

import (
	"context"
	"slices"
	"time"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/ledger"
)

// runsOf returns the newest runs (up to recentRuns) of the named jobs,
// read from the nodes once per scan: the views of one scan share them.
// Only the jobs a view shows are read, up to 8 at a time, bounded by
// readTimeout.
func (p *statusPage) runsOf(ctx context.Context, st *snapshot, names []string) map[string][]admin.Record {
	st.runsMu.Lock()
	defer st.runsMu.Unlock()
	if st.runs == nil {
		st.runs = map[string][]admin.Record{}
	}
	var missing []string
	for _, name := range names {
		if _, ok := st.runs[name]; !ok && st.scanned {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		read := p.cl.RunsOf(ctx, missing, recentRuns)
		for _, name := range missing {
			for _, r := range read[name] {
				st.runs[name] = append(st.runs[name], recordOf(r))
			}
			if st.runs[name] == nil {
				st.runs[name] = []admin.Record{} // read: none
			}
		}
	}
	out := make(map[string][]admin.Record, len(names))
	for _, name := range names {
		out[name] = st.runs[name]
	}
	return out
}

// withRuns reads the newest runs of the jobs of rows (the rows a view
// shows) and sets their last runs, and from them v's recent runs, its
// newest run and its headline: the per-job reads of a view are of the
// jobs it shows, whatever the number of jobs. all is the number of jobs
// and names the view knows: v.Partial when rows hold fewer.
func (p *statusPage) withRuns(ctx context.Context, st *snapshot, v *mainView, all int, rows ...[]jobView) {
	var names []string
	for _, r := range rows {
		for _, j := range r {
			names = append(names, j.Name)
		}
	}
	runs := p.runsOf(ctx, st, names)
	v.Recent, v.LastRun, v.LastRunJob, v.Partial = nil, time.Time{}, "", len(names) < all
	for _, r := range rows {
		for i := range r {
			name := r[i].Name
			for k, run := range runs[name] {
				rv := runOf(name, run, p.hide)
				if k == 0 {
					r[i].Last = &rv
				}
				if ledger.OnceRan(r[i].Spec, run.State, run.Tick.UnixMilli(), run.Nodes, p.cl.Quorum()) {
					r[i].Done, r[i].Next = true, time.Time{}
				}
				v.Recent = append(v.Recent, rv)
				if at := ranAt(run); at.After(v.LastRun) {
					v.LastRun, v.LastRunJob = at, name
				}
			}
		}
	}
	slices.SortFunc(v.Recent, func(a, b runView) int { return b.At.Compare(a.At) })
	v.Recent = v.Recent[:min(len(v.Recent), 25)]
	v.Headline = judge(v)
}

// recordOf returns a ledger record as admin.Record, as admin's History
// returns it.
func recordOf(r ledger.Run) admin.Record {
	return admin.Record{Job: r.Job, State: r.State, Result: r.Result, Owner: r.Owner, Run: r.Run, Fence: r.Fence,
		Tick: ledger.Time(r.Tick), Start: ledger.Time(r.Start), End: ledger.Time(r.End), Delay: time.Duration(r.Delay) * time.Millisecond,
		Try: r.Try, Error: r.Error, Ticket: r.Ticket, Nodes: r.Nodes}
}
