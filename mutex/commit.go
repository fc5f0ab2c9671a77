package mutex

import (
	"context"
	"fmt"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// commitItem is one acquisition's second phase in commitAll.
type commitItem struct {
	j     int // the acquisition's index in its round
	req   engine.CommitRequest
	until time.Time // the lock's validity deadline
	// voters, if not nil, are the nodes whose commits count (see
	// round.voters).
	voters []bool
	// Set by commitAll: the last round's answers, and whether a majority
	// confirmed.
	results []NodeResult
	ok      bool
}

// commitAll runs the second phase of acquisitions: it writes their fences
// and occurrences to the nodes until a majority confirmed each, and
// returns items with each one's last answers and whether it succeeded. A
// commit that timed out may have been applied (the occurrence marked as
// run), so it is not given up on a timeout: unconfirmed nodes are asked
// again, after a short pause, while the lock is valid. Only a majority
// that no longer holds our value or answers with a server error, the end
// of the validity, or ctx ends one without success. Each round costs one
// round trip per node for all the items still open.
func (r *Redlock) commitAll(ctx context.Context, items []commitItem) []commitItem {
	n := len(r.nodes)
	confirmed := make([]bool, len(items)*n) // item k's node i at k*n+i
	open := make([]int, len(items))
	for k := range open {
		open[k] = k
	}
	// A round in flight is not cut short by ctx, only by the node
	// timeout: a commit the nodes applied must be counted, or the
	// occurrence it marked would be refused to every replica while none
	// runs it. ctx ends the rounds after it.
	rctx := context.WithoutCancel(ctx)
	for len(open) > 0 {
		round := open // late answers must not see open change
		results := r.fanoutAll(rctx, len(round), r.commitOp(items, round, confirmed), quorumDecider(n, r.quorum), nil)
		var next []int
		for o, k := range open {
			rs := results[o]
			for i := range rs {
				if items[k].voters != nil && !items[k].voters[i] && rs[i].Vote == voteYes {
					rs[i] = NodeResult{Vote: voteWarmingUp, WarmingUp: true, Node: rs[i].Node,
						Err: fmt.Errorf("its vote did not count: it may have forgotten that the ticket was taken")}
				}
				confirmed[k*n+i] = confirmed[k*n+i] || rs[i].Vote == voteYes
			}
			items[k].results = rs
			switch {
			case count(rs, voteYes) >= r.quorum:
				items[k].ok = true
			case count(rs, voteNotOwner)+count(rs, voteError) > n-r.quorum, // definite
				ctx.Err() != nil,
				!time.Now().Add(r.nodeTimeoutFor(len(open))).Before(items[k].until):
			default:
				next = append(next, k)
			}
		}
		open = next
		if len(open) == 0 {
			break
		}
		// Undecided (timeouts, unreachable nodes, a node backing off): ask
		// again after a pause, so that fast failures do not spin.
		pause := time.NewTimer(r.cfg.nodeTimeout / 4)
		select {
		case <-ctx.Done():
			pause.Stop()
			open = nil
		case <-pause.C:
		}
	}
	return items
}

// commitOp returns the batch operation of one commit round: each node
// gets the commits of round (indexes into items) it has not confirmed yet
// (confirmed, item k's node i at k*len(nodes)+i); those it confirmed
// before count as yes.
func (r *Redlock) commitOp(items []commitItem, round []int, confirmed []bool) batchOp {
	n := len(r.nodes)
	return func(ctx context.Context, i int, node *engine.Node, deliver func([]NodeResult)) {
		var reqs []engine.CommitRequest
		var at []int // their places in round
		for o, k := range round {
			if !confirmed[k*n+i] {
				reqs, at = append(reqs, items[k].req), append(at, o)
			}
		}
		node.CommitAllAsync(ctx, reqs, r.cfg.stateTTL, func(rs []engine.CommitResult) {
			res := make([]NodeResult, len(round))
			for o := range res {
				res[o].Vote = voteYes // confirmed in an earlier round
			}
			for x, c := range rs {
				res[at[x]] = boolResult(c.Held, c.Err)
			}
			deliver(res)
		})
	}
}

// fencing1 reports whether an acquisition's fence is committed with its
// vote: on one node, whose vote decides, for a lock that claims no
// occurrence and takes no ticket (their marks must be written by a
// winner only). The node raises the fence counter to the larger of the
// counter + 1 and the attempt's start in µs, as the commit would, in the
// same script call as the SET: one round trip instead of two. An attempt
// abandoned after its vote (its validity ran out) leaves the counter
// raised, which only skips a token.
func (r *Redlock) fencing1(lc lockConfig) bool {
	return r.cfg.fencing && len(r.nodes) == 1 && lc.occurrence == 0 && lc.ticket == ""
}
