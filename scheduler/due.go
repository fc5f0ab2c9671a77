package scheduler

import "time"

// maxDue bounds the ticks due returns for one job.
const maxDue = 1000

// dueMargin is how long after a tick's late limit due still waits: a lock
// attempt made just before it may commit a few seconds later, and clocks
// may differ by up to 2 s.
const dueMargin = 10 * time.Second

// due returns, by job name, the ticks of each job in [from, to) that no
// replica may claim any more at to: those whose misfire grace (or catch-up
// window, whichever is longer) ended 10 s before to or earlier, and none from before the first
// tick this replica dispatched for the job (since Run, or since the job
// was added while running; none before Run). Ticks are oldest first, at
// most the newest 1,000 of a job. A tick that no replica ran by then never
// runs: the missed-tick check compares these with the job's ledger
// (redcron wires it: Run hands due to the duehook.Hook of its context).
func (s *Scheduler) due(from, to time.Time) map[string][]time.Time {
	type job struct {
		e     *entry
		first time.Time
	}
	s.mu.Lock()
	jobs := make([]job, 0, len(s.jobs))
	for _, e := range s.jobs {
		if !e.first.IsZero() {
			jobs = append(jobs, job{e, e.first})
		}
	}
	s.mu.Unlock()
	out := make(map[string][]time.Time, len(jobs))
	for _, j := range jobs {
		e, start := j.e, from
		if j.first.After(start) {
			start = j.first
		}
		end := to.Add(-e.cfg.lateLimit() - dueMargin)
		var ticks []time.Time
		// Next is strictly after its argument: start a millisecond early,
		// so that a tick at start counts.
		for t := e.sched.Next(start.Add(-time.Millisecond)); !t.IsZero() && t.Before(end); t = e.sched.Next(t) {
			if ticks = append(ticks, t); len(ticks) > maxDue {
				ticks = ticks[1:]
			}
		}
		if len(ticks) > 0 {
			out[e.name] = ticks
		}
	}
	return out
}
