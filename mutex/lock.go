package mutex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/outcome"
)

// Lock is a held lease. Its methods are safe for concurrent use. The
// context KeepAlive returns is its watchdog's: its Done channel closes the
// moment the lock can no longer be proven, and context.Cause says why.
//
// A lock is reentrant for the code running under its KeepAlive context:
// Lock or TryLock of the same name on the same Redlock with that context
// (or one derived from it) returns at once a new handle on the same hold,
// with the same fence, without asking the nodes. Each handle is released
// on its own; the lock leaves the nodes when the last one is, and the
// first handle's KeepAlive keeps it alive for all of them until then.
type Lock struct {
	r          *Redlock
	keys       engine.LockKeys
	value      string
	token      string
	fence      uint64
	occurrence int64
	owner      string
	ttl        time.Duration
	acquired   time.Time
	record     engine.Record // its ledger record as started
	started    string        // that record's text, if its commit wrote it
	// parent, for a part (part.go), is the lock it is held under, and
	// running its running value on the nodes; right is the lock whose
	// holder claimed it (a shard's lease).
	parent  *Lock
	right   *Lock
	running string
	// partsBy is the Redlock that claimed parts under it (it is a
	// shard's lease), if any: its release first sends their pending ends.
	partsBy atomic.Pointer[Redlock]
	// claim and at, for a part, are its claim's nodes (claim.nodes(at)):
	// it runs on a node only while its parent holds there too (heldOn).
	claim *claimed
	at    int

	mu      sync.Mutex
	outcome outcome.Outcome // for its ledger record: its Release's context's
	until   time.Time       // validity deadline, with a monotonic reading
	// nodeUntil is, by node, until when the lock surely holds there: its
	// acquisition's or latest extension's start there, plus the TTL less
	// the drift (zero where it was not granted).
	nodeUntil []time.Time
	// nodeLost is, by node, when the node last answered an extension that
	// it did not hold the lock: a part claimed before then does not count
	// the node any more (its running value may be gone there), even once
	// the lock is given back there (heal).
	nodeLost []time.Time
	released bool
	keep     *keeper // the running KeepAlive, if any

	// base, for a handle acquired again by its holder (reentrant.go), is
	// the lock it reentered; reentries, on a base, counts its reentrant
	// handles not yet released, and deferred says its own Release came
	// while some were: the last of them releases it.
	base      *Lock
	reentries int
	deferred  bool
}

// Name returns the lock's name.
func (l *Lock) Name() string { return l.keys.Name }

// Value returns the value stored at the lock key on the nodes: the
// holder's, as a QuorumError's Holder shows it to others. (A lock the
// scheduler claims in bulk, as a part of its shard's claim, has no key of
// its own; the parts of one claim share one value.)
func (l *Lock) Value() string { return l.value }

// Fence returns the fencing token: it is larger than the token of every
// earlier acquisition of the same name (0 when fencing is off). Pass it to
// the storage the lock protects and have it reject writes with a token
// smaller than the largest it has seen.
func (l *Lock) Fence() uint64 { return l.fence }

// Until returns the validity deadline: until then, the lock is held by a
// majority of nodes, with clock drift allowed for. It moves forward with
// every successful extension. A lock claimed in bulk (a part) is held
// while its parent holds on a majority of the nodes that claimed it, and
// at most the max hold from its claim.
func (l *Lock) Until() time.Time {
	if l.base != nil {
		return l.base.Until()
	}
	if l.parent != nil {
		until := l.parent.heldFor(l.claim, l.at, l.acquired)
		if end := l.acquired.Add(l.r.cfg.maxHold); end.Before(until) {
			return end // a part's hold is bounded from its own claim
		}
		return until
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Extend renews the lock's TTL on every node that still holds it. It
// succeeds when a majority did so, and then moves Until to the extension's
// start plus the TTL minus the drift allowance; the nodes that answered
// that they had lost the lock (restarted empty, or its copy expired while
// they were paused) are then given it back where it is free, without
// waiting, and count from the next extension on. It is refused with ErrLost
// once the validity deadline has passed; its error matches ErrLost when a
// majority of nodes no longer holds the lock, or ErrNoQuorum when too few
// answered in time (the lock may still be held until Until). It is refused
// too while the owner check refuses the lock's owner (WithOwnerCheck).
func (l *Lock) Extend(ctx context.Context) error {
	if l.base != nil {
		return l.extendReentered(ctx)
	}
	if l.parent != nil {
		if err := l.parent.Extend(ctx); err != nil {
			return err
		}
		if !time.Now().Before(l.Until()) {
			return fmt.Errorf("%w: extend %q: its parent %q no longer holds on a quorum of the nodes that claimed it", ErrLost, l.keys.Name, l.parent.keys.Name)
		}
		return nil
	}
	start := time.Now()
	l.mu.Lock()
	released, until := l.released, l.until
	l.mu.Unlock()
	if released {
		return fmt.Errorf("%w: extend %q: released by this handle", ErrLost, l.keys.Name)
	}
	if !start.Before(until) {
		err := fmt.Errorf("%w: extend %q: validity ran out %v ago", ErrLost, l.keys.Name, start.Sub(until))
		l.r.observe(l.event(opExtend, err))
		return err
	}
	if err := l.r.ownerErr(l.owner, true); err != nil {
		err = fmt.Errorf("mutex: extend %q: %w", l.keys.Name, err)
		l.r.observe(l.event(opExtend, err))
		return err
	}
	r := l.r
	results := r.fanout(ctx, func(ctx context.Context, _ int, n *engine.Node, deliver func(NodeResult)) {
		n.ExtendAsync(ctx, l.keys, l.value, l.ttl, deliverBool(deliver))
	}, quorumDecider(len(r.nodes), r.quorum), func(res NodeResult) { l.heldAtNamed(res, start) }) // late: where it holds too
	l.heldAt(results, start)
	var err error
	if count(results, voteYes) >= r.quorum {
		next := start.Add(l.ttl - r.drift(l.ttl))
		l.mu.Lock()
		if next.After(l.until) {
			l.until = next
		}
		l.mu.Unlock()
		l.heal(results, start)
	} else {
		qerr := r.ownershipError("extend", l.keys.Name, results)
		if ctx.Err() != nil {
			qerr.Cause = context.Cause(ctx)
		}
		err = qerr
	}
	ev := l.event(opExtend, err)
	ev.Duration, ev.Nodes = time.Since(start), results
	r.observe(ev)
	return err
}

// heal gives the lock back, without waiting, to the nodes that answered
// its extension, granted by a quorum, that they did not hold it: restarted
// empty, or their copy expired while they were paused or cut off
// (engine.Node.HealAsync: only where the lock is free). A lock kept alive
// so spreads back to every node once another value's copy there expires,
// rather than staying one failure away from lost for the rest of its
// life; and the parts claimed under a shard's lease and a replica's
// anchor, which need both on the same nodes, find them on every node. A
// loss is never hidden: only an extension already granted by a quorum
// heals; and a part claimed before the node lost the lock never counts
// the node again (nodeLost), since its running value may be gone there.
func (l *Lock) heal(results []NodeResult, start time.Time) {
	for i, res := range results {
		if res.Vote != voteNotOwner {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.r.cfg.nodeTimeout)
		l.r.pending.add(1) // Flush waits for it
		l.r.nodes[i].HealAsync(ctx, l.keys, l.value, l.ttl, func(ok bool, err error) {
			defer l.r.pending.done()
			cancel()
			if ok && err == nil {
				healed := make([]NodeResult, i+1)
				healed[i].Vote = voteYes
				l.heldAt(healed, start)
			}
		})
	}
}

// Release stops the lock's KeepAlive, if any, waits for an extension in
// flight, and deletes the lock on every node where it still holds this
// lock's value, so a lock that expired and was taken by another owner is
// never touched. If the lock had an occurrence, the occurrence mark is
// raised again on those nodes first.
//
// Release returns as soon as the outcome is known from a majority of
// nodes, or after the node timeout; ctx's cancellation does not cut it
// short. With one node, whose answer is the outcome, the release is sent
// from the caller's goroutine when the node is idle (no hand-off to its
// worker), and Release then waits for the answer up to the bound below. The other nodes still get the release, even a node that answers
// later (or is backing off after a failure), for up to ten node timeouts
// (at least a second, at most the lock's TTL): Flush waits for those.
// Release returns nil when a majority of nodes deleted the lock; an error
// matching ErrLost when the lock had already expired or been taken over on
// a majority; an error matching ErrNoQuorum when too few nodes answered
// (the rest expires with the TTL). A second call does nothing and returns
// nil: Release is safe to defer and to call again. Of a lock acquired
// again by its holder (reentrant, see Lock), each handle's Release drops
// one hold and returns nil (the first handle's, ErrLost if the lock is
// known lost); the last one releases the lock as above.
func (l *Lock) Release(ctx context.Context) error {
	if l.base != nil {
		return l.releaseReentered(ctx)
	}
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	if o, ok := outcome.FromContext(ctx); ok {
		l.outcome = o
	}
	if l.reentries > 0 {
		l.deferred = true // the last reentrant handle's release releases it
		lost := !time.Now().Before(l.until) || l.keep != nil && errors.Is(context.Cause(l.keep.ctx), ErrLost)
		l.mu.Unlock()
		if lost {
			return fmt.Errorf("%w: release %q: lost, while reentrant handles still hold it", ErrLost, l.keys.Name)
		}
		return nil
	}
	l.released = true
	k := l.keep
	l.mu.Unlock()
	if l.parent != nil {
		return l.releasePart(ctx, k)
	}
	if k != nil {
		k.stop()
	}
	start := time.Now()
	r := l.r
	if pr := l.partsBy.Load(); pr != nil {
		// Its parts' ends go first (a node's calls run in order): the
		// shard's next holder must not find them running.
		pr.flushRight(l)
	}
	results := r.releaseOn(ctx, nil, l.keys, l.value, l.occurrence, l.ttl, l.endRecord(), releaseDecider(len(r.nodes), r.quorum))
	var err error
	if count(results, voteYes) < r.quorum {
		qerr := r.ownershipError("release", l.keys.Name, results)
		err = qerr
	}
	ev := l.event(opRelease, err)
	ev.Duration, ev.Nodes = time.Since(start), results
	r.observe(ev)
	return err
}

// ownershipError is the error of an extension or release without a
// quorum: ErrLost when too many nodes no longer hold our value for a
// quorum to be possible, ErrNoQuorum when too few answered.
func (r *Redlock) ownershipError(op, name string, results []NodeResult) *QuorumError {
	qerr := &QuorumError{Op: op, Name: name, Quorum: r.quorum, Nodes: results, Reason: ErrNoQuorum}
	if count(results, voteNotOwner) > len(r.nodes)-r.quorum {
		qerr.Reason = ErrLost
	}
	return qerr
}

// event returns an Event of op about l, with err: its name and
// occurrence set, its Duration and Nodes left to the caller.
func (l *Lock) event(op string, err error) Event {
	return Event{Op: op, Name: l.keys.Name, Err: err, Occurrence: occurrenceTime(l.occurrence)}
}

// lost reports a kept-alive lease's loss.
func (l *Lock) lost(cause error) {
	l.r.observe(l.event(opLost, cause))
	l.r.cfg.logger.LogAttrs(context.Background(), slog.LevelWarn, "lock lost",
		slog.String("lock", l.keys.Name), slog.Uint64("fence", l.fence), slog.Any("error", cause))
}

// errMaxHold is the cause of a loss at the maximum hold time.
func errMaxHold(name string, d time.Duration) error {
	return errors.Join(ErrLost, fmt.Errorf("%w: lock %q held for %v", ErrMaxHold, name, d))
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
