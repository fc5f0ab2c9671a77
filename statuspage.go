package redcron

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/statuspage"
)

// StatusPage returns the fleet's status page (package statuspage), for you
// to mount in your service next to /metrics: first whether the fleet runs
// (healthy, degraded, not running or unknown, and why), then the jobs of
// this replica and of the live replicas with their schedules and next
// ticks, the ticks skipped, the runs from the ledgers, the nodes, the
// replicas and the leaks. It logs through the logger given to New. It is
// read-only unless statuspage.WithAuthorize lets a request pause or
// resume a job, trigger it, or fix the leaks. Its errors for bad options
// match mutex.ErrInvalidOption.
//
//	page, err := s.StatusPage(statuspage.WithAuthorize(auth))
//	mux.Handle("/redcron/", http.StripPrefix("/redcron", page))
func (s *Scheduler) StatusPage(opts ...statuspage.Option) (http.Handler, error) {
	base := []statuspage.Option{statuspage.WithJobs(s.Entries), statuspage.WithLogger(s.log)}
	p, err := statuspage.New(s.locks, append(base, opts...)...)
	if errors.Is(err, mutex.ErrInvalidOption) {
		return nil, fmt.Errorf("%w: %w", mutex.ErrInvalidOption, err)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}
