package mutex

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
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

// TryLock makes one attempt to acquire the lock called name for ttl. It
// returns the held Lock, or an error: a *QuorumError matching ErrHeld,
// ErrAlreadyRun or ErrNoQuorum (and ErrNotAcquired), or an error matching
// ErrInvalidOption for a bad name or TTL. Under the KeepAlive context of a
// lock of the same name from this Redlock, it reenters that lock (see Lock).
func (r *Redlock) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	keys, lc, err := r.prepare(name, ttl, opts)
	if err != nil {
		return nil, err
	}
	if l, ok, err := r.reenter(ctx, name, lc); ok {
		return l, err
	}
	if lc.permits > 0 {
		return r.tryPermits(ctx, name, ttl, lc)
	}
	return r.tryLock(ctx, keys, ttl, lc)
}

// tryLock is TryLock for a request prepared.
func (r *Redlock) tryLock(ctx context.Context, keys engine.LockKeys, ttl time.Duration, lc lockConfig) (*Lock, error) {
	name := keys.Name
	lc.ticket = lockwire.Ticket(ctx, name) // a trigger's request, from our own wiring
	if err := r.checkOwner(name, lc.owner); err != nil {
		return nil, err
	}
	reqs := []attemptReq{{keys: keys, ttl: ttl, lc: lc, token: engine.NewToken()}}
	var res Result
	if rights, parents := r.partsOf(ctx, reqs); parents != nil {
		res = r.claimAll(ctx, reqs, rights, parents)[0]
	} else {
		res = r.attemptAll(ctx, reqs)[0]
	}
	return res.Lock, res.Err
}

// prepare validates a lock request and applies its options.
func (r *Redlock) prepare(name string, ttl time.Duration, opts []LockOption) (engine.LockKeys, lockConfig, error) {
	if err := r.check(name, ttl, 0, 0); err != nil {
		return engine.LockKeys{}, lockConfig{}, err
	}
	keys, _ := r.keys.Lock(name) // checked above
	var lc lockConfig
	for _, o := range opts {
		if o == nil {
			return engine.LockKeys{}, lockConfig{}, fmt.Errorf("%w: lock %q: nil LockOption", ErrInvalidOption, name)
		}
		o(&lc)
	}
	if err := r.checkOccurrence(name, lc.occurrence); err != nil {
		return engine.LockKeys{}, lockConfig{}, err
	}
	if err := checkPermits(name, lc); err != nil {
		return engine.LockKeys{}, lockConfig{}, err
	}
	return keys, lc, nil
}

// checkOwner refuses a lock to an owner the owner check refuses (see
// WithOwnerCheck), at every attempt: undecided (ErrNoQuorum), as no node
// was asked, and worth trying again once the check passes.
func (r *Redlock) checkOwner(name, owner string) error {
	if err := r.ownerErr(owner, false); err != nil {
		return &QuorumError{Op: "acquire", Name: name, Quorum: r.quorum, Nodes: r.unanswered(), Reason: ErrNoQuorum,
			Detail: err.Error() + "; no node was asked"}
	}
	return nil
}

// checkOccurrence refuses to claim an occurrence (unix ms; 0 for none)
// outside the span its mark protects: older than MaxReach, since its mark
// may have expired, or further ahead than the max TTL and the skew margin,
// since a node restarted before the occurrence could not vouch for it.
func (r *Redlock) checkOccurrence(name string, occurrence int64) error {
	if occurrence == 0 {
		return nil
	}
	at := occurrenceTime(occurrence)
	switch age := time.Since(at); {
	case age > r.maxReach():
		return fmt.Errorf("%w: lock %q: occurrence %s is %v old, more than the %v the state TTL (%v, WithStateTTL) keeps its mark for: it cannot be claimed safely",
			ErrInvalidOption, name, at.UTC().Format(time.RFC3339), age.Round(time.Second), r.maxReach(), r.cfg.stateTTL)
	case -age > r.cfg.maxTTL+clockSkew:
		return fmt.Errorf("%w: lock %q: occurrence %s is %v ahead, more than the max TTL (%v, WithMaxTTL) and %v: it cannot be claimed safely",
			ErrInvalidOption, name, at.UTC().Format(time.RFC3339), (-age).Round(time.Millisecond), r.cfg.maxTTL, clockSkew)
	}
	return nil
}

// maxReach returns how long after an occurrence it can still be claimed:
// the state TTL less the max TTL (the longest a claim may be made ahead of
// its occurrence) and a clock skew margin of 2 s, so that the occurrence's
// mark is still kept on the nodes.
func (r *Redlock) maxReach() time.Duration {
	return r.cfg.stateTTL - r.cfg.maxTTL - clockSkew
}

// unanswered returns a result per node with no answer.
func (r *Redlock) unanswered() []NodeResult {
	rs := make([]NodeResult, len(r.nodes))
	for i, n := range r.nodes {
		rs[i].Node = n.Name()
	}
	return rs
}

// releaseOn deletes value on the nodes whose target flag is set (all nodes
// when targets is nil), and waits for the answers until decided says the
// outcome is known, or up to the node timeout. The calls stay queued
// longer, whatever ctx does (see releaseBound), since a key left behind
// blocks others; Flush waits for them. Nodes not targeted get no vote.
func (r *Redlock) releaseOn(ctx context.Context, targets []bool, keys engine.LockKeys, value string, occurrence int64, ttl time.Duration, w engine.LedgerWrite, decided decider) []NodeResult {
	rctx, cancel := context.WithTimeout(context.Background(), r.releaseBound(ttl))
	if len(r.nodes) == 1 {
		rctx = engine.MayBlock(rctx) // as fanout does for the other calls
	}
	var left atomic.Int32
	left.Store(int32(len(r.nodes)))
	return r.fanout(context.WithoutCancel(ctx), func(_ context.Context, i int, n *engine.Node, deliver func(NodeResult)) {
		done := func(res NodeResult) {
			if left.Add(-1) == 0 {
				cancel()
			}
			deliver(res)
		}
		if targets != nil && !targets[i] {
			done(NodeResult{})
			return
		}
		r.releaseAsync(rctx, n, keys, value, occurrence, w, func(ok bool, err error) { done(boolResult(ok, err)) })
	}, decided, nil)
}

// releaseAsync sends a release to n, counted for Flush until it is
// answered, then passes the answer to done.
func (r *Redlock) releaseAsync(ctx context.Context, n *engine.Node, keys engine.LockKeys, value string, occurrence int64, w engine.LedgerWrite, done func(bool, error)) {
	r.pending.add(1)
	n.ReleaseAsync(ctx, keys, value, occurrence, r.cfg.stateTTL, w, func(ok bool, err error) {
		r.pending.done()
		done(ok, err)
	})
}

// releaseBound is how long a release may wait to be sent: long enough to
// get past a backlog of calls to a slow node, and never longer than the
// lock would live by itself.
func (r *Redlock) releaseBound(ttl time.Duration) time.Duration {
	return min(ttl, max(10*r.cfg.nodeTimeout, time.Second))
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
