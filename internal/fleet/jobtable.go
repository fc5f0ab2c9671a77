package fleet

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/scheduler"
)

// jobTable gives the replica's heartbeat the digest of its scheduler's
// jobs (leakscan.WithReplicaInfo), and the publisher (publishJobTable) and
// the shards' keeper the table itself, all computed again only after an Add
// or a Remove.
type jobTable struct {
	s       *scheduler.Scheduler
	changes atomic.Uint64 // Adds and Removes so far

	mu     sync.Mutex
	seen   uint64                    // changes when the table was encoded
	specs  map[string]engine.JobSpec // the table; nil until encoded
	fields map[string]string         // the table as its hash holds it
	digest string                    // the digest of fields
}

// changed records an Add or a Remove, once it has returned.
func (t *jobTable) changed() { t.changes.Add(1) }

// jobs returns the digest of the current job table and the table (each
// job's name and its spec as published). The table is shared: the caller
// must not change it.
func (t *jobTable) jobs() (string, map[string]engine.JobSpec) {
	t.table()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.digest, t.specs
}

// get returns the digest of the current job table.
func (t *jobTable) get() string {
	_, digest := t.table()
	return digest
}

// table returns the current job table, as its hash holds it, and its
// digest, both from one reading of the scheduler's jobs: the table
// published under a digest is the table of that digest. An Add that lands
// while it is encoded is counted after, so the next call encodes it again.
// The fields are shared: the caller must not change them.
func (t *jobTable) table() (map[string]string, string) {
	n := t.changes.Load()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fields == nil || t.seen != n {
		t.specs = specsOf(t.s.Entries())
		t.fields, t.digest = engine.EncodeJobTable(t.specs)
		t.seen = n
	}
	return t.fields, t.digest
}

// specsOf returns the job table of entries: every job's name, spec (its
// fields, however spaced), time zone, options and tags, so that two replicas
// with the same jobs agree whatever order they added them in, and any job
// added, removed or changed changes its digest (engine.EncodeJobTable).
func specsOf(entries []scheduler.Entry) map[string]engine.JobSpec {
	jobs := make(map[string]engine.JobSpec, len(entries))
	for _, e := range entries {
		jobs[e.Name] = engine.JobSpec{Spec: strings.Join(strings.Fields(e.Spec), " "), Zone: e.Location.String(),
			LockTTL: e.LockTTL, RunTimeout: e.RunTimeout, MisfireGrace: e.MisfireGrace, CatchUp: e.CatchUp,
			Attempts: e.Attempts, Backoff: e.Backoff, Tags: e.Tags, Limit: e.Limit, Permits: e.Permits}
	}
	return jobs
}

// publishJobTable publishes the replica's job table (each job's spec, zone
// and options) under its digest on every node, at once and then every
// period until ctx is done, for the admin command's status (the heartbeat
// carries only the digest). Replicas with the same table share one key.
//
// A node gets the table in full (HSET and PEXPIRE, one round trip) when
// the digest is new to it; after that, each period costs one command per
// node, a PEXPIRE that renews the TTL and tells whether the node still has
// the table. A node that lost it (restarted empty, or the key expired while
// this replica was paused or cut off) gets it in full in the same period,
// in one more round trip: what a node forgets is written again within a
// period, not only when the table changes.
func (r *Replica) publishJobTable(ctx context.Context) {
	nodes, every := r.nodes, r.tableEvery
	ttl := 4 * every
	timeout := max(every/2, time.Second)    // each node's, in each round
	published := make([]string, len(nodes)) // the digest each node was last given in full
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		start := time.Now()
		fields, digest := r.table.table()
		key := r.keys.JobTable(digest)
		errs := engine.OnEach(nodes, func(i int, n *engine.Node) error {
			if len(fields) == 0 {
				return nil // no job: no table
			}
			nctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if published[i] == digest {
				if kept, err := n.RenewJobTable(nctx, key, ttl); err != nil || kept {
					return err
				}
			}
			published[i] = ""
			if err := n.PublishJobTable(nctx, key, fields, ttl); err != nil {
				return err
			}
			published[i] = digest
			return nil
		})
		if r.tableRound != nil {
			r.tableRound(start, errs)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
