package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// Outcomes of a run as the job itself saw them.
const (
	outcomeDone     = "done"
	outcomeLockLost = "lock lost"
	outcomeShutdown = "shutdown"
	outcomeCanceled = "canceled"
)

// jobNames returns the names of n jobs: job-1, job-2, ...
func jobNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i+1)
	}
	return names
}

// workload is the jobs every replica registers, with the same names and
// specs everywhere. Each run records itself and works for 20-150ms, except
// the one slow run the scenario asks for.
type workload struct {
	names []string
	rec   *recorder
	slow  *slowRun
}

// job returns the job function of replica.
func (w *workload) job(replica string) scheduler.JobFunc {
	return scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
		start := time.Now()
		w.rec.jobStarted(replica, info, start)
		work := 20*time.Millisecond + rand.N(130*time.Millisecond)
		slow := w.slow.claim(info.Job)
		if slow {
			work = w.slow.length
			select {
			case w.slow.started <- slowStart{replica: replica, info: info, at: start}:
			default:
			}
		}

		timer := time.NewTimer(work)
		defer timer.Stop()
		var cause error
		select {
		case <-timer.C:
		case <-ctx.Done():
			cause = context.Cause(ctx)
		}

		outcome := outcomeDone
		switch {
		case cause == nil:
		case errors.Is(cause, mutex.ErrLost):
			// The lease could not be extended: another replica may run the
			// next tick now. Stop at once and write nothing more; storage
			// would refuse this run's fence anyway once a newer one wrote.
			outcome = outcomeLockLost
		case errors.Is(cause, scheduler.ErrShutdown):
			outcome = outcomeShutdown
		default:
			outcome = outcomeCanceled
		}
		end := time.Now()
		w.rec.jobEnded(info.RunID, end, outcome)
		if slow {
			select {
			case w.slow.ended <- slowEnd{replica: replica, info: info, ran: end.Sub(start), cause: cause}:
			default:
			}
		}
		return cause
	})
}

// slowRun makes one run of one job slow, on request: the scenario stalls
// the replica that runs it.
type slowRun struct {
	job    string
	length time.Duration
	armed  atomic.Bool
	// Each gets one value per armed run; capacity 1 so the job never
	// blocks.
	started chan slowStart
	ended   chan slowEnd
}

func newSlowRun(job string, length time.Duration) *slowRun {
	return &slowRun{job: job, length: length, started: make(chan slowStart, 1), ended: make(chan slowEnd, 1)}
}

// arm makes the next run of the job slow.
func (s *slowRun) arm() { s.armed.Store(true) }

// disarm cancels arm, and reports whether no run had claimed it yet.
func (s *slowRun) disarm() bool { return s.armed.Swap(false) }

// claim reports whether this run of job is the slow one.
func (s *slowRun) claim(job string) bool {
	return job == s.job && s.armed.CompareAndSwap(true, false)
}

// slowStart reports the start of the slow run.
type slowStart struct {
	replica string
	info    scheduler.RunInfo
	at      time.Time
}

// slowEnd reports its end, and the cause of its context's end if any.
type slowEnd struct {
	replica string
	info    scheduler.RunInfo
	ran     time.Duration
	cause   error
}
