package mutex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// nodeState is what a node is, as this Redlock last saw it: up, down
// (unreachable or timing out), warming_up (its server started too recently
// to vote), or refused (it answers, but not as a node should: a password or
// ACL refused, an unreadable INFO, one server under two names).
type nodeState string

const (
	nodeUp      nodeState = "up"
	nodeDown    nodeState = "down"
	nodeWarming nodeState = "warming_up"
	nodeRefused nodeState = "refused"
	nodeUnknown nodeState = ""
	warmingHint           = "for local development against fresh servers, mutex.WithTrustedNodes() lets them vote at once (only where the nodes keep every write: appendfsync always)"
)

// nodeStates logs each node's state when it changes, with the cause, so
// that a bad minority node (a wrong password, a typo in its address) is
// not silent while the others keep the quorum.
type nodeStates struct {
	mu      sync.Mutex
	last    []nodeState // the state each node was last seen in
	logged  []nodeState // the state each node was last logged in
	at      []time.Time // when each node's state was last logged
	flapped []int       // changes not logged since, for a node that flaps
	// firstTick is the first tick a quorum vouches for, as last logged;
	// probed says logNodes ran before.
	firstTick time.Time
	probed    bool
}

// flapWindow is how often one node's changes are logged at most: a node
// answering about as slowly as the node timeout would otherwise flip
// between up and down on every call.
const flapWindow = 10 * time.Second

// stateOf returns the state a node's answer shows, and false for answers
// that show nothing of the node (pending, canceled, a bad key).
func stateOf(res NodeResult) (nodeState, bool) {
	switch res.Vote {
	case voteYes, voteHeld, voteAlreadyRun, votePaused, voteNotOwner:
		return nodeUp, true
	case voteWarmingUp:
		if res.onlyThis {
			return nodeUp, true // it votes, for newer ticks
		}
		return nodeWarming, true
	case voteTimeout, voteUnreachable:
		return nodeDown, true
	case voteError:
		if nodeWide(res.Err) {
			return nodeRefused, true
		}
		return nodeUp, true // an error of one key's: the node answered
	}
	return nodeUnknown, false
}

// nodeWide reports whether a server error concerns the node rather than
// one key: authentication and permissions, a server not ready, an
// unreadable INFO, one server under two names.
func nodeWide(err error) bool {
	if errors.Is(err, errNodeRefused) {
		return true
	}
	msg := err.Error() // the server's own error replies
	for _, s := range []string{"NOAUTH", "WRONGPASS", "NOPERM", "LOADING", "MASTERDOWN", "READONLY"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// noteNodes logs the nodes whose state rs (one answer per node, in the
// nodes' order) shows to have changed: at once, unless the node's last
// line is less than flapWindow old; such a change is logged with the next
// answer after the window, if the state still differs from the one last
// logged, with how many changes went unlogged. Lines are written under the
// lock, so that they come in the order the states were seen.
func (r *Redlock) noteNodes(rs []NodeResult) {
	if len(rs) != len(r.nodes) {
		return
	}
	st := r.states
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.last == nil {
		n := len(r.nodes)
		st.last, st.logged, st.at, st.flapped = make([]nodeState, n), make([]nodeState, n), make([]time.Time, n), make([]int, n)
	}
	now := time.Now()
	for i, res := range rs {
		state, ok := stateOf(res)
		if !ok {
			continue
		}
		if state != st.last[i] {
			st.last[i] = state
			st.flapped[i]++
		}
		if state == st.logged[i] || now.Sub(st.at[i]) < flapWindow && !st.at[i].IsZero() {
			continue
		}
		r.logNode(context.Background(), res, state, st.flapped[i]-1)
		st.logged[i], st.at[i], st.flapped[i] = state, now, 0
	}
}

// logNode logs one node's state, as res shows it, with its cause and the
// number of changes not logged before it; a node warming up, with when it
// votes and the first tick it vouches for.
func (r *Redlock) logNode(ctx context.Context, res NodeResult, st nodeState, unlogged int) {
	attrs := []slog.Attr{slog.String("node", res.Node), slog.String("state", string(st))}
	if unlogged > 0 {
		attrs = append(attrs, slog.Int("changes_not_logged", unlogged))
	}
	level := slog.LevelWarn
	switch st {
	case nodeUp:
		level = slog.LevelInfo
	case nodeWarming:
		if !res.votesFrom.IsZero() {
			attrs = append(attrs, slog.Time("votes_from", res.votesFrom), slog.Time("ticks_from", res.ticksFrom))
		}
		attrs = append(attrs, slog.String("hint", warmingHint))
	}
	if res.Err != nil && res.votesFrom.IsZero() { // a node warming up is not in error: its times say it all
		attrs = append(attrs, slog.Any("error", res.Err))
	}
	r.cfg.logger.LogAttrs(ctx, level, "redis node "+string(st), attrs...)
}

// logNodes asks every node about its server (INFO), notes its state
// (NodeStates) and logs it when it changed: the first call one line per
// node, up, down, refused (with the cause), or warming up, with when its
// vote counts and the first tick it vouches for. While a quorum cannot
// vouch for a tick now, it also logs when the first tick can run (once per
// instant), or, at the first call, that no tick can run for want of
// enough nodes. Lock calls note and log the changes they show; the leak
// scanner calls it at every heartbeat, so that the states stay fresh
// between jobs. It takes at most four node timeouts.
func (r *Redlock) logNodes(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 4*r.cfg.nodeTimeout)
	defer cancel()
	results := make([]NodeResult, len(r.nodes))
	ready := make([]time.Time, len(r.nodes))
	var wg sync.WaitGroup
	for i, n := range r.nodes {
		wg.Go(func() { results[i], ready[i] = r.probe(ctx, i, n) })
	}
	wg.Wait()
	r.noteNodes(results)
	r.noteFirstTick(ctx, ready)
}

// probe asks node i about its server and returns the vote its state would
// give: yes when up, warming up with the time it votes from, or the error;
// and the first tick it vouches for (zero if none: it cannot vote).
func (r *Redlock) probe(ctx context.Context, i int, n *engine.Node) (NodeResult, time.Time) {
	res := NodeResult{Node: n.Name()}
	info, err := n.Info(ctx)
	if err != nil && r.cfg.trusted && engine.ServerError(err) && !nodeWide(err) {
		return NodeResult{Node: n.Name(), Vote: voteYes}, time.Now() // it answers; without INFO, it is trusted
	}
	if err != nil {
		res = failure(err)
		if res.Vote == voteError && !nodeWide(err) {
			res.Err = fmt.Errorf("%w: INFO refused, so its restarts cannot be told: %w", errNodeRefused, err)
		}
		res.Node = n.Name()
		return res, time.Time{}
	}
	now := time.Now()
	start, err := r.servers.observe(r, i, &info, nil, now)
	switch {
	case err != nil:
		return NodeResult{Node: n.Name(), Vote: voteError, Err: err}, time.Time{}
	case r.cfg.trusted:
		return NodeResult{Node: n.Name(), Vote: voteYes}, now
	case r.warmingUp(start, now):
		res = r.warming(start, 0)
		res.Node = n.Name()
		return res, res.ticksFrom
	}
	_, ticks := r.readyAt(start)
	return NodeResult{Node: n.Name(), Vote: voteYes}, ticks
}

// noteFirstTick logs when the first tick can run, from the first tick each
// node vouches for (ready, zero for a node that cannot vote): the one a
// quorum vouches for, when it is to come and was not logged yet; or, at
// the first call only, that a quorum cannot vote.
func (r *Redlock) noteFirstTick(ctx context.Context, ready []time.Time) {
	var can []time.Time
	for _, t := range ready {
		if !t.IsZero() {
			can = append(can, t)
		}
	}
	slices.SortFunc(can, time.Time.Compare)
	st := r.states
	st.mu.Lock()
	defer st.mu.Unlock()
	probed := st.probed
	st.probed = true
	switch {
	case len(can) < r.quorum:
		if !probed {
			r.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "no tick can run: fewer nodes can vote than a quorum",
				slog.Int("voting", len(can)), slog.Int("quorum", r.quorum), slog.Int("nodes", len(r.nodes)))
		}
		st.firstTick = time.Time{}
	case can[r.quorum-1].After(time.Now()) && !can[r.quorum-1].Equal(st.firstTick):
		st.firstTick = can[r.quorum-1]
		r.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "first tick can run",
			slog.Time("first_tick", st.firstTick), slog.Int("quorum", r.quorum), slog.Int("nodes", len(r.nodes)))
	}
}

// NodeStates returns each node's state as the Redlock last saw it, by node
// name: "up", "down" (unreachable or timing out), "warming_up" (its server
// started too recently to vote), "refused" (it answers, but its vote
// cannot count: a password refused, an unreadable INFO), or "" (not seen
// yet). It does no I/O.
func (r *Redlock) NodeStates() map[string]string {
	out := make(map[string]string, len(r.nodes))
	r.states.mu.Lock()
	defer r.states.mu.Unlock()
	for i, n := range r.nodes {
		out[n.Name()] = ""
		if r.states.last != nil {
			out[n.Name()] = string(r.states.last[i])
		}
	}
	return out
}
