package redcron

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redcron/redcron/scheduler"
)

// jobTable gives the replica's heartbeat the digest of its scheduler's
// jobs (leakscan.WithReplicaInfo), computed again only after an Add or a
// Remove.
type jobTable struct {
	s       *scheduler.Scheduler
	changes atomic.Uint64 // Adds and Removes so far

	mu     sync.Mutex
	seen   uint64 // changes when digest was computed
	digest string // "" until computed
}

// changed records an Add or a Remove, once it has returned.
func (t *jobTable) changed() { t.changes.Add(1) }

// get returns the digest of the current job table. An Add that lands while
// it is computed is counted after, so the next call computes it again.
func (t *jobTable) get() string {
	n := t.changes.Load()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.digest == "" || t.seen != n {
		t.digest, t.seen = digest(t.s.Entries()), n
	}
	return t.digest
}

// digest returns 12 hex characters of the SHA-256 of a job table: every
// job's name, spec (its fields, however spaced), time zone and options
// (scheduler.Entry), in name order, so that two replicas with the same jobs
// agree whatever order they added them in, and any job added, removed or
// changed changes it.
func digest(entries []scheduler.Entry) string {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b scheduler.Entry) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, e := range entries {
		fmt.Fprintf(h, "%q %q %q %d %d %d %d %d %d\n", e.Name, strings.Join(strings.Fields(e.Spec), " "), e.Location.String(),
			e.LockTTL, e.RunTimeout, e.MisfireGrace, e.CatchUp, e.Attempts, e.Backoff)
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}
