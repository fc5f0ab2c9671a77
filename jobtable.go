package redcron

import (
	"context"
	"slices"
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
	keys, nodes, err := s.nodes()
	if err != nil {
		return // the Redlock checked its prefix
	}
	published := make([]string, len(nodes)) // the digest each node has in full
	ticker := time.NewTicker(jobTableEvery)
	defer ticker.Stop()
	for {
		digest := s.table.get()
		var jobs map[string]engine.JobSpec // built only for a node without this digest's table
		if slices.ContainsFunc(published, func(d string) bool { return d != digest }) {
			jobs = map[string]engine.JobSpec{}
			for _, e := range s.s.Entries() {
				jobs[e.Name] = engine.JobSpec{Spec: e.Spec, Zone: e.Location.String()}
			}
		}
		engine.OnEach(nodes, func(i int, n *engine.Node) error {
			nctx, cancel := context.WithTimeout(ctx, jobTableEvery/2)
			defer cancel()
			err := n.PublishJobTable(nctx, keys.JobTable(digest), jobs, published[i] == digest, jobTableTTL)
			if err == nil {
				published[i] = digest
			}
			return err
		})
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// nodes returns the keyspace and the nodes of the scheduler's Redlock, for
// the work the front door does on them beside the scheduler (publishing
// the job table, taking trigger requests).
func (s *Scheduler) nodes() (engine.Keyspace, []*engine.Node, error) {
	keys, err := engine.NewKeyspace(s.locks.KeyPrefix())
	if err != nil {
		return engine.Keyspace{}, nil, err
	}
	var nodes []*engine.Node
	for _, n := range s.locks.Nodes() {
		nodes = append(nodes, (*engine.Node)(n))
	}
	return keys, nodes, nil
}
