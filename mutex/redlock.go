package mutex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/store"
)

// Redlock acquires locks on a majority of independent Redis masters. It is
// safe for concurrent use; create it with New.
type Redlock struct {
	nodes  []*store.Node
	keys   store.Keyspace
	quorum int
	cfg    config
}

// New returns a Redlock over nodes: 1, 3 or 5 independent masters are the
// usual counts (an even count tolerates no more failures than the odd count
// below it). It validates the options and does no I/O.
func New(nodes []*store.Node, opts ...Option) (*Redlock, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: New: empty node list", ErrInvalidOption)
	}
	seen := make(map[string]bool, len(nodes))
	for i, n := range nodes {
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
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.maxTTL < minTTLFactor*cfg.nodeTimeout {
		return nil, fmt.Errorf("%w: WithMaxTTL: %v is below %d × the node timeout (%v)", ErrInvalidOption, cfg.maxTTL, minTTLFactor, cfg.nodeTimeout)
	}
	ks, err := store.NewKeyspace(cfg.prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return &Redlock{nodes: nodes, keys: ks, quorum: len(nodes)/2 + 1, cfg: cfg}, nil
}

// Nodes returns the nodes, in the order given to New.
func (r *Redlock) Nodes() []*store.Node { return r.nodes }

// Quorum returns the number of nodes that must agree: len(nodes)/2+1.
func (r *Redlock) Quorum() int { return r.quorum }

// MaxTTL returns the largest TTL a lock may ask for (WithMaxTTL).
func (r *Redlock) MaxTTL() time.Duration { return r.cfg.maxTTL }

// MaxHold returns how long KeepAlive extends one lock (WithMaxHold).
func (r *Redlock) MaxHold() time.Duration { return r.cfg.maxHold }

// Keyspace returns the key layout the locks use.
func (r *Redlock) Keyspace() store.Keyspace { return r.keys }

// drift is the clock drift allowance for a TTL.
func (r *Redlock) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*r.cfg.driftFactor) + 2*time.Millisecond
}

// Check reports whether TryLock and Lock would accept name and ttl, with
// the error they would return. It does no I/O.
func (r *Redlock) Check(name string, ttl time.Duration) error {
	if _, err := r.keys.Lock(name); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return r.checkTTL(name, ttl)
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
// ErrInvalidOption for a bad name or TTL.
func (r *Redlock) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	keys, lc, err := r.prepare(name, ttl, opts)
	if err != nil {
		return nil, err
	}
	return r.attempt(ctx, keys, ttl, lc, store.NewToken())
}

// prepare validates a lock request and applies its options.
func (r *Redlock) prepare(name string, ttl time.Duration, opts []LockOption) (store.LockKeys, lockConfig, error) {
	if err := r.Check(name, ttl); err != nil {
		return store.LockKeys{}, lockConfig{}, err
	}
	keys, _ := r.keys.Lock(name) // checked above
	lc := lockConfig{owner: r.cfg.owner}
	for _, o := range opts {
		o(&lc)
	}
	return keys, lc, nil
}

// Lock acquires the lock called name for ttl, retrying after a random delay
// (WithRetryDelay) while it is held elsewhere or no quorum is reached, until
// it succeeds or ctx is done. It gives up at once on ErrAlreadyRun and on
// invalid arguments. When ctx ends the wait, the error matches both the last
// attempt's reason and ctx's error.
func (r *Redlock) Lock(ctx context.Context, name string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	keys, lc, err := r.prepare(name, ttl, opts)
	if err != nil {
		return nil, err
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var last error // the previous attempt's error
	for {
		// A fresh token each time: a late release of an earlier attempt's
		// value must never match this attempt's.
		l, err := r.attempt(ctx, keys, ttl, lc, store.NewToken())
		switch {
		case err == nil, errors.Is(err, ErrAlreadyRun):
			return l, err
		case ctx.Err() != nil && last != nil:
			// This attempt was cut short by ctx: the previous one says why
			// the lock could not be had.
			return nil, errors.Join(last, context.Cause(ctx))
		case ctx.Err() != nil:
			return nil, err
		}
		last = err
		d := r.cfg.retryDelay/2 + rand.N(r.cfg.retryDelay)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, errors.Join(err, context.Cause(ctx))
		}
	}
}

// attempt is one acquisition: the vote, the commit of the fence and the
// occurrence, and the validity check.
func (r *Redlock) attempt(ctx context.Context, keys store.LockKeys, ttl time.Duration, lc lockConfig, token string) (*Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, &QuorumError{Op: "acquire", Name: keys.Name, Quorum: r.quorum,
			Nodes: r.unanswered(), Reason: ErrNoQuorum, Cause: context.Cause(ctx)}
	}
	start := time.Now()
	value := store.Value{Token: token, Acquired: start, Occurrence: lc.occurrence, Owner: lc.owner}.String()
	req := store.AcquireRequest{Keys: keys, Value: value, TTL: ttl, Occurrence: lc.occurrence, WantUptime: !r.cfg.trusted}

	var (
		fenceMu sync.Mutex
		fences  = make([]uint64, 0, len(r.nodes))
	)
	strag := &stragglers{r: r, keys: keys, value: value, ttl: ttl}
	results := r.fanout(ctx, func(ctx context.Context, _ int, n *store.Node, deliver func(NodeResult)) {
		n.AcquireAsync(ctx, req, func(rep store.AcquireReply, err error) {
			if err != nil {
				deliver(failure(err))
				return
			}
			fenceMu.Lock()
			fences = append(fences, rep.Fence)
			fenceMu.Unlock()
			switch {
			case rep.Status == store.Held:
				deliver(NodeResult{Vote: VoteHeld, Holder: rep.Holder})
			case rep.Status == store.AlreadyRun:
				deliver(NodeResult{Vote: VoteAlreadyRun})
			case !r.cfg.trusted && rep.Uptime >= 0 && rep.Uptime < r.cfg.maxTTL+time.Second:
				// The node may have forgotten locks it granted before its restart;
				// our key on it is ours, so it is released with the rest. Redis
				// counts uptime from a start time truncated to the second, so
				// it may read up to a second long: hence the extra second.
				deliver(NodeResult{Vote: VoteRestarted, Err: fmt.Errorf("node restarted %v ago, less than the max TTL %v", rep.Uptime, r.cfg.maxTTL)})
			default:
				deliver(NodeResult{Vote: VoteYes})
			}
		})
	}, acquireDecider(len(r.nodes), r.quorum), strag.late)

	qerr := &QuorumError{Op: "acquire", Name: keys.Name, Quorum: r.quorum, Nodes: results}
	if count(results, VoteYes) < r.quorum {
		qerr.Reason, qerr.Holder = acquireReason(results, r.quorum)
		return nil, r.abandon(ctx, strag, qerr, start)
	}

	var fence uint64
	if r.cfg.fencing {
		fenceMu.Lock()
		for _, f := range fences {
			fence = max(fence, f)
		}
		fenceMu.Unlock()
		fence = max(fence+1, uint64(time.Now().UnixMicro()))
	}
	until := start.Add(ttl - r.drift(ttl))
	if fence != 0 || lc.occurrence != 0 {
		if commits, ok := r.commit(ctx, keys, value, fence, lc.occurrence, until); !ok {
			qerr := &QuorumError{Op: "commit", Name: keys.Name, Quorum: r.quorum, Nodes: commits, Reason: ErrNoQuorum,
				Detail: "fence and occurrence not committed to a majority"}
			return nil, r.abandon(ctx, strag, qerr, start)
		}
	}
	if !time.Now().Before(until) {
		qerr.Reason, qerr.Detail = ErrNoQuorum, fmt.Sprintf("validity ran out: acquiring took %v of the %v TTL", time.Since(start), ttl)
		return nil, r.abandon(ctx, strag, qerr, start)
	}
	l := &Lock{r: r, keys: keys, value: value, token: token, fence: fence, occurrence: lc.occurrence,
		ttl: ttl, acquired: start, until: until}
	r.observe(Event{Kind: EventAcquire, Name: keys.Name, Fence: fence, Duration: time.Since(start), Nodes: results})
	return l, nil
}

// commit runs the second phase of an acquisition: it writes the fence and
// the occurrence to the nodes until a majority confirmed, and reports the
// last round's answers and whether it succeeded. A commit that timed out
// may have been applied (the occurrence marked as run), so it is not
// given up on a timeout: unconfirmed nodes are asked again, after a short
// pause, while the lock is valid. Only a majority that no longer holds our
// value or answers with a server error, the end of the validity, or ctx
// ends it without success.
func (r *Redlock) commit(ctx context.Context, keys store.LockKeys, value string, fence uint64, occurrence int64, until time.Time) ([]NodeResult, bool) {
	confirmed := make([]bool, len(r.nodes))
	for {
		results := r.fanout(ctx, func(ctx context.Context, i int, n *store.Node, deliver func(NodeResult)) {
			if confirmed[i] {
				deliver(NodeResult{Vote: VoteYes})
				return
			}
			n.CommitAsync(ctx, keys, value, fence, occurrence, r.cfg.stateTTL, deliverBool(deliver))
		}, quorumDecider(len(r.nodes), r.quorum), nil)
		for i, res := range results {
			confirmed[i] = confirmed[i] || res.Vote == VoteYes
		}
		switch {
		case count(results, VoteYes) >= r.quorum:
			return results, true
		case count(results, VoteNotOwner)+count(results, VoteError) > len(r.nodes)-r.quorum, // definite
			ctx.Err() != nil,
			!time.Now().Add(r.cfg.nodeTimeout).Before(until):
			return results, false
		}
		// Undecided (timeouts, unreachable nodes, a node backing off): ask
		// again after a pause, so that fast failures do not spin.
		pause := time.NewTimer(r.cfg.nodeTimeout / 4)
		select {
		case <-ctx.Done():
			pause.Stop()
			return results, false
		case <-pause.C:
		}
	}
}

// acquireDecider decides an acquisition when a quorum voted yes, or when
// it can no longer get one and the reason is known: a quorum of one
// holder or of marks, or every node answered. A split vote thus waits for
// the slowest node (within the node timeout) to be told apart from a
// lock held elsewhere.
func acquireDecider(n, quorum int) decider {
	return func(rs []NodeResult) bool {
		yes, answered := 0, 0
		for _, r := range rs {
			if r.Vote == VoteYes {
				yes++
			}
			if !r.pending() {
				answered++
			}
		}
		if yes >= quorum || answered == n {
			return true
		}
		if n-answered+yes >= quorum {
			return false // the pending nodes could still make a quorum
		}
		reason, _ := acquireReason(rs, quorum)
		return reason != ErrNoQuorum
	}
}

// acquireReason says why an acquisition without quorum failed, and which
// value holds a quorum when that is the reason. The outcome is final only
// when the votes prove it: a quorum of nodes has the occurrence marked as
// run, or a quorum holds one and the same other value. Refusals from
// different holders (a split vote between contenders), or marks on a
// minority (left by a winner whose commit failed), are undecided: a later
// attempt may win.
func acquireReason(rs []NodeResult, quorum int) (reason error, holder string) {
	if count(rs, VoteAlreadyRun) >= quorum {
		return ErrAlreadyRun, ""
	}
	for i, a := range rs {
		if a.Vote != VoteHeld {
			continue
		}
		same := 1
		for _, b := range rs[i+1:] {
			if b.Vote == VoteHeld && b.Holder == a.Holder {
				same++
			}
		}
		if same >= quorum {
			return ErrHeld, a.Holder
		}
	}
	return ErrNoQuorum, ""
}

// abandon releases a failed attempt on every node, reports it and returns
// its error.
func (r *Redlock) abandon(ctx context.Context, s *stragglers, qerr *QuorumError, start time.Time) error {
	if err := ctx.Err(); err != nil {
		qerr.Cause = context.Cause(ctx)
	}
	s.abandon(ctx, qerr.Nodes)
	r.observe(Event{Kind: EventAcquire, Name: qerr.Name, Err: qerr, Duration: time.Since(start), Nodes: qerr.Nodes})
	return qerr
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
// blocks others. Nodes not targeted get no vote.
func (r *Redlock) releaseOn(ctx context.Context, targets []bool, keys store.LockKeys, value string, occurrence int64, ttl time.Duration, decided decider) []NodeResult {
	rctx, cancel := context.WithTimeout(context.Background(), r.releaseBound(ttl))
	var left atomic.Int32
	left.Store(int32(len(r.nodes)))
	return r.fanout(context.WithoutCancel(ctx), func(_ context.Context, i int, n *store.Node, deliver func(NodeResult)) {
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
		n.ReleaseAsync(rctx, keys, value, occurrence, r.cfg.stateTTL, func(ok bool, err error) { done(boolResult(ok, err)) })
	}, decided, nil)
}

// releaseBound is how long a release may wait to be sent: long enough to
// get past a backlog of calls to a slow node, and never longer than the
// lock would live by itself.
func (r *Redlock) releaseBound(ttl time.Duration) time.Duration {
	return min(ttl, max(10*r.cfg.nodeTimeout, time.Second))
}

// stragglers undoes the grants of nodes that answer after an acquisition
// round was decided, if the attempt is abandoned.
type stragglers struct {
	r         *Redlock
	keys      store.LockKeys
	value     string
	ttl       time.Duration
	mu        sync.Mutex
	abandoned bool
	early     []NodeResult // late answers that came before the attempt was abandoned
}

// late receives an answer that came after its round was decided, on the
// node's worker: it must not block.
func (s *stragglers) late(res NodeResult) {
	s.mu.Lock()
	if !s.abandoned {
		s.early = append(s.early, res) // the attempt may still be abandoned
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if mayHold(res) {
		for _, n := range s.r.nodes {
			if n.Name() == res.Node {
				ctx, cancel := context.WithTimeout(context.Background(), s.r.releaseBound(s.ttl))
				n.ReleaseAsync(ctx, s.keys, s.value, 0, s.r.cfg.stateTTL, func(bool, error) { cancel() })
			}
		}
	}
}

// abandon releases the attempt on every node that may hold its value.
// Nodes that had not answered when the round was decided are left to late,
// which releases them when (and if) their answer says they may hold it.
func (s *stragglers) abandon(ctx context.Context, rs []NodeResult) {
	s.mu.Lock()
	s.abandoned = true
	early := s.early
	s.mu.Unlock()
	targets := make([]bool, len(rs))
	some := false
	for i, res := range rs {
		targets[i] = mayHold(res)
		for _, e := range early {
			if e.Node == res.Node && mayHold(e) {
				targets[i] = true
			}
		}
		some = some || targets[i]
	}
	if some {
		s.r.releaseOn(ctx, targets, s.keys, s.value, 0, s.ttl, allAnswered)
	}
}

// mayHold reports whether a node that gave res to an acquisition may hold
// the acquirer's value: it granted it, or it may have before failing. Not
// a node that had not answered, that said another value or the mark holds,
// or whose call was never sent.
func mayHold(res NodeResult) bool {
	switch res.Vote {
	case 0, VoteHeld, VoteAlreadyRun:
		return false
	}
	return !errors.Is(res.Err, store.ErrNotSent)
}

// failure turns a node's error into its vote.
func failure(err error) NodeResult {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return NodeResult{Vote: VoteCanceled, Err: err}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return NodeResult{Vote: VoteTimeout, Err: err}
	case store.ServerError(err):
		return NodeResult{Vote: VoteError, Err: err}
	}
	return NodeResult{Vote: VoteUnreachable, Err: err}
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
		return NodeResult{Vote: VoteYes}
	}
	return NodeResult{Vote: VoteNotOwner}
}

func (r *Redlock) observe(e Event) {
	if r.cfg.observer != nil {
		r.cfg.observer.ObserveLock(e)
	}
}
