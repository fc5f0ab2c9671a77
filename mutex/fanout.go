package mutex

import (
	"context"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// nodeOp starts one operation on node i and passes its result to deliver,
// exactly once, without blocking (the nodes' Async calls).
type nodeOp func(ctx context.Context, i int, n *engine.Node, deliver func(NodeResult))

// batchOp starts a batch of operations on node i and passes their results,
// one per operation in order, to deliver, exactly once, without blocking.
type batchOp func(ctx context.Context, i int, n *engine.Node, deliver func([]NodeResult))

// decider reports whether the outcome is known from the answers so far
// (unanswered nodes have a zero Vote).
type decider func(results []NodeResult) bool

// fanout starts op on every node at once, all bounded by the node timeout,
// and returns as soon as decided is true, every node answered, or the
// timeout passed (unanswered nodes then get voteTimeout, or voteCanceled if
// ctx was cancelled). No goroutine is started: the nodes' workers deliver
// the answers. Answers that arrive after the return are passed to late (if
// not nil), from the node's worker, so their effects can be undone; late
// must not block.
func (r *Redlock) fanout(ctx context.Context, op nodeOp, decided decider, late func(NodeResult)) []NodeResult {
	var lateAll func(int, NodeResult)
	if late != nil {
		lateAll = func(_ int, res NodeResult) { late(res) }
	}
	buf := make([]NodeResult, len(r.nodes)) // each node's one-result batch; each is written once
	return r.fanoutAll(ctx, 1, func(ctx context.Context, i int, n *engine.Node, deliver func([]NodeResult)) {
		op(ctx, i, n, func(res NodeResult) {
			buf[i] = res
			deliver(buf[i : i+1 : i+1])
		})
	}, decided, lateAll)[0]
}

// fanoutAll is fanout for a batch of count operations that each node
// answers together: it returns each operation's results, per node, once
// decided is true for every operation, every node answered, or the
// timeout (nodeTimeoutFor) passed. Late answers are passed to late with their operation's
// index.
func (r *Redlock) fanoutAll(ctx context.Context, count int, op batchOp, decided decider, late func(int, NodeResult)) [][]NodeResult {
	return r.fanoutFor(ctx, r.nodeTimeoutFor(count), count, op, decided, late)
}

// fanoutFor is fanoutAll waiting at most wait for the nodes' answers.
func (r *Redlock) fanoutFor(ctx context.Context, wait time.Duration, count int, op batchOp, decided decider, late func(int, NodeResult)) [][]NodeResult {
	g := newGather(r.nodes, count)
	nctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if len(r.nodes) == 1 {
		// The one node's answer is all there is to wait for: the call may
		// be sent from this goroutine (see engine.MayBlock).
		nctx = engine.MayBlock(nctx)
	}
	start := time.Now()
	for i, node := range r.nodes {
		op(nctx, i, node, g.deliverer(i, node.Name(), start, late))
	}
	open := make([]int, count) // the operations not yet decided
	for j := range open {
		open[j] = j
	}
	for answered := 0; answered < len(r.nodes) && len(open) > 0; answered++ {
		select {
		case a := <-g.ch:
			g.record(a)
			open = undecided(open, g.results, decided)
		case <-nctx.Done():
			answered = len(r.nodes) // stop waiting
		}
	}
	g.close()
	if nctx.Err() != nil {
		vote, elapsed := timeoutVote(ctx), time.Since(start)
		for i := range g.flat {
			if g.flat[i].pending() {
				g.flat[i].Vote, g.flat[i].Err, g.flat[i].Latency = vote, nctx.Err(), elapsed
			}
		}
	}
	return g.results
}

// gather collects the nodes' answers to a batch of operations: one result
// per operation and node, in results[operation][node].
type gather struct {
	flat    []NodeResult
	results [][]NodeResult
	ch      chan answer // never blocks a deliverer: one answer per node
	mu      sync.Mutex
	done    bool // the batch was decided: later answers go to late
}

// answer is one node's results to a batch.
type answer struct {
	i   int
	res []NodeResult
}

func newGather(nodes []*engine.Node, count int) *gather {
	n := len(nodes)
	g := &gather{flat: make([]NodeResult, count*n), results: make([][]NodeResult, count), ch: make(chan answer, n)}
	for j := range g.results {
		g.results[j] = g.flat[j*n : (j+1)*n : (j+1)*n]
		for i, node := range nodes {
			g.results[j][i].Node = node.Name()
		}
	}
	return g
}

// deliverer returns the function node i's worker calls with its results:
// into the batch, or, once it was decided, to late.
func (g *gather) deliverer(i int, name string, start time.Time, late func(int, NodeResult)) func([]NodeResult) {
	return func(res []NodeResult) {
		latency := time.Since(start)
		for j := range res {
			res[j].Node, res[j].Latency = name, latency
		}
		g.mu.Lock()
		if g.done {
			g.mu.Unlock()
			if late != nil {
				for j := range res {
					late(j, res[j])
				}
			}
			return
		}
		g.ch <- answer{i, res}
		g.mu.Unlock()
	}
}

// record writes one node's answer into the results.
func (g *gather) record(a answer) {
	for j := range g.results {
		g.results[j][a.i] = a.res[j]
	}
}

// close ends the batch: answers already sent are recorded, later ones go
// to late.
func (g *gather) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
	for {
		select {
		case a := <-g.ch:
			g.record(a)
		default:
			return
		}
	}
}

// perLockAllowance is how much longer than the node timeout a node may
// take to answer a batch, per operation after the first: a batch of n
// locks is n scripts' worth of work for a server that is also answering
// every other replica's batch of the same tick, on cores it may share. A
// lock costs a server 5-10 µs of CPU; 200 µs covers a batch queued behind
// those of about ten replicas on a host that gives the server a third of
// a core. Too short a wait turns load into timeouts, and timeouts into
// retries and more load; only a batch whose quorum cannot answer (a
// majority of nodes hung) waits it out.
const perLockAllowance = 200 * time.Microsecond

// nodeTimeoutFor returns how long fanoutAll waits for the nodes' answers to
// a batch of count operations: the node timeout, plus perLockAllowance per
// operation after the first.
func (r *Redlock) nodeTimeoutFor(count int) time.Duration {
	return r.cfg.nodeTimeout + time.Duration(max(count-1, 0))*perLockAllowance
}

// undecided returns the operations of open that decided does not decide,
// reusing open's storage.
func undecided(open []int, results [][]NodeResult, decided decider) []int {
	left := open[:0]
	for _, j := range open {
		if !decided(results[j]) {
			left = append(left, j)
		}
	}
	return left
}

// timeoutVote is the vote of a node that did not answer in time: a
// timeout, unless the caller's context was cancelled.
func timeoutVote(ctx context.Context) string {
	if ctx.Err() == context.Canceled {
		return voteCanceled
	}
	return voteTimeout
}

// quorumDecider decides when a quorum voted yes or can no longer do so.
func quorumDecider(n, quorum int) decider {
	return func(rs []NodeResult) bool {
		yes, no := 0, 0
		for _, r := range rs {
			switch r.Vote {
			case "":
			case voteYes:
				yes++
			default:
				no++
			}
		}
		return yes >= quorum || no > n-quorum
	}
}

// releaseDecider decides a release once its outcome is known: deleted on
// a majority, or no longer ours on more than n-quorum nodes (lost), or
// neither any more, whatever the nodes yet to answer say. A fast failure
// (a refused connection) thus does not decide, before a slower node says
// whether the lock was lost.
func releaseDecider(n, quorum int) decider {
	return func(rs []NodeResult) bool {
		yes, notOwner, pending := 0, 0, 0
		for _, r := range rs {
			switch r.Vote {
			case "":
				pending++
			case voteYes:
				yes++
			case voteNotOwner:
				notOwner++
			}
		}
		return yes >= quorum || notOwner > n-quorum || (yes+pending < quorum && notOwner+pending <= n-quorum)
	}
}

// allAnswered never decides early: fanout waits for every node (each still
// bounded by the node timeout).
func allAnswered([]NodeResult) bool { return false }
