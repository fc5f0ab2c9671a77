package redcron

import "time"

// SetJobTablePeriod makes s publish its job table every d, and call round,
// if not nil, after each round with when it started and each node's error.
// Call it before Run.
func SetJobTablePeriod(s *Scheduler, d time.Duration, round func(start time.Time, errs []error)) {
	s.fleet.SetJobTablePeriod(d, round)
}
