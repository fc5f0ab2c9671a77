package mutex

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// endDelay is how long a released part waits, at most, for a claim of its
// shard to carry its end to a node; then it is sent on its own. Ends sent
// together share their shards' commands: the end of a part costs a node a
// few arguments of a script call rather than a call.
const endDelay = 200 * time.Millisecond

// ends are the parts released and not yet ended on each node (see
// releasePart): a claim takes them along (lua/claim.lua ends a shard's
// parts before it claims), or flush sends them.
type ends struct {
	mu      sync.Mutex
	pending [][]engine.FreeRequest // by node
	timer   *time.Timer            // the flush, armed while some are pending
}

// addEnd queues e for every node, and arms the flush.
func (r *Redlock) addEnd(e engine.FreeRequest) {
	q := &r.ends
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending = make([][]engine.FreeRequest, len(r.nodes))
	}
	for i := range q.pending {
		q.pending[i] = append(q.pending[i], e)
	}
	if q.timer == nil {
		q.timer = time.AfterFunc(endDelay, func() { r.flushEnds() })
	}
}

// takeEnds returns each node's pending ends (a list per node, maybe
// empty) and forgets them.
func (r *Redlock) takeEnds() [][]engine.FreeRequest {
	q := &r.ends
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.pending
	q.pending = nil
	if out == nil {
		out = make([][]engine.FreeRequest, len(r.nodes))
	}
	return out
}

// requeue puts back node i's ends that a claim did not carry.
func (r *Redlock) requeue(i int, es []engine.FreeRequest) {
	if len(es) == 0 {
		return
	}
	q := &r.ends
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending = make([][]engine.FreeRequest, len(r.nodes))
	}
	q.pending[i] = append(q.pending[i], es...)
	if q.timer == nil {
		q.timer = time.AfterFunc(endDelay, func() { r.flushEnds() })
	}
}

// flushEnds sends every pending end on its own, grouped by shard, counted
// for Flush.
func (r *Redlock) flushEnds() {
	q := &r.ends
	q.mu.Lock()
	pending := q.pending
	q.pending, q.timer = nil, nil
	q.mu.Unlock()
	for i, es := range pending {
		r.sendEnds(i, es)
	}
}

// sendEnds sends ends to node i on their own (free.lua), sorted by shard
// so that a call's ends of one shard share its commands.
func (r *Redlock) sendEnds(i int, es []engine.FreeRequest) {
	if len(es) == 0 {
		return
	}
	sortByState(es)
	ctx, cancel := context.WithTimeout(context.Background(), r.releaseBound(time.Second))
	r.pending.add(1)
	r.nodes[i].FreeAllAsync(ctx, es, func([]engine.CommitResult) {
		r.pending.done()
		cancel()
	})
}

// sortByState sorts ends by their shard's state key, stably.
func sortByState(es []engine.FreeRequest) {
	slices.SortStableFunc(es, func(a, b engine.FreeRequest) int { return strings.Compare(a.Keys.State, b.Keys.State) })
}

// endNow sends e to every node on its own and waits until a majority
// answered it, or the node timeout: the end of a part whose shard another
// replica claims now, which no claim of this one will carry.
func (r *Redlock) endNow(ctx context.Context, e engine.FreeRequest) {
	fctx, cancel := context.WithTimeout(context.Background(), r.releaseBound(time.Second))
	answered := afterAll(len(r.nodes), cancel)
	r.fanout(context.WithoutCancel(ctx), func(_ context.Context, _ int, n *engine.Node, deliver func(NodeResult)) {
		r.pending.add(1)
		n.FreeAllAsync(fctx, []engine.FreeRequest{e}, func(rs []engine.CommitResult) {
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
