// Package lockcheck hands the scheduler the check of a job's lock
// requests that a Locker of redcron's own makes (the Redlock adapter's,
// the in-memory one's, the shard gate's, which passes its inner one's):
// whether it would refuse a job's requests (a name or a TTL out of its
// range, a lead or reach longer than it keeps a tick claimed), told
// without I/O, so that Add refuses bad input when the job is registered
// rather than at every tick.
//
// The scheduler's New calls its Locker's AcquireAll once with no requests
// and a context carrying a Probe (Of); a Locker of ours fills it (Offer),
// any other returns no results and leaves it empty, and its requests are
// checked when it is asked for them. So this wiring of ours adds no method
// to the scheduler's Locker interface, and the scheduler finds no seam by
// type assertion.
package lockcheck

import "context"

// probe is what the context of Of's call carries, for Offer to fill, and
// the scheduler's instance id, for Instance.
type probe[R any] struct {
	check    func(R) error
	instance string
}

type key[R any] struct{}

// Offer hands check to the probe ctx carries, if it carries one: a
// Locker of ours calls it in its AcquireAll, before anything else.
func Offer[R any](ctx context.Context, check func(R) error) {
	if p, _ := ctx.Value(key[R]{}).(*probe[R]); p != nil {
		p.check = check
	}
}

// Instance returns the instance id of the scheduler whose New made the
// call of ctx (Of), or "": the shard gate keeps it for its replica's
// housekeeping (internal/fleet), which needs it before the scheduler runs.
func Instance[R any](ctx context.Context) string {
	if p, _ := ctx.Value(key[R]{}).(*probe[R]); p != nil {
		return p.instance
	}
	return ""
}

// Of returns the check a Locker offers, or nil: it calls acquireAll (the
// Locker's AcquireAll) once, with no requests, telling it instance (the
// scheduler's id).
func Of[R, T any](acquireAll func(context.Context, []R) T, instance string) func(R) error {
	p := &probe[R]{instance: instance}
	acquireAll(context.WithValue(context.Background(), key[R]{}, p), nil)
	return p.check
}
