package mutex

import (
	"context"
	"sync"
	"time"

	"github.com/redcron/redcron/store"
)

// nodeOp starts one operation on node i and passes its result to deliver,
// exactly once, without blocking (the nodes' Async calls).
type nodeOp func(ctx context.Context, i int, n *store.Node, deliver func(NodeResult))

// decider reports whether the outcome is known from the answers so far
// (unanswered nodes have a zero Vote).
type decider func(results []NodeResult) bool

// fanout starts op on every node at once, all bounded by the node timeout,
// and returns as soon as decided is true, every node answered, or the
// timeout passed (unanswered nodes then get VoteTimeout, or VoteCanceled if
// ctx was cancelled). No goroutine is started: the nodes' workers deliver
// the answers. Answers that arrive after the return are passed to late (if
// not nil), from the node's worker, so their effects can be undone; late
// must not block.
func (r *Redlock) fanout(ctx context.Context, op nodeOp, decided decider, late func(NodeResult)) []NodeResult {
	type answer struct {
		i   int
		res NodeResult
	}
	results := make([]NodeResult, len(r.nodes))
	ch := make(chan answer, len(r.nodes)) // never blocks a deliverer
	var (
		mu   sync.Mutex
		done bool
	)
	nctx, cancel := context.WithTimeout(ctx, r.cfg.nodeTimeout)
	defer cancel()
	start := time.Now()
	for i, node := range r.nodes {
		results[i].Node = node.Name()
		op(nctx, i, node, func(res NodeResult) {
			res.Node, res.Latency = node.Name(), time.Since(start)
			mu.Lock()
			if done {
				mu.Unlock()
				if late != nil {
					late(res)
				}
				return
			}
			ch <- answer{i, res}
			mu.Unlock()
		})
	}
	for answered := 0; answered < len(r.nodes) && !decided(results); answered++ {
		select {
		case a := <-ch:
			results[a.i] = a.res
		case <-nctx.Done():
			answered = len(r.nodes) // stop waiting
		}
	}
	mu.Lock()
	done = true
	for drained := false; !drained; {
		select {
		case a := <-ch:
			results[a.i] = a.res
		default:
			drained = true
		}
	}
	mu.Unlock()
	if nctx.Err() != nil {
		for i := range results {
			if results[i].pending() {
				results[i].Vote, results[i].Err, results[i].Latency = timeoutVote(ctx), nctx.Err(), time.Since(start)
			}
		}
	}
	return results
}

// timeoutVote is the vote of a node that did not answer in time: a
// timeout, unless the caller's context was cancelled.
func timeoutVote(ctx context.Context) Vote {
	if ctx.Err() == context.Canceled {
		return VoteCanceled
	}
	return VoteTimeout
}

// quorumDecider decides when a quorum voted yes or can no longer do so.
func quorumDecider(n, quorum int) decider {
	return func(rs []NodeResult) bool {
		yes, no := 0, 0
		for _, r := range rs {
			switch r.Vote {
			case 0:
			case VoteYes:
				yes++
			default:
				no++
			}
		}
		return yes >= quorum || no > n-quorum
	}
}

// allAnswered never decides early: fanout waits for every node (each still
// bounded by the node timeout).
func allAnswered([]NodeResult) bool { return false }
