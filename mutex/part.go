package mutex

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/parts"
)

// A part is an occurrence of a lock claimed by the holder of a right (a
// shard's lease) and held under a parent lock (its replica's anchor): it
// has no key of its own on the nodes, only its mark, fence and running
// value in its shard's state, so that the due occurrences of a shard are
// claimed in one script call per node (see lua/claim.lua). It excludes the
// lock and other parts of it while its parent holds, and is lost when its
// parent is; the right may change hands meanwhile. Its fence is chosen by
// the claimer (nextFence) and refused by a node whose counter is at or
// above it, so that a claim won on a quorum has a fence above every
// earlier acquisition's, as a commit's does.

// partsOf returns, for the valid requests of a TryLockAll, the rights and
// parents (nil for a lock acquired alone) that ctx carries (package
// parts): a request is a part when it claims an occurrence and takes no
// ticket, and its right and parent are Locks of Redlocks over the same
// nodes, all single servers. It returns nils when none is.
func (r *Redlock) partsOf(ctx context.Context, reqs []attemptReq) (rights, parents []*Lock) {
	of := parts.From(ctx)
	if of == nil {
		return nil, nil
	}
	for _, n := range r.nodes {
		if !n.SingleServer() {
			return nil, nil
		}
	}
	for j, q := range reqs {
		ra, pa := of(q.keys.Name)
		right, _ := ra.(*Lock)
		parent, _ := pa.(*Lock)
		if right == nil || parent == nil || q.lc.occurrence <= 0 || q.lc.ticket != "" || !r.sameNodes(right.r) || !r.sameNodes(parent.r) {
			continue
		}
		if !time.Now().Before(parent.Until()) {
			continue // a parent that can no longer be proven holds no part: the lock is acquired alone
		}
		if parents == nil {
			rights, parents = make([]*Lock, len(reqs)), make([]*Lock, len(reqs))
		}
		rights[j], parents[j] = right, parent
	}
	return rights, parents
}

// sameNodes reports whether o runs over the same nodes, in the same order.
func (r *Redlock) sameNodes(o *Redlock) bool {
	if len(o.nodes) != len(r.nodes) {
		return false
	}
	for i, n := range r.nodes {
		if o.nodes[i] != n {
			return false
		}
	}
	return true
}

// nextFence returns the fence for a claim: the time in microseconds (as
// an acquisition's), or above the highest counter a node answered, when
// that is ahead (another replica's clock).
func (r *Redlock) nextFence() uint64 {
	if !r.cfg.fencing {
		return 0
	}
	return max(uint64(time.Now().UnixMicro()), r.fenceFloor.Load()+1)
}

// raiseFloor notes a node's fence counter.
func (r *Redlock) raiseFloor(f uint64) {
	for {
		cur := r.fenceFloor.Load()
		if f <= cur || r.fenceFloor.CompareAndSwap(cur, f) {
			return
		}
	}
}

// claimAll claims reqs as parts, each by its right and under its parent,
// all at once: one round trip per node, one script call per right and
// shard. The won become Locks; the others are freed where they may have
// been claimed. The requests are sorted by right and shard once here, for
// every node (engine.CompareClaims), and the results put back in order.
func (r *Redlock) claimAll(ctx context.Context, reqs []attemptReq, rights, parents []*Lock) []Result {
	at := make([]int, len(reqs))
	for j := range at {
		at[j] = j
	}
	key := func(j int) engine.ClaimRequest {
		return engine.ClaimRequest{Right: engine.Parent{Key: rights[j].keys.Lock, Value: rights[j].value}, Keys: reqs[j].keys}
	}
	slices.SortStableFunc(at, func(a, b int) int { return engine.CompareClaims(key(a), key(b)) })
	sreqs, srights, sparents := make([]attemptReq, len(at)), make([]*Lock, len(at)), make([]*Lock, len(at))
	for k, j := range at {
		sreqs[k], srights[k], sparents[k] = reqs[j], rights[j], parents[j]
	}
	out := make([]Result, len(reqs))
	for k, res := range r.claimSorted(ctx, sreqs, srights, sparents) {
		out[at[k]] = res
	}
	return out
}

// claimSorted is claimAll for requests sorted by right and shard.
func (r *Redlock) claimSorted(ctx context.Context, reqs []attemptReq, rights, parents []*Lock) []Result {
	start := time.Now()
	fence := r.nextFence()
	out := make([]Result, len(reqs))
	creqs, records, started, values := r.claimRequests(reqs, rights, parents, fence, start)
	// The state holds the parts' running values, all that keeps their
	// jobs while they run: it lives at least as long as they may be held.
	keep := r.cfg.stateTTL
	for _, p := range parents {
		keep = max(keep, r.cfg.maxHold+p.ttl)
	}
	votes, claim := r.claimVotes(ctx, creqs, keep)
	var frees []*partEnd
	var targets [][]bool
	for j, q := range reqs {
		twins(votes[j])
		p := parents[j]
		qerr := refusal(q.keys.Name, votes[j], r.quorum)
		if count(votes[j], voteYes) >= r.quorum {
			// Won, if its parent still holds on a quorum of the nodes that
			// claimed it: elsewhere the part is not running.
			if until := p.heldFor(claim, j, start); time.Now().Before(until) {
				if rights[j].partsBy.Load() != r { // once per right, not a write per part
					rights[j].partsBy.Store(r)
				}
				out[j].Lock = &Lock{r: r, keys: q.keys, value: values[j], token: q.token, fence: fence, occurrence: q.lc.occurrence,
					owner: q.lc.owner, ttl: p.ttl, acquired: start, until: until, record: records[j], started: started[j],
					parent: p, right: rights[j], running: creqs[j].Running, claim: claim, at: j}
				ev := out[j].Lock.event(opAcquire, nil)
				ev.Fence, ev.Duration, ev.Nodes = fence, time.Since(start), votes[j]
				r.observe(ev)
				continue
			}
			qerr.Detail = fmt.Sprintf("its parent %q can no longer be proven on a quorum of the nodes that claimed it", p.keys.Name)
		}
		out[j].Err = r.reportFailure(ctx, qerr, start, q.lc.occurrence)
		to := make([]bool, len(r.nodes))
		some := false
		for i, v := range votes[j] {
			to[i] = v.Vote == "" || mayHold(v) // "": its claim may still come; the free follows it
			some = some || to[i]
		}
		if some {
			frees = append(frees, &partEnd{FreeRequest: engine.FreeRequest{Keys: q.keys, Running: creqs[j].Running,
				Ledger: r.ledgerWrite(records[j], started[j], ""), Occurrence: q.lc.occurrence}, parent: p})
			targets = append(targets, to)
		}
	}
	r.freeAbandoned(ctx, frees, targets)
	return out
}

// claimVotes sends the claims creqs to every node, with the ends pending
// there (carried by the claims of their shards), raising their states'
// TTL to stateTTL, and returns the nodes' votes, by claim, and the nodes
// that claimed each, late answers included.
func (r *Redlock) claimVotes(ctx context.Context, creqs []engine.ClaimRequest, stateTTL time.Duration) ([][]NodeResult, *claimed) {
	claim := newClaimed(len(creqs), len(r.nodes))
	states := map[string]bool{} // the shards claimed, whose ends the claims carry (takeEnds)
	for _, c := range creqs {
		states[c.Keys.State] = true
	}
	ends, frees := r.takeEnds(states)
	// A claim waits for the nodes until ctx ends, not a node timeout: a
	// part lives under its parent (the anchor), so a late answer is still
	// a valid claim, and a loaded node's answers come late to every claim;
	// the shard gate keeps one claim of a shard in flight, so the wait
	// shows as latency, not as a queue of claims given up and sent again.
	wait := r.nodeTimeoutFor(len(creqs))
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	votes := r.fanoutFor(ctx, wait, len(creqs), func(ctx context.Context, i int, n *engine.Node, deliver func([]NodeResult)) {
		mine := ends[i]
		r.sendEnds(i, frees[i])
		n.ClaimAllAsync(ctx, creqs, requestsOf(mine), stateTTL, func(rs []engine.AcquireResult, ended []bool) {
			r.endsLeft(i, mine, ended)
			res := make([]NodeResult, len(rs))
			for j, a := range rs {
				res[j] = r.claimVote(i, a, creqs[j].Occurrence)
			}
			claim.note(i, res) // late answers too: the part runs there
			deliver(res)
		})
	}, acquireDecider(len(r.nodes), r.quorum), nil)
	return votes, claim
}

// claimVote turns node i's answer to a claim into its vote, as
// acquireVote does; a fence counter at or above the claim's fails the
// node's vote (and raises the next claim's fence above it), a right not
// held there is not_owner.
func (r *Redlock) claimVote(i int, a engine.AcquireResult, occurrence int64) NodeResult {
	if a.Err == nil {
		switch a.Reply.Status {
		case engine.FenceAhead:
			r.raiseFloor(a.Reply.Fence)
			res := NodeResult{Vote: voteError, fence: a.Reply.Fence,
				Err: fmt.Errorf("fence counter %d is at or above the claim's (another replica's clock is ahead)", a.Reply.Fence)}
			if a.Reply.Info != nil {
				res.server = a.Reply.Info.RunID
			}
			return res
		case engine.ParentLost:
			return NodeResult{Vote: voteNotOwner, Holder: a.Reply.Holder}
		}
	}
	return r.acquireVote(i, a, occurrence, 0)
}

// freeAbandoned ends the parts of failed claims on the nodes that may have
// claimed them (targets), without waiting: a node's calls are sent in
// order, so a free follows its claim.
func (r *Redlock) freeAbandoned(ctx context.Context, frees []*partEnd, targets [][]bool) {
	if len(frees) == 0 {
		return
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.releaseBound(time.Second))
	answered := afterAll(len(r.nodes), cancel)
	for i, n := range r.nodes {
		var mine []*partEnd
		for k, f := range frees {
			if targets[k][i] {
				mine = append(mine, f)
			}
		}
		r.pending.add(1)
		n.FreeAllAsync(fctx, requestsOf(mine), func(rs []engine.CommitResult) {
			r.requeue(i, failedEnds(i, mine, rs)) // sent again while its parent may hold there
			r.pending.done()
			answered()
		})
	}
}

// afterAll returns a function that calls f on its count-th call.
func afterAll(count int, f func()) func() {
	var left atomic.Int32
	left.Store(int32(count))
	return func() {
		if left.Add(-1) == 0 {
			f()
		}
	}
}

// partKeepAlive is KeepAlive for a part: its context is cancelled, with a
// cause matching ErrLost, when its parent's KeepAlive context is (the
// parent lost, released or no longer kept alive), or when its validity
// (Until: its parent held on a quorum of the nodes that claimed it) runs
// out, or once it has been held for the max hold (WithMaxHold, counted
// from its claim; the cause also matches ErrMaxHold); a part whose parent
// is not kept alive is lost at once. Called with l.mu held.
func (l *Lock) partKeepAlive(ctx context.Context) (context.Context, func()) {
	k, cancel, ok := l.keptBy(ctx)
	kctx := k.ctx
	if !ok {
		return kctx, k.stop
	}
	l.parent.mu.Lock()
	pk := l.parent.keep
	l.parent.mu.Unlock()
	if pk == nil {
		cancel(fmt.Errorf("%w: lock %q: its parent %q is not kept alive", ErrLost, l.keys.Name, l.parent.keys.Name))
		return kctx, k.stop
	}
	var once sync.Once
	lose := func(cause error) {
		once.Do(func() {
			cancel(cause)
			l.lost(cause)
		})
	}
	detach := context.AfterFunc(pk.ctx, func() {
		lose(fmt.Errorf("%w: lock %q: its parent %q ended: %w", ErrLost, l.keys.Name, l.parent.keys.Name, context.Cause(pk.ctx)))
	})
	// The validity moves with the parent's extensions: the timer checks
	// it when it would run out, and waits again if it moved.
	var mu sync.Mutex
	var expire *time.Timer
	check := func() {
		if kctx.Err() != nil {
			return
		}
		left := time.Until(l.Until())
		switch {
		case left > 0:
		case !time.Now().Before(l.acquired.Add(l.r.cfg.maxHold)):
			lose(errMaxHold(l.keys.Name, l.r.cfg.maxHold))
			return
		default:
			lose(fmt.Errorf("%w: lock %q: validity ran out: its parent %q no longer holds on a quorum of the nodes that claimed it",
				ErrLost, l.keys.Name, l.parent.keys.Name))
			return
		}
		mu.Lock()
		expire.Reset(left)
		mu.Unlock()
	}
	mu.Lock()
	expire = time.AfterFunc(time.Until(l.Until()), check)
	mu.Unlock()
	context.AfterFunc(kctx, func() {
		detach()
		mu.Lock()
		expire.Stop()
		mu.Unlock()
	})
	return kctx, k.stop
}

// releasePart is Release for a part: it queues the part's end (its
// running value removed, its final record written) for every node, to be
// carried by the next claim of its shard or sent within endDelay, or,
// when its replica no longer holds its right (the shard moved: another
// replica claims its ticks), sends it at once and waits for it as a lock's
// release does; it reports ErrLost if the part was lost before.
func (l *Lock) releasePart(ctx context.Context, k *keeper) error {
	var lost error
	if k != nil && k.ctx.Err() != nil {
		lost = context.Cause(k.ctx)
	}
	if k != nil {
		k.stop()
	}
	end := &partEnd{FreeRequest: engine.FreeRequest{Keys: l.keys, Running: l.running, Ledger: l.endRecord()}, parent: l.parent, right: l.right}
	if !l.r.addEnd(end) {
		l.r.endNow(ctx, end)
	}
	var err error
	if lost != nil {
		err = fmt.Errorf("mutex: release %q: %w", l.keys.Name, lost)
	}
	l.r.observe(l.event(opRelease, err))
	return err
}
