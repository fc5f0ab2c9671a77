package mutex

import (
	"slices"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// A part runs on a node while its running value is there and its parent
// holds there too: it is held while both are true on a quorum of the
// nodes. claimed notes where each part of a claim was set (the nodes that
// answered yes, before the claim was decided or after), and a lock notes,
// by node, until when it surely holds there (nodeUntil), so that a part's
// validity is its parent's on the nodes that claimed it (heldOn), not on
// all of them.

// claimed are the nodes that claimed each part of one claimAll, and each
// node's server (its run id), so that one server behind two node names
// counts once.
type claimed struct {
	mu     sync.Mutex
	on     [][]bool // by part, by node
	server []string // by node, "" unknown
}

func newClaimed(parts, nodes int) *claimed {
	c := &claimed{on: make([][]bool, parts), server: make([]string, nodes)}
	for j := range c.on {
		c.on[j] = make([]bool, nodes)
	}
	return c
}

// note records node i's answers to the claim, one per part.
func (c *claimed) note(i int, res []NodeResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, v := range res {
		if v.server != "" {
			c.server[i] = v.server
		}
		if v.Vote == voteYes {
			c.on[j][i] = true
		}
	}
}

// nodes returns part j's nodes and the nodes' servers.
func (c *claimed) nodes(j int) ([]bool, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.on[j]), slices.Clone(c.server)
}

// heldFor is heldOn for part j of claim c, claimed at claimedAt.
func (l *Lock) heldFor(c *claimed, j int, claimedAt time.Time) time.Time {
	on, servers := c.nodes(j)
	return l.heldOn(on, servers, claimedAt)
}

// heldOn returns until when l holds on a quorum of the nodes on (their
// servers counted once each), for a part claimed on those nodes at
// claimed: it runs while its parent, l, holds on a quorum of them
// (elsewhere, a claim or an acquisition of its lock finds it gone), and
// never past l's own validity. A node where l was lost after claimed does
// not count, even where l was given back since: the part's running value
// may have gone with it (a restart, another replica's claim).
func (l *Lock) heldOn(on []bool, servers []string, claimed time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := make([]time.Time, 0, len(on))
	for i, ok := range on {
		if ok && i < len(l.nodeUntil) && !twinBefore(on, servers, i) && !l.lostSince(i, claimed) {
			held = append(held, l.nodeUntil[i])
		}
	}
	q := l.r.quorum
	if len(held) < q {
		return time.Time{}
	}
	slices.SortFunc(held, func(a, b time.Time) int { return b.Compare(a) })
	if held[q-1].Before(l.until) {
		return held[q-1]
	}
	return l.until
}

// twinBefore reports whether a node before i among on has node i's
// server: one server behind two node names counts once.
func twinBefore(on []bool, servers []string, i int) bool {
	for k := range i {
		if on[k] && servers[i] != "" && servers[k] == servers[i] {
			return true
		}
	}
	return false
}

// heldAt notes the nodes where results (by node) say l was granted or
// extended by an operation that started at start.
func (l *Lock) heldAt(results []NodeResult, start time.Time) {
	until := start.Add(l.ttl - l.r.drift(l.ttl))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.nodeUntil == nil {
		l.nodeUntil = make([]time.Time, len(l.r.nodes))
	}
	for i, res := range results {
		if res.Vote == voteYes && i < len(l.nodeUntil) && until.After(l.nodeUntil[i]) {
			l.nodeUntil[i] = until
		}
		if res.Vote == voteNotOwner && i < len(l.nodeUntil) {
			if l.nodeLost == nil {
				l.nodeLost = make([]time.Time, len(l.r.nodes))
			}
			l.nodeLost[i] = time.Now() // after the loss, whenever it was
		}
	}
}

// lostSince reports whether node i answered that it had lost l after t.
// Called with l.mu held.
func (l *Lock) lostSince(i int, t time.Time) bool {
	return i < len(l.nodeLost) && l.nodeLost[i].After(t)
}

// heldAtNamed is heldAt for one node's answer, found by its name (a late
// answer to l's acquisition).
func (l *Lock) heldAtNamed(res NodeResult, start time.Time) {
	for i, n := range l.r.nodes {
		if n.Name() == res.Node {
			results := make([]NodeResult, i+1)
			results[i] = res
			l.heldAt(results, start)
		}
	}
}

// claimRequests returns the nodes' claims of reqs (by rights, under
// parents, with fence, started at start), the parts' started records and
// their texts, and their values. The parts of one occurrence, parent and
// owner share one value (the first's token), so that a node's call
// carries it once, and the parts little more than their names (see
// engine.ClaimAllAsync): each part is a field of its own, so a shared
// value tells them apart as well as its own would.
func (r *Redlock) claimRequests(reqs []attemptReq, rights, parents []*Lock, fence uint64, start time.Time) (
	creqs []engine.ClaimRequest, records []engine.Record, started, values []string) {
	creqs, records = make([]engine.ClaimRequest, len(reqs)), make([]engine.Record, len(reqs))
	started, values = make([]string, len(reqs)), make([]string, len(reqs))
	type share struct {
		occurrence int64
		parent     *Lock
		owner      string
	}
	shared := map[share]string{}
	for j, q := range reqs {
		p := parents[j]
		sk := share{q.lc.occurrence, p, q.lc.owner}
		value, ok := shared[sk]
		if !ok {
			value = engine.Value{Token: q.token, Acquired: start, Occurrence: q.lc.occurrence, Owner: q.lc.owner}.String()
			shared[sk] = value
		}
		records[j] = r.startRecord(q.keys.Name, q.lc, fence, start)
		started[j], values[j] = r.recordText(records[j]), value // a claim writes its started record
		creqs[j] = engine.ClaimRequest{Right: engine.Parent{Key: rights[j].keys.Lock, Value: rights[j].value}, Keys: q.keys,
			Running:    engine.RunningValue(engine.Parent{Key: p.keys.Lock, Value: p.value}, value),
			Occurrence: q.lc.occurrence, Fence: fence, Ledger: r.ledgerWrite(records[j], "", started[j])}
	}
	return creqs, records, started, values
}
