package statuspage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/scheduler"
)

// jobsOf returns the jobs of the fleet, by name: this replica's and those
// the live replicas publish; and, apart, the names the nodes know that no
// live replica publishes (a ledger, a pause key or a lock left behind).
func (p *statusPage) jobsOf(st *snapshot) (jobs, unpublished []jobView) {
	byName := map[string]*jobView{}
	if p.cfg.jobs != nil {
		for _, e := range p.cfg.jobs() {
			byName[e.Name] = localJob(e)
		}
	}
	others := map[string]*jobView{}
	for _, j := range st.Jobs {
		v := byName[j.Name]
		switch {
		case v != nil:
		case j.Publishers > 0:
			v = publishedJob(j)
			byName[j.Name] = v
		default:
			v = &jobView{Name: j.Name, Link: jobLink(j.Name)}
			others[j.Name] = v
		}
		v.PausedOn, v.Holder, v.HeldTick, v.HeldOn = j.PausedOn, j.Holder, j.Tick, j.HeldOn
		if j.Limit != "" {
			v.Limit = fmt.Sprintf("%s %d/%d", j.Limit, j.PermitsHeld, j.Permits)
		}
		switch {
		case j.PausedOn >= st.Quorum:
			v.Paused = fmt.Sprintf("paused %d/%d", j.PausedOn, len(st.Nodes))
		case j.PausedOn > 0:
			v.Paused = fmt.Sprintf("partial %d/%d", j.PausedOn, len(st.Nodes))
		}
	}
	for name, v := range byName {
		v.Missed = st.Missed[name]
	}
	return sorted(byName), sorted(others)
}

// sorted returns the jobs of m by name.
func sorted(m map[string]*jobView) []jobView {
	out := make([]jobView, 0, len(m))
	for _, v := range m {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b jobView) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// localJob returns the row of a job of this replica's scheduler.
func localJob(e scheduler.Entry) *jobView {
	zone := "UTC"
	if e.Location != nil {
		zone = e.Location.String()
	}
	next := e.Next
	if !next.IsZero() && e.Location != nil {
		next = next.In(e.Location)
	}
	return &jobView{Name: e.Name, Link: jobLink(e.Name), Local: true, Spec: e.Spec, Zone: zone, Tags: e.Tags, Next: next, Running: e.Running}
}

// publishedJob returns the row of a job another live replica publishes:
// its spec, zone and next tick from the job tables (admin.Job's, of the
// table the most live replicas publish among those listing it).
func publishedJob(j admin.Job) *jobView {
	next := j.Next
	if loc, err := time.LoadLocation(j.Zone); err == nil && !next.IsZero() {
		next = next.In(loc)
	}
	return &jobView{Name: j.Name, Link: jobLink(j.Name), Spec: j.Spec, Zone: j.Zone, Tags: j.Tags, Next: next}
}

// ranAt returns when a run of a ledger record last did something (its
// end, or its start); zero for a missed tick or an operator's action.
func ranAt(r admin.Record) time.Time {
	if r.State == stateMissed || r.State == stateOperator {
		return time.Time{}
	}
	began := r.Tick
	if !began.IsZero() {
		began = began.Add(r.Delay)
	}
	return latest(r.Start, r.End, began)
}

// latest returns the latest of ts.
func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// maxSkips bounds the skipped ticks the main page lists.
const maxSkips = 30

// skipsOf returns the ticks the live replicas report skipped in their
// heartbeats (their recent skips of ticks that may have run nowhere),
// newest first, the replicas of one job, tick and reason together.
func skipsOf(st *snapshot) []skipView {
	byKey := map[string]*skipView{}
	for _, r := range st.Replicas {
		for _, sk := range r.Skips {
			key := fmt.Sprintf("%s\x00%d\x00%s", sk.Job, sk.Tick.UnixMilli(), sk.Result)
			v := byKey[key]
			if v == nil {
				v = &skipView{Job: sk.Job, Link: jobLink(sk.Job), Tick: sk.Tick, Reason: sk.Result}
				byKey[key] = v
			}
			v.Replicas = append(v.Replicas, r.Instance)
		}
	}
	out := make([]skipView, 0, len(byKey))
	for _, v := range byKey {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b skipView) int {
		if c := b.Tick.Compare(a.Tick); c != 0 {
			return c
		}
		return strings.Compare(a.Job+"\x00"+a.Reason, b.Job+"\x00"+b.Reason)
	})
	return out
}
