package mutex

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/store"
)

// Redlock acquires locks on a majority of independent Redis masters. It is
// safe for concurrent use; create it with New.
type Redlock struct {
	nodes   []*engine.Node
	keys    engine.Keyspace
	quorum  int
	cfg     config
	pending *releases // release calls under way, for Flush
	servers *servers  // what is known of each node's server, for the restart check
	states  *nodeStates
	// fenceFloor is the highest fence counter a node answered to a claim
	// of parts as ahead of the claim's (see nextFence).
	fenceFloor atomic.Uint64
	ends       ends   // parts released, to end on the nodes (ends.go)
	waits      *waits // Lock's waiters (waiters.go)
}

// New returns a Redlock over nodes: 1, 3 or 5 independent masters are the
// usual counts (an even count tolerates no more failures than the odd count
// below it). It validates the options and does no I/O.
func New(storeNodes []*store.Node, opts ...Option) (*Redlock, error) {
	if len(storeNodes) == 0 {
		return nil, fmt.Errorf("%w: New: empty node list", ErrInvalidOption)
	}
	seen := make(map[string]bool, len(storeNodes))
	nodes := make([]*engine.Node, len(storeNodes))
	for i, sn := range storeNodes {
		n := (*engine.Node)(sn)
		nodes[i] = n
		if n == nil {
			return nil, fmt.Errorf("%w: New: node %d is nil", ErrInvalidOption, i)
		}
		if seen[n.Name()] {
			return nil, fmt.Errorf("%w: New: node %q appears twice", ErrInvalidOption, n.Name())
		}
		seen[n.Name()] = true
	}
	cfg := defaults()
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: New: nil Option", ErrInvalidOption)
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if reach := cfg.stateTTL - cfg.maxTTL - clockSkew; reach < time.Minute {
		return nil, fmt.Errorf("%w: WithStateTTL: %v leaves %v to claim an occurrence after it (less the max TTL %v and %v), below 1m",
			ErrInvalidOption, cfg.stateTTL, reach, cfg.maxTTL, clockSkew)
	}
	if cfg.maxTTL < minTTLFactor*cfg.nodeTimeout {
		return nil, fmt.Errorf("%w: WithMaxTTL: %v is below %d × the node timeout (%v)", ErrInvalidOption, cfg.maxTTL, minTTLFactor, cfg.nodeTimeout)
	}
	ks, err := engine.NewKeyspace(cfg.prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	r := &Redlock{nodes: nodes, keys: ks, quorum: len(nodes)/2 + 1, cfg: cfg, pending: &releases{}, servers: newServers(len(nodes)), states: &nodeStates{}}
	r.waits = newWaits(r)
	return r, nil
}

// drift is the clock drift allowance for a TTL: 1 % of it and 2 ms, as the
// Redlock algorithm suggests.
func (r *Redlock) drift(ttl time.Duration) time.Duration {
	return ttl/100 + 2*time.Millisecond
}

// check reports whether TryLock and Lock would accept name and ttl, and
// occurrences claimed up to lead before them and up to reach after them,
// with the error they would return. The lead may be at most the max TTL (a
// node restarted within it could not vouch for the occurrence); the reach
// at most the state TTL less the max TTL and 2 s (the mark must still be
// kept). It does no I/O.
func (r *Redlock) check(name string, ttl, lead, reach time.Duration) error {
	if err := engine.CheckName(name); err != nil { // what Keyspace.Lock checks, without its keys
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	if err := r.checkTTL(name, ttl); err != nil {
		return err
	}
	if lead > r.cfg.maxTTL {
		return fmt.Errorf("%w: lock %q: a claim %v ahead of its occurrence is above the max TTL (%v, WithMaxTTL): a node restarted within it could not vouch that the occurrence was not run",
			ErrInvalidOption, name, lead, r.cfg.maxTTL)
	}
	if max := r.maxReach(); reach > max {
		return fmt.Errorf("%w: lock %q: a claim %v after its occurrence is longer than the %v its mark is kept (the state TTL less the max TTL and %v): raise WithStateTTL",
			ErrInvalidOption, name, reach, max, clockSkew)
	}
	return nil
}

// checkTTL validates a lock TTL against the node timeout and the max TTL.
func (r *Redlock) checkTTL(name string, ttl time.Duration) error {
	if min := minTTLFactor * r.cfg.nodeTimeout; ttl < min {
		return fmt.Errorf("%w: lock %q: ttl %v is below %d × the node timeout (%v): too short to acquire and extend", ErrInvalidOption, name, ttl, minTTLFactor, r.cfg.nodeTimeout)
	}
	if ttl > r.cfg.maxTTL {
		return fmt.Errorf("%w: lock %q: ttl %v is above the max TTL (%v, WithMaxTTL)", ErrInvalidOption, name, ttl, r.cfg.maxTTL)
	}
	return nil
}

// unanswered returns a result per node with no answer.
func (r *Redlock) unanswered() []NodeResult {
	rs := make([]NodeResult, len(r.nodes))
	for i, n := range r.nodes {
		rs[i].Node = n.Name()
	}
	return rs
}

// failure turns a node's error into its vote.
func failure(err error) NodeResult {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return NodeResult{Vote: voteCanceled, Err: err}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return NodeResult{Vote: voteTimeout, Err: err}
	case engine.ServerError(err):
		return NodeResult{Vote: voteError, Err: err}
	}
	return NodeResult{Vote: voteUnreachable, Err: err}
}

// deliverBool adapts deliver to a compare-and-act script's answer.
func deliverBool(deliver func(NodeResult)) func(bool, error) {
	return func(ok bool, err error) { deliver(boolResult(ok, err)) }
}

// boolResult turns a compare-and-act script's answer into a vote.
func boolResult(ok bool, err error) NodeResult {
	switch {
	case err != nil:
		return failure(err)
	case ok:
		return NodeResult{Vote: voteYes}
	}
	return NodeResult{Vote: voteNotOwner}
}

func (r *Redlock) observe(e Event) {
	r.noteNodes(e.Nodes)
	for _, o := range r.cfg.observers {
		o(e)
	}
}

// ownerErr returns the first owner check's error for owner (WithOwnerCheck),
// or nil without one or an owner.
func (r *Redlock) ownerErr(owner string, extending bool) error {
	if owner == "" {
		return nil
	}
	for _, check := range r.cfg.ownerChecks {
		if err := check(owner, extending); err != nil {
			return err
		}
	}
	return nil
}
