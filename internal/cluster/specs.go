package cluster

import (
	"context"
	"strings"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/scheduler"
)

// specs sets each job's Spec, Zone and Next from the job table the most
// live replicas publish (the heartbeats carry its digest; the replicas
// publish the table under it): the job's spec and zone, and its next tick
// after now as the scheduler computes it. Jobs the table lacks are left as
// they are.
func (c *Cluster) specs(ctx context.Context, rep *leaks.Report, jobs []Job, now time.Time) {
	byDigest := map[string]int{}
	for _, b := range rep.Beats {
		if b.JobTable != "" {
			byDigest[b.JobTable]++
		}
	}
	digest := ""
	for d, n := range byDigest {
		if digest == "" || n > byDigest[digest] || n == byDigest[digest] && d < digest {
			digest = d
		}
	}
	if digest == "" {
		return
	}
	var table map[string]engine.JobSpec
	for _, n := range c.Nodes {
		if t, err := n.JobTable(ctx, c.Keys.JobTable(digest)); err == nil && len(t) > 0 {
			table = t
			break
		}
	}
	for i := range jobs {
		js, ok := table[jobs[i].Name]
		if !ok {
			continue
		}
		jobs[i].Spec, jobs[i].Zone = js.Spec, js.Zone
		jobs[i].Next = nextTick(jobs[i].Name, js, now)
	}
}

// nextTick returns the first tick after now of a job with spec js, as a
// scheduler computes it (six fields: with seconds); zero if the spec is
// not one this build reads.
func nextTick(name string, js engine.JobSpec, now time.Time) time.Time {
	loc, err := time.LoadLocation(js.Zone)
	if err != nil {
		loc = time.UTC
	}
	opts := []scheduler.Option{scheduler.WithLocation(loc), scheduler.WithClock(func() time.Time { return now })}
	if fields := strings.Fields(js.Spec); len(fields) == 6 || len(fields) == 7 && strings.Contains(fields[0], "TZ=") {
		opts = append(opts, scheduler.WithSeconds())
	}
	s, err := scheduler.New(nopLocker{}, opts...)
	if err != nil {
		return time.Time{}
	}
	nop := func(context.Context, scheduler.RunInfo) error { return nil }
	if s.Add(name, js.Spec, nop) != nil {
		return time.Time{}
	}
	if es := s.Entries(); len(es) == 1 {
		return es[0].Next
	}
	return time.Time{}
}

// nopLocker grants nothing: a scheduler over it only computes ticks.
type nopLocker struct{}

func (nopLocker) Acquire(context.Context, scheduler.LockRequest) (scheduler.Lease, error) {
	return nil, scheduler.ErrNoQuorum
}

func (nopLocker) AcquireAll(_ context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	out := make([]scheduler.LockResult, len(reqs))
	for i := range out {
		out[i].Err = scheduler.ErrNoQuorum
	}
	return out
}

func (nopLocker) Check(scheduler.LockRequest) error { return nil }
