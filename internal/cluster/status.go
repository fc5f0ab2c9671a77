package cluster

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/ledger"
)

// Job is one job as the nodes hold it: its pause, its lock's holder, and
// its newest runs.
type Job struct {
	Name     string
	PausedOn int       // nodes with its pause key: in effect on a majority
	Holder   string    // the owner of the value holding its lock on the most nodes
	Tick     time.Time // the tick that value claims; zero for none, or a manual run
	HeldOn   int       // nodes with that value; 0 when the lock is free
	// Spec, Zone and Next are the job's spec, the zone it is read in and
	// its next tick (NextTick), from the job table the most live replicas
	// publish among those that list it; empty when none does (a name no
	// live replica runs, or replicas of an older release).
	Spec, Zone string
	Next       time.Time
	Tags       []string // its tags, from the same table (scheduler.WithTags)
	// Limit and Permits are its cluster limit, from the same table
	// (scheduler.WithClusterLimit), and PermitsHeld how many of the
	// limit's permits (locks Limit#i) hold on a quorum of the nodes now.
	Limit                string
	Permits, PermitsHeld int
	// Publishers is how many live replicas list it in their job table.
	// Phantom: none does, while every live replica's table was read (see
	// Tables.Check; with no live replica, every job is phantom).
	Publishers int
	Phantom    bool
	// Runs are the newest records of its ledger, newest first: runs and
	// missed ticks, not operators' actions.
	Runs []ledger.Run
	// Done: it is a one-time job ("@at t") and Runs hold the run of its
	// tick (ledger.OnceRan): it runs no more, and Next is zero.
	Done bool
}

// Status is the fleet as one scan of its nodes shows it.
type Status struct {
	Report   *leaks.Report // the scan: leaks by class, heartbeats, pauses
	Jobs     []Job         // every job with a lock, a state, a pause key or a ledger, or a live replica's, by name
	Replicas []Replica     // the live replicas, by instance id
	Common   string        // the job table most replicas publish ("" for none, or a tie)
	Tables   int           // distinct job tables among them
	Nodes    []Node        // each node's health, in the nodes' order
	// Published is the live replicas' job tables: which replica lists
	// which job (Tables.Check says whether a name is a job); nil when no
	// node could be scanned.
	Published *Tables
}

// Status scans the nodes and returns the fleet's jobs, each with up to runs
// of its newest runs, its replicas and its nodes' health (a node is
// warming up for warm after its start). Its error is the scan's: no node
// could be scanned (the report says why, node by node); the nodes' health
// is given then too.
func (c *Cluster) Status(ctx context.Context, runs int, warm time.Duration) (*Status, error) {
	st := &Status{}
	var wg sync.WaitGroup
	wg.Go(func() { st.Nodes = c.NodeStatuses(ctx, warm) })
	rep, err := c.Scanner().Scan(ctx)
	st.Report = rep
	if err != nil {
		wg.Wait()
		return st, err
	}
	beats := map[string]engine.Beat{}
	for _, owner := range rep.Live {
		beats[owner] = rep.Beats[owner]
	}
	st.Published = c.tables(ctx, beats)
	st.Jobs = withPublished(Jobs(rep), st.Published)
	specs(st.Published, st.Jobs, time.Now())
	st.Jobs = permits(st.Jobs, c.Quorum())
	if runs > 0 {
		c.lastRuns(ctx, st.Jobs, runs)
	}
	st.Replicas, st.Common, st.Tables = Replicas(rep)
	apart := st.Published.Apart()
	for i := range st.Replicas {
		st.Replicas[i].SharesNoJob = apart[st.Replicas[i].Instance]
	}
	wg.Wait()
	return st, nil
}

// withPublished adds to jobs (sorted by name) the jobs the live replicas'
// tables list that the nodes hold no key of yet (a job that never ran).
func withPublished(jobs []Job, t *Tables) []Job {
	held := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		held[j.Name] = true
	}
	for _, name := range t.Names() {
		if !held[name] {
			jobs, held[name] = append(jobs, Job{Name: name}), true
		}
	}
	slices.SortFunc(jobs, func(a, b Job) int { return strings.Compare(a.Name, b.Name) })
	return jobs
}

// Jobs returns every job that has a lock, a pause key, or a fence or mark
// in its shard's state, on the nodes of rep, by name.
func Jobs(rep *leaks.Report) []Job {
	byName := map[string]*Job{}
	get := func(name string) *Job {
		if byName[name] == nil {
			byName[name] = &Job{Name: name}
		}
		return byName[name]
	}
	for _, f := range rep.Findings {
		if f.Kind != "lock" {
			continue
		}
		j := get(f.Name)
		held := map[string]int{}
		for _, c := range f.Copies {
			if !c.Acquired.IsZero() {
				held[c.Value]++
			}
		}
		for _, c := range f.Copies {
			if n := held[c.Value]; n > j.HeldOn {
				j.Holder, j.Tick, j.HeldOn = c.Owner, c.Occurrence, n
			}
		}
	}
	for name, values := range rep.Running { // runs claimed in bulk: no lock key
		j := get(name)
		on := map[string]int{}
		for _, v := range values {
			on[v]++
		}
		for v, n := range on {
			if val, err := engine.ParseValue(v); err == nil && n > j.HeldOn {
				j.Holder, j.Tick, j.HeldOn = val.Owner, time.Time{}, n
				if val.Occurrence > 0 {
					j.Tick = time.UnixMilli(val.Occurrence)
				}
			}
		}
	}
	for name, n := range rep.Paused {
		get(name).PausedOn = n
	}
	for name := range rep.States { // a job that ran, not running now
		get(name)
	}
	out := make([]Job, 0, len(byName))
	for _, j := range byName {
		out = append(out, *j)
	}
	slices.SortFunc(out, func(a, b Job) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// lastRuns sets each job's Runs (see RunsOf).
func (c *Cluster) lastRuns(ctx context.Context, jobs []Job, count int) {
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	runs := c.RunsOf(ctx, names, count)
	for i := range jobs {
		jobs[i].Runs = runs[jobs[i].Name]
		jobs[i].Done = slices.ContainsFunc(jobs[i].Runs, func(r ledger.Run) bool {
			return ledger.OnceRan(jobs[i].Spec, r.State, r.Tick, r.Nodes, c.Quorum())
		})
		if jobs[i].Done { // its tick, which a replica just past it would still catch up, is taken
			jobs[i].Next = time.Time{}
		}
	}
}

// RunsOf returns, by job, up to count of each job's newest runs and missed
// ticks, as Runs does, reading each shard's ledger once from each node
// whatever the number of jobs (ledger.ReadMany).
func (c *Cluster) RunsOf(ctx context.Context, jobs []string, count int) map[string][]ledger.Run {
	var lks []engine.LockKeys
	for _, job := range jobs {
		if lk, err := c.Keys.Lock(job); err == nil {
			lks = append(lks, lk)
		}
	}
	out := make(map[string][]ledger.Run, len(lks))
	for name, all := range ledger.ReadMany(ctx, c.Nodes, lks, count+20) {
		runs := make([]ledger.Run, 0, count)
		for _, r := range all {
			if r.State != ledger.StateOperator && len(runs) < count {
				runs = append(runs, r)
			}
		}
		out[name] = runs
	}
	return out
}

// Runs returns up to count of the job's newest runs and missed ticks,
// newest first, leaving out operators' actions (of which it skips up to
// 20); nil for a name that is not a job's, or when no node could be read.
func (c *Cluster) Runs(ctx context.Context, job string, count int) []ledger.Run {
	lk, err := c.Keys.Lock(job)
	if err != nil {
		return nil
	}
	all, _ := ledger.Read(ctx, c.Nodes, lk, count+20)
	out := make([]ledger.Run, 0, count)
	for _, r := range all {
		if r.State != ledger.StateOperator && len(out) < count {
			out = append(out, r)
		}
	}
	return out
}
