package mutex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Heartbeat publishes owner's liveness: it sets the owner's heartbeat key
// on every node, in parallel, and succeeds when a quorum did. The key lives
// for ttl plus the max TTL: a lease stays valid for up to its TTL after its
// last extension, so an owner cut off from the nodes is taken for dead only
// once none of its leases can still be valid. The leak scan reports the
// locks of owners without a live heartbeat as orphaned; the scheduler calls
// Heartbeat every interval shorter than ttl for its instance id.
func (r *Redlock) Heartbeat(ctx context.Context, owner string, ttl time.Duration) error {
	key := r.keys.Heartbeat(owner)
	start := time.Now()
	errs := make([]error, len(r.nodes))
	results := make([]NodeResult, len(r.nodes))
	var wg sync.WaitGroup
	for i, n := range r.nodes {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, r.cfg.nodeTimeout)
			defer cancel()
			errs[i] = n.Heartbeat(nctx, key, ttl+r.cfg.maxTTL)
			results[i] = NodeResult{Vote: VoteYes}
			if errs[i] != nil {
				results[i] = failure(errs[i])
			}
			results[i].Node, results[i].Latency = n.Name(), time.Since(start)
		})
	}
	wg.Wait()
	var err error
	if yes := count(results, VoteYes); yes < r.quorum {
		err = fmt.Errorf("mutex: heartbeat of %q reached %d of %d nodes: %w", owner, yes, len(r.nodes), errors.Join(errs...))
	}
	// Heartbeats keep the nodes' health fresh for observers between jobs.
	r.observe(Event{Kind: EventHeartbeat, Name: owner, Err: err, Duration: time.Since(start), Nodes: results})
	return err
}
