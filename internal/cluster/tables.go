package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redcron/redcron/internal/engine"
)

// ErrNoSuchJob is matched by the error of CheckJob (and of Tables.Check)
// for a name no live replica publishes in its job table.
var ErrNoSuchJob = errors.New("no such job")

// Tables is what the live replicas publish of their jobs: each one's job
// table digest (its heartbeat carries it), and the table of each digest,
// read from the nodes.
type Tables struct {
	// Of is each live replica's job table digest; "" for a replica that
	// publishes none (an older release).
	Of map[string]string
	// ByDigest is the table of each digest read: job name → spec and zone.
	// A digest no node could give (lost, and not yet published again) is
	// missing.
	ByDigest map[string]map[string]engine.JobSpec
}

// EmptyTable is the digest of a job table without jobs, which a replica
// does not write: a replica that publishes it is known to have no job.
const EmptyTable = "e3b0c44298fc"

// Known reports whether the table of every live replica was read: only
// then is a job that no table lists known to run nowhere.
func (t *Tables) Known() bool { return len(t.Unread()) == 0 }

// Unread returns the live replicas whose job table is not known, sorted:
// they publish none (an older release), or no node could give it. Their
// jobs may be any.
func (t *Tables) Unread() []string {
	var out []string
	for owner, d := range t.Of {
		if _, ok := t.ByDigest[d]; !ok && d != EmptyTable {
			out = append(out, owner)
		}
	}
	slices.Sort(out)
	return out
}

// Publishers returns the live replicas whose job table lists job, sorted.
func (t *Tables) Publishers(job string) []string {
	var out []string
	for owner, d := range t.Of {
		if _, ok := t.ByDigest[d][job]; ok {
			out = append(out, owner)
		}
	}
	slices.Sort(out)
	return out
}

// Names returns every job some live replica's table lists, sorted.
func (t *Tables) Names() []string {
	var out []string
	for _, d := range t.used() {
		for name := range t.ByDigest[d] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Tagged returns the jobs that some live replica's table lists with tag,
// sorted: during a deploy that adds or removes a tag, a job counts as
// tagged while any replica says so.
func (t *Tables) Tagged(tag string) []string {
	var out []string
	for _, d := range t.used() {
		for name, js := range t.ByDigest[d] {
			if slices.Contains(js.Tags, tag) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Spec returns job's spec and zone from the table that the most live
// replicas publish among those listing it (of two as common, the smaller
// digest's), and whether some table lists it.
func (t *Tables) Spec(job string) (engine.JobSpec, bool) {
	for _, d := range t.used() {
		if js, ok := t.ByDigest[d][job]; ok {
			return js, true
		}
	}
	return engine.JobSpec{}, false
}

// used returns the digests of the tables read that some live replica
// publishes, the most published first, then by digest.
func (t *Tables) used() []string {
	count := map[string]int{}
	for _, d := range t.Of {
		if _, ok := t.ByDigest[d]; ok {
			count[d]++
		}
	}
	out := make([]string, 0, len(count))
	for d := range count {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(count[b]-count[a], strings.Compare(a, b)) })
	return out
}

// Apart returns the live replicas whose job table shares no job with the
// tables of the most live replicas: the replicas of another service under
// the same key prefix, which would otherwise pass for a deploy in
// progress. The tables are grouped by the jobs they share (a table is in
// the group of any table it shares a job with); with one group no replica
// is apart; else the replicas outside the group most replicas publish are,
// and all of them when two groups are as large. Replicas whose table is
// unknown, or empty, are in no group.
func (t *Tables) Apart() map[string]bool {
	type group struct {
		digests []string
		jobs    map[string]bool
	}
	var groups []*group // pairwise without a job in common
	for _, d := range t.used() {
		g := &group{digests: []string{d}, jobs: map[string]bool{}}
		for job := range t.ByDigest[d] {
			g.jobs[job] = true
		}
		kept := groups[:0]
		for _, o := range groups {
			if !shares(o.jobs, t.ByDigest[d]) {
				kept = append(kept, o)
				continue
			}
			g.digests = append(g.digests, o.digests...)
			for job := range o.jobs {
				g.jobs[job] = true
			}
		}
		groups = append(kept, g)
	}
	if len(groups) < 2 {
		return nil
	}
	size := make([]int, len(groups))
	of := map[string]int{} // digest → its group
	for i, g := range groups {
		for _, d := range g.digests {
			of[d] = i
		}
	}
	for _, d := range t.Of {
		if i, ok := of[d]; ok {
			size[i]++
		}
	}
	largest := slices.Max(size)
	tied := 0
	for _, n := range size {
		if n == largest {
			tied++
		}
	}
	apart := map[string]bool{}
	for owner, d := range t.Of {
		if i, ok := of[d]; ok && (size[i] < largest || tied > 1) {
			apart[owner] = true
		}
	}
	return apart
}

// shares reports whether table lists one of jobs.
func shares(jobs map[string]bool, table map[string]engine.JobSpec) bool {
	for job := range table {
		if jobs[job] {
			return true
		}
	}
	return false
}

// Check returns nil when some live replica publishes job in its job
// table, or when a live replica's table could not be read (it may list
// it); otherwise an error matching ErrNoSuchJob, which says how many
// replicas are live. With no live replica, every name is no such job.
func (t *Tables) Check(job string) error {
	if len(t.Publishers(job)) > 0 || !t.Known() {
		return nil
	}
	switch len(t.Of) {
	case 0:
		return fmt.Errorf("%w: %q: no replica is live to publish it", ErrNoSuchJob, job)
	case 1:
		return fmt.Errorf("%w: %q is not in the job table of the live replica", ErrNoSuchJob, job)
	}
	return fmt.Errorf("%w: %q is in the job table of none of the %d live replicas", ErrNoSuchJob, job, len(t.Of))
}

// CheckJob returns nil when job is one some live replica publishes (see
// Tables.Check): it reads the heartbeats and the job tables, not every
// key. Its error matches ErrNoSuchJob for a name none publishes; another
// error says it could not tell (no node could be read).
func (c *Cluster) CheckJob(ctx context.Context, job string) error {
	t, err := c.Published(ctx)
	if err != nil {
		return fmt.Errorf("cannot tell whether %q is a job: %w", job, err)
	}
	return t.Check(job)
}

// Published reads the live replicas' heartbeats and their job tables. Its
// error says that no node could be read.
func (c *Cluster) Published(ctx context.Context) (*Tables, error) {
	beats := make([]map[string]engine.Beat, len(c.Nodes))
	errs := c.onEveryNode(func(i int, n *engine.Node) error {
		beats[i] = map[string]engine.Beat{}
		return n.Scan(ctx, c.Keys.HeartbeatPattern(), func(ki engine.KeyInfo) error {
			if kind, owner := c.Keys.Parse(ki.Key); kind == engine.KindHeartbeat && ki.TTL > 0 {
				beats[i][owner] = engine.ParseBeat(ki.Value)
			}
			return nil
		})
	})
	if engine.Answered(errs) == 0 && len(c.Nodes) > 0 {
		return nil, fmt.Errorf("no node could be read: %w", errors.Join(errs...))
	}
	latest := map[string]engine.Beat{}
	for _, bs := range beats {
		for owner, b := range bs {
			if old, ok := latest[owner]; !ok || old.SentMS <= b.SentMS {
				latest[owner] = b
			}
		}
	}
	return c.tables(ctx, latest), nil
}

// tables reads the job table of each digest the live replicas' latest
// heartbeats (beats, by owner) carry, from every node at once, keeping the
// first node's (in the nodes' order) that has it.
func (c *Cluster) tables(ctx context.Context, beats map[string]engine.Beat) *Tables {
	t := &Tables{Of: map[string]string{}, ByDigest: map[string]map[string]engine.JobSpec{}}
	var digests []string
	for owner, b := range beats {
		t.Of[owner] = b.JobTable
		if b.JobTable != "" && !slices.Contains(digests, b.JobTable) {
			digests = append(digests, b.JobTable)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, d := range digests {
		wg.Go(func() {
			read := make([]map[string]engine.JobSpec, len(c.Nodes))
			c.onEveryNode(func(i int, n *engine.Node) (err error) {
				read[i], err = n.JobTable(ctx, c.Keys.JobTable(d))
				return err
			})
			for _, table := range read {
				if len(table) > 0 {
					mu.Lock()
					t.ByDigest[d] = table
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return t
}
