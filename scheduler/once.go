package scheduler

import (
	"fmt"
	"time"
)

// parseAt parses the argument of @at: an RFC 3339 time with its offset, in
// whole seconds.
func parseAt(arg string) (schedule, error) {
	t, err := time.Parse(time.RFC3339, arg)
	if err != nil {
		return nil, fmt.Errorf("@at: want an RFC 3339 time with its offset, as 2026-11-28T00:00:00Z: %w", err)
	}
	if t.Nanosecond() != 0 {
		return nil, fmt.Errorf("@at %s: want a whole number of seconds", arg)
	}
	return once{t}, nil
}

// once is the schedule of "@at t", a one-time job: its only tick is t.
type once struct {
	at time.Time
}

func (o once) Next(t time.Time) time.Time {
	if t.Before(o.at) {
		return o.at
	}
	return time.Time{}
}

// firstTick is the tick of o to dispatch at now, at or after o's time: its
// time if it is late by no more than lateLimit (a replica starting just
// after it catches it up; the tick's mark tells whether another ran it),
// else none.
func (o once) firstTick(now time.Time, lateLimit time.Duration) time.Time {
	if now.Sub(o.at) <= lateLimit {
		return o.at
	}
	return time.Time{}
}

// tickSoon reports whether sched has a tick within five years of now, or
// is a one-time job's (@at) whose time is not further ahead: a past one is
// checked by checkPastAt.
func tickSoon(sched schedule, now time.Time) bool {
	if o, ok := sched.(once); ok {
		return !o.at.After(now.AddDate(5, 0, 0))
	}
	return tickWithin(sched, now, now.AddDate(5, 0, 0))
}

// checkPastAt returns an error matching ErrInvalidJob, and wrapping the
// Locker's refusal, if sched is a one-time job's (@at) whose time is
// further back than the Locker keeps a tick's mark: whether it ran could
// not be told. req is the job's request for the Locker's check, with its
// reach.
func (s *Scheduler) checkPastAt(req LockRequest, spec string, sched schedule, now time.Time) error {
	o, ok := sched.(once)
	past := now.Sub(o.at)
	if !ok || past <= req.Reach {
		return nil
	}
	req.Reach = past
	if err := s.checkRequest(req); err != nil {
		return fmt.Errorf("%w %q: spec %q: its time is %v past, longer than the Locker keeps the mark telling whether it ran: %w",
			ErrInvalidJob, req.Job, spec, past.Round(time.Second), err)
	}
	return nil
}
