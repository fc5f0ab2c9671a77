package redcron

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/scheduler"
)

// jobTable gives the replica's heartbeat the digest of its scheduler's
// jobs (leakscan.WithReplicaInfo), and the publisher the table itself,
// both computed again only after an Add or a Remove.
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
// fields, however spaced), time zone and options, so that two replicas
// with the same jobs agree whatever order they added them in, and any job
// added, removed or changed changes its digest (engine.EncodeJobTable).
func specsOf(entries []scheduler.Entry) map[string]engine.JobSpec {
	jobs := make(map[string]engine.JobSpec, len(entries))
	for _, e := range entries {
		jobs[e.Name] = engine.JobSpec{Spec: strings.Join(strings.Fields(e.Spec), " "), Zone: e.Location.String(),
			LockTTL: e.LockTTL, RunTimeout: e.RunTimeout, MisfireGrace: e.MisfireGrace, CatchUp: e.CatchUp,
			Attempts: e.Attempts, Backoff: e.Backoff}
	}
	return jobs
}
