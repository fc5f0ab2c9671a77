package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// runRec is one run of a job, as recorded by the job function (start, end,
// outcome) and by the observer of the replica that ran it (start delay,
// result).
type runRec struct {
	Job     string
	Tick    time.Time
	Replica string
	Fence   uint64
	RunID   string

	Start, End time.Time // by the job; End is zero while it runs
	Outcome    string    // by the job: done, lock lost, ...

	StartDelay time.Duration // by the scheduler: start minus tick
	Result     string        // by the scheduler, at the end
	Err        error
}

// tickKey names one tick of one job.
type tickKey struct {
	job  string
	tick int64 // unix ms
}

func keyOf(job string, tick time.Time) tickKey { return tickKey{job, tick.UnixMilli()} }

// tickRec is what happened to one tick of one job, on every replica.
type tickRec struct {
	runs  []*runRec
	skips map[string]string // by replica
}

// fault is a disturbance the verification keeps a margin around.
type fault struct {
	at   time.Time
	what string
}

// upChange records how many nodes were up from a moment on.
type upChange struct {
	at time.Time
	up int
}

// lockFailure is a failed acquisition, as the replica's Redlock reported
// it: the scheduler's skip events do not carry the tally of a refusal.
type lockFailure struct {
	at      time.Time
	replica string
	job     string
	tally   string
}

// recorder collects everything that happened. It is safe for concurrent
// use; the observers call it from the schedulers' goroutines.
type recorder struct {
	jobs []string

	mu      sync.Mutex
	runs    map[string]*runRec // by run id
	ticks   map[tickKey]*tickRec
	skips   map[string]int
	retries int
	faults  []fault
	ups     []upChange
	failed  []lockFailure
}

func newRecorder(jobs []string) *recorder {
	return &recorder{
		jobs:  jobs,
		runs:  make(map[string]*runRec),
		ticks: make(map[tickKey]*tickRec),
		skips: make(map[string]int),
	}
}

// runLocked returns the record of a run, creating it if needed.
func (r *recorder) runLocked(replica string, info scheduler.RunInfo) *runRec {
	if rr := r.runs[info.RunID]; rr != nil {
		return rr
	}
	rr := &runRec{Job: info.Job, Tick: info.Tick, Replica: replica, Fence: info.Fence, RunID: info.RunID}
	r.runs[info.RunID] = rr
	t := r.tickLocked(info.Job, info.Tick)
	t.runs = append(t.runs, rr)
	return rr
}

func (r *recorder) tickLocked(job string, tick time.Time) *tickRec {
	k := keyOf(job, tick)
	t := r.ticks[k]
	if t == nil {
		t = &tickRec{skips: make(map[string]string)}
		r.ticks[k] = t
	}
	return t
}

// jobStarted is called by the job function as it starts.
func (r *recorder) jobStarted(replica string, info scheduler.RunInfo, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runLocked(replica, info).Start = at
}

// jobEnded is called by the job function as it returns.
func (r *recorder) jobEnded(runID string, at time.Time, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rr := r.runs[runID]; rr != nil {
		rr.End, rr.Outcome = at, outcome
	}
}

// event records a scheduler event of replica.
func (r *recorder) event(replica string, ev scheduler.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	info := scheduler.RunInfo{Job: ev.Job, Tick: ev.Tick, Fence: ev.Fence, RunID: ev.RunID}
	switch ev.Kind {
	case scheduler.KindRunStarted:
		r.runLocked(replica, info).StartDelay = ev.StartDelay
	case scheduler.KindRunFinished:
		rr := r.runLocked(replica, info)
		rr.Result, rr.Err = ev.Result, ev.Err
	case scheduler.KindSkipped:
		r.skips[ev.Skip]++
		r.tickLocked(ev.Job, ev.Tick).skips[replica] = ev.Skip
	case scheduler.KindLockRetry:
		r.retries++
	}
}

// fault records a disturbance.
func (r *recorder) fault(at time.Time, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, fault{at, what})
}

// nodesUp records that up nodes are up from at on.
func (r *recorder) nodesUp(at time.Time, up int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ups = append(r.ups, upChange{at, up})
}

// upAtLocked returns how many nodes were up at t.
func (r *recorder) upAtLocked(t time.Time) int {
	up := 0
	for _, c := range r.ups {
		if c.at.After(t) {
			break
		}
		up = c.up
	}
	return up
}

// tickView is a copy of what happened to one tick of one job.
type tickView struct {
	runs  []runRec
	skips []string
	up    int // nodes up at the tick
}

// view returns what happened to the tick of job so far.
func (r *recorder) view(job string, tick time.Time) tickView {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := tickView{up: r.upAtLocked(tick)}
	if t := r.ticks[keyOf(job, tick)]; t != nil {
		for _, rr := range t.runs {
			v.runs = append(v.runs, *rr)
		}
		for _, s := range t.skips {
			v.skips = append(v.skips, s)
		}
	}
	return v
}

// runsOf returns copies of the runs of job, in tick order.
func (r *recorder) runsOf(job string) []runRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	var runs []runRec
	for _, rr := range r.runs {
		if rr.Job == job {
			runs = append(runs, *rr)
		}
	}
	slices.SortFunc(runs, func(a, b runRec) int {
		if c := a.Tick.Compare(b.Tick); c != 0 {
			return c
		}
		return a.Start.Compare(b.Start)
	})
	return runs
}

// firstRunAfter returns the run of job with the earliest tick after tick.
func (r *recorder) firstRunAfter(job string, tick time.Time) (runRec, bool) {
	for _, rr := range r.runsOf(job) {
		if rr.Tick.After(tick) && !rr.Start.IsZero() {
			return rr, true
		}
	}
	return runRec{}, false
}

// lockEvent records the failed acquisitions a replica's Redlock reports.
func (r *recorder) lockEvent(replica string, ev mutex.Event) {
	var qe *mutex.QuorumError
	if ev.Op != "acquire" || !errors.As(ev.Err, &qe) {
		return
	}
	f := lockFailure{at: time.Now().Add(-ev.Duration), replica: replica, job: ev.Name, tally: tally(qe)}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, f)
}

// tally describes a failed acquisition node by node, naming the holder
// and its tick where another value holds the lock.
func tally(qe *mutex.QuorumError) string {
	var b strings.Builder
	yes := 0
	for _, n := range qe.Nodes {
		if n.Vote == "yes" {
			yes++
		}
	}
	fmt.Fprintf(&b, "%s %d/%d yes, quorum %d, %s:", qe.Op, yes, len(qe.Nodes), qe.Quorum, reasonName(qe.Reason))
	for _, n := range qe.Nodes {
		fmt.Fprintf(&b, " %s %s", n.Node, voteName(n.Vote))
		if v, err := engine.ParseValue(n.Holder); err == nil && n.Vote == "held" {
			fmt.Fprintf(&b, " by %s", v.Owner)
			if v.Occurrence > 0 {
				fmt.Fprintf(&b, " for %s", clock(time.UnixMilli(v.Occurrence)))
			}
		}
		b.WriteByte(',')
	}
	return strings.TrimSuffix(b.String(), ",")
}

func voteName(v string) string {
	if v == "" {
		return "pending"
	}
	return v
}

func reasonName(err error) string {
	switch {
	case errors.Is(err, mutex.ErrHeld):
		return "held"
	case errors.Is(err, mutex.ErrAlreadyRun):
		return "already run"
	case errors.Is(err, mutex.ErrNoQuorum):
		return "no quorum"
	}
	return fmt.Sprint(err)
}

// failuresLocked returns the failed acquisitions of job started in
// [from, to).
func (r *recorder) failuresLocked(job string, from, to time.Time) []lockFailure {
	var fs []lockFailure
	for _, f := range r.failed {
		if f.job == job && !f.at.Before(from) && f.at.Before(to) {
			fs = append(fs, f)
		}
	}
	slices.SortFunc(fs, func(a, b lockFailure) int { return a.at.Compare(b.at) })
	return fs
}
