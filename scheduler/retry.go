package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// tryJob runs r's job, and, with WithRetry, runs it again after a failure
// while tries are left, the run's context is live, the scheduler is not
// stopping (stopping is its session's loop context), the failure was not a
// panic and the next try would start within the job's late limit of the
// tick (the misfire grace, or the catch-up window: a tick caught up after
// an outage keeps its retries), or of the first try's start for a manual
// run. Each try gets its number in RunInfo.Try; each failure tried again is
// reported and logged.
func (s *Scheduler) tryJob(stopping context.Context, r *run) error {
	cfg := r.e.cfg
	from := r.info.Tick
	if from.IsZero() {
		from = s.cfg.clock()
	}
	deadline, backoff := from.Add(cfg.lateLimit()), cfg.backoff
	for try := 1; ; try++ {
		r.tries.Store(int32(try))
		ctx, info := r.ctx, r.info
		if try > 1 {
			info.Try = try
			ctx = contextWithRunInfo(r.ctx, &info)
		}
		err := callJob(ctx, r.e.job, info)
		var panicked *PanicError
		if err == nil || try >= cfg.attempts || errors.As(err, &panicked) || r.ctx.Err() != nil ||
			stopping.Err() != nil || !s.cfg.clock().Add(backoff).Before(deadline) {
			return err
		}
		s.emit(r.e, Event{Kind: KindRunRetry, Job: info.Job, Tick: info.Tick, RunID: info.RunID, Fence: info.Fence,
			Attempts: r.attempts, Try: try, Err: err})
		r.failedTry(try, err)
		s.log.LogAttrs(r.ctx, slog.LevelWarn, "run failed; trying again",
			r.attrs(slog.Int("try", try), slog.Duration("backoff", backoff), slog.Any("error", err))...)
		wait, stop := context.WithCancel(r.ctx)
		unhook := context.AfterFunc(stopping, stop) // a Shutdown ends the wait too
		slept := sleep(wait, backoff)
		unhook()
		stop()
		if !slept || outlived(r.ctx) != nil { // no try after the lease's validity
			return err
		}
		backoff *= 2
	}
}

// failedTry records that try failed with err and is tried again, for the
// run's record in the ledger.
func (r *run) failedTry(try int, err error) {
	r.triesMu.Lock()
	defer r.triesMu.Unlock()
	r.tryErrs = append(r.tryErrs, fmt.Sprintf("try %d: %v", try, err))
}

// ledgerErr returns the error the run's ledger record keeps: err, then
// the errors of the tries that failed before (WithRetry), if any (the
// record keeps the first 200 bytes: the outcome first).
func (r *run) ledgerErr(err error) error {
	r.triesMu.Lock()
	defer r.triesMu.Unlock()
	if len(r.tryErrs) == 0 {
		return err
	}
	last := "ok"
	if err != nil {
		last = err.Error()
	}
	return errors.New(last + " (after " + strings.Join(r.tryErrs, "; ") + ")")
}
