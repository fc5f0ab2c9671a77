package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcron/redcron/scheduler"
)

// allResults and allSkipReasons list the enum values whose series are
// created when a job is added. A value added to the scheduler later gets
// its series at its first use.
func allResults() []string {
	return []string{
		"success", "failure", "panic",
		"lock_lost", "timeout", "canceled", "abandoned",
	}
}

func allSkipReasons() []string {
	return []string{
		"held", "already_run", "overlap",
		"misfire", "no_quorum", "lease_lost", "paused", "max_runs", "cluster_limit", "overload",
	}
}

// jobSeries are one registered job's series, resolved once.
type jobSeries struct {
	refs        int // Schedulers that have the job
	runs        map[string]prometheus.Counter
	skips       map[string]prometheus.Counter
	retries     prometheus.Counter
	runDuration prometheus.Observer
	startDelay  prometheus.Observer
	lastSuccess prometheus.Gauge
	inProgress  prometheus.Gauge

	// running holds the RunIDs of the runs started under these series and
	// not finished: a run of a job removed and added again since it
	// started finishes under series that did not count its start.
	mu      sync.Mutex
	running map[string]struct{}
}

// observeScheduler records a scheduler event. It does no I/O and holds a
// read lock only while it updates a job's series.
func (c *Collector) observeScheduler(e scheduler.Event) {
	switch e.Kind {
	case scheduler.KindJobAdded:
		c.addJob(e.Job)
	case scheduler.KindJobRemoved:
		c.removeJob(e.Job)
	case scheduler.KindRunStarted, scheduler.KindRunFinished, scheduler.KindSkipped, scheduler.KindLockRetry:
		// The read lock keeps removeJob from deleting the series while
		// they are updated, so an event racing with Remove never
		// recreates a removed job's series.
		c.jobsMu.RLock()
		defer c.jobsMu.RUnlock()
		if j := c.jobs[e.Job]; j != nil {
			c.observeJob(j, e)
		}
	}
}

// observeJob records an event of job j; c.jobsMu is read-locked.
func (c *Collector) observeJob(j *jobSeries, e scheduler.Event) {
	switch e.Kind {
	case scheduler.KindRunStarted:
		j.mu.Lock()
		j.running[e.RunID] = struct{}{}
		j.mu.Unlock()
		j.inProgress.Inc()
		if !e.Tick.IsZero() { // a triggered run has no tick, hence no delay
			j.startDelay.Observe(e.StartDelay.Seconds())
		}
	case scheduler.KindRunFinished:
		j.mu.Lock()
		_, ours := j.running[e.RunID]
		delete(j.running, e.RunID)
		j.mu.Unlock()
		if !ours {
			return // started before its job was removed; those series are gone
		}
		j.inProgress.Dec()
		j.runDuration.Observe(e.Duration.Seconds())
		if e.Result == "success" {
			j.lastSuccess.SetToCurrentTime()
		}
		if r := j.runs[e.Result]; r != nil {
			r.Inc()
		} else {
			c.runs.WithLabelValues(e.Job, e.Result).Inc()
		}
	case scheduler.KindSkipped:
		if s := j.skips[e.Skip]; s != nil {
			s.Inc()
		} else {
			c.skips.WithLabelValues(e.Job, e.Skip).Inc()
		}
	case scheduler.KindLockRetry:
		j.retries.Inc()
	}
}

// addJob creates the series of job at 0, or counts one more Scheduler
// having it.
func (c *Collector) addJob(job string) {
	c.jobsMu.Lock()
	defer c.jobsMu.Unlock()
	if j := c.jobs[job]; j != nil {
		j.refs++
		return
	}
	j := &jobSeries{
		refs:        1,
		running:     map[string]struct{}{},
		runs:        map[string]prometheus.Counter{},
		skips:       map[string]prometheus.Counter{},
		retries:     c.retries.WithLabelValues(job),
		runDuration: c.runDuration.WithLabelValues(job),
		startDelay:  c.startDelay.WithLabelValues(job),
		lastSuccess: c.lastSuccess.WithLabelValues(job),
		inProgress:  c.inProgress.WithLabelValues(job),
	}
	for _, r := range allResults() {
		j.runs[r] = c.runs.WithLabelValues(job, r)
	}
	for _, r := range allSkipReasons() {
		j.skips[r] = c.skips.WithLabelValues(job, r)
	}
	c.jobs[job] = j
}

// removeJob deletes the series of job when no Scheduler has it any more.
func (c *Collector) removeJob(job string) {
	c.jobsMu.Lock()
	defer c.jobsMu.Unlock()
	j := c.jobs[job]
	if j == nil {
		return
	}
	if j.refs--; j.refs > 0 {
		return
	}
	delete(c.jobs, job)
	match := prometheus.Labels{jobLabel: job}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		c.runs, c.skips, c.missed, c.retries, c.runDuration, c.startDelay, c.lastSuccess, c.inProgress,
	} {
		v.DeletePartialMatch(match)
	}
}
