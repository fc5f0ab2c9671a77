package cluster

import (
	"context"
	"strconv"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// specs sets each job's Spec, Zone, Tags and Next from the live replicas' job
// tables (t.Spec: the most published table that lists it), and its
// Publishers and Phantom. Jobs no table lists keep no spec.
func specs(t *Tables, jobs []Job, now time.Time) {
	for i := range jobs {
		jobs[i].Publishers = len(t.Publishers(jobs[i].Name))
		jobs[i].Phantom = t.Check(jobs[i].Name) != nil
		js, ok := t.Spec(jobs[i].Name)
		if !ok {
			continue
		}
		jobs[i].Spec, jobs[i].Zone, jobs[i].Tags = js.Spec, js.Zone, js.Tags
		jobs[i].Limit, jobs[i].Permits = js.Limit, js.Permits
		jobs[i].Next = NextTick(js, now)
	}
}

// NextTick returns the first tick after now of a job with the published
// spec js, as a replica computes it: by a scheduler's own parser, reading
// the spec in js.Zone (its CRON_TZ= or TZ= prefix's, or WithLocation's).
// Whether the replica reads seconds (scheduler.WithSeconds) is told by the
// spec itself: the parser takes five fields without them and six with,
// and descriptors and @every the same either way; so the spec is tried
// without seconds, then with. Zero if this build cannot read the spec.
func NextTick(js engine.JobSpec, now time.Time) time.Time {
	loc, err := time.LoadLocation(js.Zone)
	if err != nil {
		loc = time.UTC
	}
	for _, seconds := range []bool{false, true} {
		opts := []scheduler.Option{scheduler.WithLocation(loc), scheduler.WithClock(func() time.Time { return now })}
		if seconds {
			opts = append(opts, scheduler.WithSeconds())
		}
		s, err := scheduler.New(nopLocker{}, opts...)
		if err != nil {
			return time.Time{}
		}
		if s.Add("job", js.Spec, func(context.Context, scheduler.RunInfo) error { return nil }) != nil {
			continue
		}
		if es := s.Entries(); len(es) == 1 {
			return es[0].Next
		}
	}
	return time.Time{}
}

// nopLocker grants nothing: a scheduler over it only computes ticks.
type nopLocker struct{}

func (nopLocker) Acquire(context.Context, scheduler.LockRequest) (scheduler.Lease, error) {
	return nil, mutex.ErrNoQuorum
}

func (nopLocker) AcquireAll(_ context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	out := make([]scheduler.LockResult, len(reqs))
	for i := range out {
		out[i].Err = mutex.ErrNoQuorum
	}
	return out
}

// permits sets, for each job with a cluster limit, how many of the limit's
// permits hold on quorum nodes or more, and returns jobs less the permits'
// own locks (Limit#i), which are not jobs: each shows as its limit's count.
func permits(jobs []Job, quorum int) []Job {
	type limit struct {
		name    string
		permits int
	}
	held := map[limit]int{}
	permitOf := map[string][]limit{} // a permit's lock name → the limits it is a permit of
	for _, j := range jobs {
		l := limit{j.Limit, j.Permits}
		if j.Limit == "" || j.Permits <= 0 {
			continue
		}
		if _, ok := held[l]; !ok {
			held[l] = 0
			for i := range l.permits {
				name := l.name + "#" + strconv.Itoa(i)
				permitOf[name] = append(permitOf[name], l)
			}
		}
	}
	out := jobs[:0]
	for _, j := range jobs {
		ls := permitOf[j.Name]
		if len(ls) == 0 || j.Publishers > 0 { // a job, even if named like a permit
			out = append(out, j)
			continue
		}
		if j.HeldOn >= quorum {
			for _, l := range ls {
				held[l]++
			}
		}
	}
	for i := range out {
		if out[i].Limit != "" {
			out[i].PermitsHeld = held[limit{out[i].Limit, out[i].Permits}]
		}
	}
	return out
}
