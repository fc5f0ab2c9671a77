package mutex

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// clockSkew is the margin for the difference between replicas' clocks in
// the restart rule for occurrences (see servers.vouches).
const clockSkew = 2 * time.Second

// uptimeSlack covers Redis's uptime, which counts whole seconds.
const uptimeSlack = time.Second

// servers follows the Redis server behind each node across its answers:
// its run id, and when it started by this process's clocks. A server it
// cannot read, or one that answers under two node names, cannot vote.
type servers struct {
	mu   sync.Mutex
	seen []serverSeen // by node index
}

// serverSeen is what is known of one node's server.
type serverSeen struct {
	runID string
	// start is when the server started, as estimated when its run id was
	// first seen: from its uptime (whole seconds, hence uptimeSlack), or,
	// when its run id changed (a failover, another server behind the
	// address), the moment this process saw the change, since the new
	// server may lack writes made up to then. It is not revised: the
	// instants a node's vote counts from, once logged, hold (see readyAt).
	// It carries the monotonic clock reading, and is compared only with it.
	start time.Time
	twin  string // the other node name found with the same run id, for logging once
}

func newServers(n int) *servers { return &servers{seen: make([]serverSeen, n)} }

// observe records node i's answer about its server at now and returns the
// server's start. It fails when the answer is unreadable or another node
// answered with the same run id: one server's vote must not count twice.
// With trusted nodes only the run id matters: an unreadable answer (a
// server without INFO) is let through, and the start is not estimated.
func (s *servers) observe(r *Redlock, i int, info *engine.Info, infoErr error, now time.Time) (time.Time, error) {
	if infoErr == nil && info == nil {
		infoErr = fmt.Errorf("no server info in the answer")
	}
	switch {
	case infoErr != nil && r.cfg.trusted:
		return time.Time{}, nil
	case infoErr != nil:
		return time.Time{}, fmt.Errorf("%w: server info unreadable: %w", errNodeRefused, infoErr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := &s.seen[i]
	est := now.Add(-info.Uptime)
	switch {
	case prev.runID == "":
		prev.start = est
	case prev.runID == info.RunID:
		// Kept: a later uptime, read at another fraction of its second,
		// would move the start by up to a second either way, and a clock
		// stepped forward since would make it older.
	default:
		if !r.cfg.trusted {
			r.cfg.logger.LogAttrs(context.Background(), slog.LevelWarn, "redis server changed: its votes wait as after a restart",
				slog.String("node", r.nodes[i].Name()), slog.String("run_id", info.RunID), slog.String("previous_run_id", prev.runID))
		}
		prev.start = now
	}
	prev.runID = info.RunID
	for j := range s.seen {
		if j == i || s.seen[j].runID != info.RunID {
			continue
		}
		a, b := r.nodes[j].Name(), r.nodes[i].Name()
		if prev.twin != a {
			prev.twin = a
			r.cfg.logger.LogAttrs(context.Background(), slog.LevelError, "two nodes are one redis server: neither is counted",
				slog.String("node", b), slog.String("same_as", a), slog.String("run_id", info.RunID))
		}
		return time.Time{}, fmt.Errorf("%w: nodes %s and %s are one redis server (run_id %s): its vote would count twice",
			errNodeRefused, a, b, info.RunID)
	}
	prev.twin = ""
	return prev.start, nil
}

// warmingUp reports whether a server that started at start may have
// forgotten locks it granted: it started less than the max TTL ago.
func (r *Redlock) warmingUp(start, now time.Time) bool {
	return now.Before(start.Add(r.cfg.maxTTL + uptimeSlack))
}

// vouches reports whether a server that started at start was up when any
// mark of occurrence (unix ms) could have been written, so that its
// answer proves the occurrence was not run: a lock claiming an occurrence
// is won at most the max TTL before it (a lease won ahead), by clocks up to
// clockSkew apart. A server that started after that cannot tell.
func (r *Redlock) vouches(start time.Time, occurrence int64) bool {
	wall := time.Now().Add(-time.Since(start)) // as the wall clock reads now, should it have stepped
	return !time.UnixMilli(occurrence).Before(wall.Add(r.cfg.maxTTL + clockSkew + uptimeSlack))
}

// readyAt returns, by the wall clock, when the vote of a node whose server
// started at start counts (see warmingUp), and the first tick it vouches
// for (see vouches): ticks fall on whole seconds.
func (r *Redlock) readyAt(start time.Time) (votes, ticks time.Time) {
	wall := time.Now().Add(-time.Since(start)).Round(0) // as in vouches
	after := wall.Add(r.cfg.maxTTL + clockSkew + uptimeSlack)
	ticks = after.Truncate(time.Second)
	if ticks.Before(after) {
		ticks = ticks.Add(time.Second)
	}
	return wall.Add(r.cfg.maxTTL + uptimeSlack), ticks
}

// vouchesTicket reports whether a server that started at start was up when
// a trigger's ticket was placed at placed (unix ms, by the placer's clock,
// up to clockSkew off), so that it still has the ticket unless a commit
// took it.
func (r *Redlock) vouchesTicket(start time.Time, placed int64) bool {
	wall := time.Now().Add(-time.Since(start))
	return !time.UnixMilli(placed).Before(wall.Add(clockSkew + uptimeSlack))
}

// twins turns the yes votes of nodes whose servers have one run id into
// errors: two node names for one server (127.0.0.1:7001 and
// localhost:7001) must not give it two votes. Servers.observe refuses the
// second name to answer; this refuses the first too, in the same tally.
func twins(rs []NodeResult) {
	for i := range rs {
		for j := range rs {
			a, b := &rs[i], &rs[j]
			if i == j || a.server == "" || a.server != b.server || a.Vote != voteYes {
				continue
			}
			a.Vote, a.Err = voteError, fmt.Errorf("%w: nodes %s and %s are one redis server (run_id %s): its vote would count twice",
				errNodeRefused, b.Node, a.Node, a.server)
		}
	}
}
