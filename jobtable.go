package redcron

import (
	"context"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// Publishing the job table: every jobTableEvery, with a TTL of
// jobTableTTL.
const (
	jobTableEvery = 30 * time.Second
	jobTableTTL   = 2 * time.Minute
)

// publishJobTable publishes the replica's job table (each job's spec and
// zone) under its digest on every node until ctx is done, for the admin
// command's status (the heartbeat carries only the digest): in full when
// the digest is new to a node, then only its TTL. Replicas with the same
// table share one key.
func (s *Scheduler) publishJobTable(ctx context.Context) {
	keys, err := engine.NewKeyspace(s.locks.KeyPrefix())
	if err != nil {
		return // the Redlock checked its prefix
	}
	var nodes []*engine.Node
	for _, n := range s.locks.Nodes() {
		nodes = append(nodes, (*engine.Node)(n))
	}
	published := make([]string, len(nodes)) // the digest each node has in full
	ticker := time.NewTicker(jobTableEvery)
	defer ticker.Stop()
	for {
		digest := s.table.get()
		jobs := map[string]engine.JobSpec{}
		for _, e := range s.s.Entries() {
			jobs[e.Name] = engine.JobSpec{Spec: e.Spec, Zone: e.Location.String()}
		}
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Go(func() {
				nctx, cancel := context.WithTimeout(ctx, jobTableEvery/2)
				defer cancel()
				refresh := published[i] == digest
				if n.PublishJobTable(nctx, keys.JobTable(digest), jobs, refresh, jobTableTTL) == nil {
					published[i] = digest
				}
			})
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
