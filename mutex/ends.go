package mutex

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// endDelay is how long a released part waits, at most, for a claim of its
// shard to carry its end to a node; then it is sent on its own. Ends sent
// together share their shards' commands: the end of a part costs a node a
// few arguments of a script call rather than a call. A second, so that
// the next tick of a job due every second carries its previous run's end:
// a shard of such jobs is claimed every second.
const endDelay = time.Second

// partEnd is one part's end, and the parent it runs under: an end that
// fails on a node is sent again while the parent may hold there
// (mayHoldOn), since the running value it leaves there keeps its job held
// for as long as the parent does.
type partEnd struct {
	engine.FreeRequest
	parent *Lock
	right  *Lock     // the lock its part was claimed by: its release sends the end first
	queued time.Time // when its part was released: sent on its own endDelay after
}

// ends are the parts released and not yet ended on each node (see
// releasePart): a claim takes them along (lua/claim.lua ends a shard's
// parts before it claims), or flush sends them.
type ends struct {
	mu      sync.Mutex
	pending pendingEnds // nil until an end is queued
	timer   *time.Timer // the flush, armed while some are pending
}

// pendingEnds are ends by node and, on each, by shard (their state key),
// so that a claim takes its shards' without reading the others'; the
// frees of claims given up, which any claim takes along, are under "".
type pendingEnds []map[string][]*partEnd

// queue returns the queue's pending ends, made if there are none yet.
// Called with its lock held.
func (q *ends) queue(nodes int) pendingEnds {
	if q.pending == nil {
		q.pending = make(pendingEnds, nodes)
		for i := range q.pending {
			q.pending[i] = map[string][]*partEnd{}
		}
	}
	return q.pending
}

// add queues es on node i.
func (p pendingEnds) add(i int, es ...*partEnd) {
	for _, e := range es {
		k := e.Keys.State
		if e.Occurrence != 0 {
			k = ""
		}
		p[i][k] = append(p[i][k], e)
	}
}

// addEnd queues e for every node, and arms the flush, while the right
// its part was claimed by holds here; it reports whether it did (checked
// under the queue's lock, which the right's release takes to send its
// parts' ends: an end is either queued before that or not at all).
func (r *Redlock) addEnd(e *partEnd) bool {
	e.queued = time.Now()
	q := &r.ends
	q.mu.Lock()
	defer q.mu.Unlock()
	if e.right != nil && !e.right.holds() {
		return false
	}
	p := q.queue(len(r.nodes))
	for i := range r.nodes {
		p.add(i, e)
	}
	r.armFlush(e.queued)
	return true
}

// takeEnds returns, by node, the pending ends a claim of the shards
// states carries (those of the shards' parts won), and the frees of claims
// given up (any shard's, which take their marks back: sent on their own
// at once, by free.lua); it leaves the others pending: an end is out in a
// claim only while its shard's is, so that its right's release finds the
// others (flushRight).
func (r *Redlock) takeEnds(states map[string]bool) (carry, frees [][]*partEnd) {
	q := &r.ends
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.queue(len(r.nodes))
	carry, frees = make([][]*partEnd, len(p)), make([][]*partEnd, len(p))
	for i, m := range p {
		for st := range states {
			if es := m[st]; es != nil {
				carry[i] = append(carry[i], es...)
				delete(m, st)
			}
		}
		frees[i] = m[""]
		delete(m, "")
	}
	return carry, frees
}

// takeWhere removes the ends take chooses from pending and returns them,
// by node, each shard's in their order.
func takeWhere(pending pendingEnds, take func(*partEnd) bool) [][]*partEnd {
	out := make([][]*partEnd, len(pending))
	for i, m := range pending {
		for k, es := range m {
			rest := es[:0]
			for _, e := range es {
				if take(e) {
					out[i] = append(out[i], e)
				} else {
					rest = append(rest, e)
				}
			}
			clear(es[len(rest):])
			if len(rest) == 0 {
				delete(m, k)
			} else {
				m[k] = rest
			}
		}
	}
	return out
}

// requeue queues node i's ends es (again: a claim did not carry them, or
// they failed), and arms the flush.
func (r *Redlock) requeue(i int, es []*partEnd) {
	if len(es) == 0 {
		return
	}
	q := &r.ends
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queue(len(r.nodes)).add(i, es...)
	oldest := es[0].queued
	for _, e := range es {
		if e.queued.Before(oldest) {
			oldest = e.queued
		}
	}
	r.armFlush(oldest)
}

// armFlush arms the flush of old ends, if it is not armed, for when an
// end queued at queued is due: endDelay after it, and not sooner than a
// quarter of endDelay (each flush reads every pending end). Called with
// the queue's lock held.
func (r *Redlock) armFlush(queued time.Time) {
	q := &r.ends
	if q.timer == nil {
		q.timer = time.AfterFunc(max(time.Until(queued.Add(endDelay)), endDelay/4), func() { r.flushOld() })
	}
}

// flushEnds sends every pending end on its own, grouped by shard, counted
// for Flush.
func (r *Redlock) flushEnds() {
	q := &r.ends
	q.mu.Lock()
	all := takeWhere(q.pending, func(*partEnd) bool { return true })
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	q.mu.Unlock()
	for i, es := range all {
		r.sendEnds(i, es)
	}
}

// flushOld sends the pending ends queued endDelay ago or earlier on their
// own, as flushEnds does, and arms the flush again for the others: an end
// waits between endDelay and 1.25 times it.
func (r *Redlock) flushOld() {
	q := &r.ends
	q.mu.Lock()
	old, next := takeOld(q.pending, time.Now().Add(-endDelay))
	q.timer = nil
	if !next.IsZero() {
		r.armFlush(next)
	}
	q.mu.Unlock()
	for i, es := range old {
		r.sendEnds(i, es)
	}
}

// flushRight sends the pending ends of the parts claimed under right on
// their own, now.
func (r *Redlock) flushRight(right *Lock) {
	q := &r.ends
	q.mu.Lock()
	mine := takeWhere(q.pending, func(e *partEnd) bool { return e.right == right })
	q.mu.Unlock()
	for i, es := range mine {
		r.sendEnds(i, es)
	}
}

// takeOld removes the ends queued at due or earlier from pending (by
// node) and returns them, by node, with the oldest time an end left there
// was queued (zero for none).
func takeOld(pending pendingEnds, due time.Time) (old [][]*partEnd, next time.Time) {
	old = takeWhere(pending, func(e *partEnd) bool { return !e.queued.After(due) })
	for _, m := range pending {
		for _, es := range m {
			for _, e := range es {
				if next.IsZero() || e.queued.Before(next) {
					next = e.queued
				}
			}
		}
	}
	return old, next
}

// sendEnds sends ends to node i on their own (free.lua), sorted by shard
// so that a call's ends of one shard share its commands; those that fail
// are queued again while their parents hold.
func (r *Redlock) sendEnds(i int, es []*partEnd) {
	if len(es) == 0 {
		return
	}
	es = byShard(es)
	ctx, cancel := context.WithTimeout(context.Background(), r.releaseBound(time.Second))
	r.pending.add(1)
	r.nodes[i].FreeAllAsync(ctx, requestsOf(es), func(rs []engine.CommitResult) {
		r.requeue(i, failedEnds(i, es, rs))
		r.pending.done()
		cancel()
	})
}

// byShard returns es grouped by shard (their state key), the shards in the
// order first seen and each shard's ends in their order: a stable sort by
// shard in one pass (with thousands of ends a second, a sort took a
// replica 8 % of its CPU).
func byShard(es []*partEnd) []*partEnd {
	at := make(map[string]int, 64) // shard → its index in groups
	var groups [][]*partEnd
	for _, e := range es {
		g, ok := at[e.Keys.State]
		if !ok {
			g = len(groups)
			at[e.Keys.State] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], e)
	}
	if len(groups) == 1 {
		return es
	}
	out := es[:0:0]
	out = slices.Grow(out, len(es))
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// requestsOf returns the free requests of es.
func requestsOf(es []*partEnd) []engine.FreeRequest {
	out := make([]engine.FreeRequest, len(es))
	for k, e := range es {
		out[k] = e.FreeRequest
	}
	return out
}

// failedEnds returns the ends of es whose answers rs from node i failed
// (not answered: a server's error, such as a state of another type, would
// be answered again) and whose parents may still hold there, to be sent
// again.
func failedEnds(i int, es []*partEnd, rs []engine.CommitResult) []*partEnd {
	var again []*partEnd
	for k, res := range rs {
		if res.Err != nil && !engine.ServerError(res.Err) && es[k].parent.mayHoldOn(i) {
			again = append(again, es[k])
		}
	}
	return again
}

// mayHoldOn reports whether l, not released, may still hold on node i:
// its latest grant or extension there may not have run out yet (a node
// that does not answer loses it within the TTL). An end is sent again
// only while it may: a node that dropped the parent dropped its parts.
func (l *Lock) mayHoldOn(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || i >= len(l.nodeUntil) {
		return false
	}
	return time.Now().Before(l.nodeUntil[i].Add(2*l.r.drift(l.ttl) + l.r.cfg.nodeTimeout))
}

// endNow sends e to every node on its own and waits until a majority
// answered it, or the node timeout: the end of a part whose shard another
// replica claims now, which no claim of this one will carry.
func (r *Redlock) endNow(ctx context.Context, e *partEnd) {
	fctx, cancel := context.WithTimeout(context.Background(), r.releaseBound(time.Second))
	answered := afterAll(len(r.nodes), cancel)
	r.fanout(context.WithoutCancel(ctx), func(_ context.Context, i int, n *engine.Node, deliver func(NodeResult)) {
		r.pending.add(1)
		es := []*partEnd{e}
		n.FreeAllAsync(fctx, requestsOf(es), func(rs []engine.CommitResult) {
			r.requeue(i, failedEnds(i, es, rs))
			r.pending.done()
			answered()
			deliver(boolResult(rs[0].Err == nil, rs[0].Err))
		})
	}, quorumDecider(len(r.nodes), r.quorum), nil)
}

// holds reports whether l is still held here: not released, and valid.
func (l *Lock) holds() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.released && time.Now().Before(l.until)
}

// endsLeft sends node i's ends es that its claims did not end (a call
// that failed, or a shard whose claim did not go there) on their own at
// once: a claim carries only the ends of its own shards (takeEnds).
func (r *Redlock) endsLeft(i int, es []*partEnd, ended []bool) {
	var now []*partEnd
	for k, e := range es {
		if !ended[k] {
			now = append(now, e)
		}
	}
	r.sendEnds(i, now)
}
