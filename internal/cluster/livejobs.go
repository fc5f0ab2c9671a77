package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
)

// LiveJobs is what the live replicas publish of their jobs: the union of
// the job tables whose digests their heartbeats carry. A name none of them
// publishes (known only from a ledger, a pause key or a leftover lock) is
// no job of the fleet's, unless it is in a table not known.
type LiveJobs struct {
	// Jobs are the published jobs by name, each with its Spec, Zone and
	// Next (from the first table read that has it).
	Jobs map[string]Job
	// Unknown are the live replicas whose job table is not known: they
	// publish none (an older release), or no node read could give it.
	Unknown []string
}

// LiveJobs reads every job table the live replicas of rep publish, from
// the nodes the scan could read, and returns their jobs with each one's
// next tick after now.
func (c *Cluster) LiveJobs(ctx context.Context, rep *leaks.Report, now time.Time) LiveJobs {
	out := LiveJobs{Jobs: map[string]Job{}}
	nodes := c.scannedNodes(rep)
	tables := rep.JobTables()
	digests := make([]string, 0, len(tables))
	for d := range tables {
		digests = append(digests, d)
	}
	read := make([]map[string]engine.JobSpec, len(digests))
	var wg sync.WaitGroup
	for i, d := range digests {
		wg.Go(func() { read[i] = c.jobTable(ctx, nodes, d) })
	}
	wg.Wait()
	known := map[string]bool{}
	for i, table := range read {
		known[digests[i]] = len(table) > 0
		for name, js := range table {
			if _, ok := out.Jobs[name]; !ok {
				out.Jobs[name] = Job{Name: name, Spec: js.Spec, Zone: js.Zone, Next: NextTick(js, now)}
			}
		}
	}
	for _, owner := range rep.Live { // sorted
		if !known[rep.Beats[owner].JobTable] {
			out.Unknown = append(out.Unknown, owner)
		}
	}
	return out
}

// jobTable returns the job table of digest, merged over the nodes that
// have it (the table of a digest is one table): nil when none has.
func (c *Cluster) jobTable(ctx context.Context, nodes []*engine.Node, digest string) map[string]engine.JobSpec {
	tables := make([]map[string]engine.JobSpec, len(nodes))
	engine.OnEach(nodes, func(i int, n *engine.Node) (err error) {
		tables[i], err = n.JobTable(ctx, c.Keys.JobTable(digest))
		return err
	})
	var out map[string]engine.JobSpec
	for _, t := range tables {
		for name, js := range t {
			if out == nil {
				out = map[string]engine.JobSpec{}
			}
			out[name] = js
		}
	}
	return out
}

// scannedNodes returns the nodes the scan of rep could read.
func (c *Cluster) scannedNodes(rep *leaks.Report) []*engine.Node {
	failed := map[string]bool{}
	for _, err := range rep.Errors {
		if ne := (*engine.Error)(nil); errors.As(err, &ne) {
			failed[ne.Node] = true
		}
	}
	var out []*engine.Node
	for _, n := range c.Nodes {
		if !failed[n.Name()] {
			out = append(out, n)
		}
	}
	return out
}
