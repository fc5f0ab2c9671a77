package mutex

import (
	"context"
	"sync"
	"time"

	"github.com/redcron/redcron/store"
)

// nodeOp is one operation on node i; it fills in Vote, Err and Holder.
type nodeOp func(ctx context.Context, i int, n *store.Node) NodeResult

// decider reports whether the outcome is known from the answers so far
// (unanswered nodes have a zero Vote).
type decider func(results []NodeResult) bool

// fanout runs op on every node in parallel, each call bounded by the
// per-node timeout, and returns as soon as decided is true or every node
// answered. Answers that arrive after that are passed to late (if not nil)
// from the node's goroutine, so that their effects can be undone.
func (r *Redlock) fanout(ctx context.Context, op nodeOp, decided decider, late func(NodeResult)) []NodeResult {
	type answer struct {
		i   int
		res NodeResult
	}
	results := make([]NodeResult, len(r.nodes))
	ch := make(chan answer, len(r.nodes))
	var (
		mu   sync.Mutex
		done bool
	)
	for i, node := range r.nodes {
		results[i].Node = node.Name()
		go func() {
			nctx, cancel := context.WithTimeout(ctx, r.cfg.nodeTimeout)
			start := time.Now()
			res := op(nctx, i, node)
			cancel()
			res.Node, res.Latency = node.Name(), time.Since(start)
			mu.Lock()
			if done {
				mu.Unlock()
				if late != nil {
					late(res)
				}
				return
			}
			ch <- answer{i, res} // buffered for every node: never blocks
			mu.Unlock()
		}()
	}
	for answered := 0; answered < len(r.nodes) && !decided(results); answered++ {
		a := <-ch
		results[a.i] = a.res
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
	return results
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
// bounded by the per-node timeout).
func allAnswered([]NodeResult) bool { return false }
