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
		r.beats.failed(owner, ttl)
	} else {
		r.beats.record(owner, start, ttl)
	}
	// Heartbeats keep the nodes' health fresh for observers between jobs.
	r.observe(Event{Kind: EventHeartbeat, Name: owner, Err: err, Duration: time.Since(start), Nodes: results})
	return err
}

// beats remembers the last successful heartbeat of each owner that
// heartbeats through a Redlock, so that its leases are kept only while the
// heartbeat is fresh: a lease extended while the heartbeat is at most its
// TTL old ends before the heartbeat key, which lives the max TTL longer.
type beats struct {
	mu   sync.Mutex
	last map[string]beat
}

type beat struct {
	at  time.Time // when the heartbeat was sent, with the monotonic reading
	ttl time.Duration
}

// record notes a heartbeat of owner sent at at with ttl that reached a
// quorum.
func (b *beats) record(owner string, at time.Time, ttl time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = map[string]beat{}
	}
	if prev, ok := b.last[owner]; !ok || at.After(prev.at) {
		b.last[owner] = beat{at: at, ttl: ttl}
	}
}

// failed notes a heartbeat of owner that did not reach a quorum: an owner
// whose heartbeats have never succeeded is refused leases, as one whose
// last success is too old is.
func (b *beats) failed(owner string, ttl time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = map[string]beat{}
	}
	if _, ok := b.last[owner]; !ok {
		b.last[owner] = beat{ttl: ttl} // the zero time: never
	}
}

// fresh returns an error when owner heartbeats here and its last successful
// heartbeat is older than its TTL, or it has only failed; nil for an owner
// that never tried.
func (b *beats) fresh(owner string) error {
	if owner == "" {
		return nil
	}
	b.mu.Lock()
	last, ok := b.last[owner]
	b.mu.Unlock()
	if ok && last.at.IsZero() {
		return fmt.Errorf("owner %q has no successful heartbeat: its leases are not kept, as the leak scan would take it for dead", owner)
	}
	if age := time.Since(last.at); ok && age > last.ttl {
		return fmt.Errorf("owner %q's last heartbeat was %v ago, past its TTL %v: its leases are not kept, as the leak scan may take it for dead",
			owner, age.Round(time.Millisecond), last.ttl)
	}
	return nil
}
