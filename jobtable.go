package redcron

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// jobTableEvery is how often a replica publishes its job table; the table
// lives four periods on a node.
const jobTableEvery = 30 * time.Second

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
func (s *Scheduler) publishJobTable(ctx context.Context) {
	keys, nodes, err := s.nodes()
	if err != nil {
		return // the Redlock checked its prefix
	}
	every := s.tableEvery
	ttl := 4 * every
	timeout := max(every/2, time.Second)    // each node's, in each round
	published := make([]string, len(nodes)) // the digest each node was last given in full
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		start := time.Now()
		fields, digest := s.table.table()
		key := keys.JobTable(digest)
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
		if s.tableRound != nil {
			s.tableRound(start, errs)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// goodbyeTimeout bounds the removal of a stopped replica's heartbeat.
const goodbyeTimeout = time.Second

// goodbye removes the replica's heartbeat (and with it the skips it
// reports) from every node, in parallel, within goodbyeTimeout, once Run
// stopped its heartbeats, its runs ended and their leases were released:
// a clean stop is seen at once, not after the heartbeat's TTL. A node
// that misses it keeps the key until its TTL. The job table stays: other
// replicas may publish the same one, and a table no live heartbeat names
// is read by no one and expires within four periods.
func (s *Scheduler) goodbye(ctx context.Context) {
	keys, nodes, err := s.nodes()
	if err != nil {
		return
	}
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), goodbyeTimeout)
	defer cancel()
	key := keys.Heartbeat(s.s.InstanceID())
	errs := engine.OnEach(nodes, func(_ int, n *engine.Node) error { return n.EndHeartbeat(gctx, key) })
	if err := errors.Join(errs...); err != nil {
		s.log.LogAttrs(ctx, slog.LevelDebug, "heartbeat left on some nodes until its TTL", slog.Any("error", err))
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
