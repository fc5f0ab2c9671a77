package mutex

import (
	"fmt"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// acquireVote turns node i's answer to an acquisition claiming occurrence
// (0 for none), and taking a ticket placed at ticketAt (unix ms, 0 for
// none), into its vote. A server answering for two node names never
// counts. Unless the nodes are trusted, a node counts only while its server
// is known to have kept what it was told: not during the max TTL after it
// started (it may have forgotten locks it granted), not for an occurrence
// older than its start (it may have forgotten the mark), and never when its
// server cannot be read: anything unreadable fails closed.
func (r *Redlock) acquireVote(i int, a engine.AcquireResult, occurrence, ticketAt int64) (res NodeResult) {
	if a.Err != nil {
		return failure(a.Err)
	}
	rep := a.Reply
	if rep.Info != nil {
		defer func() { res.server = rep.Info.RunID }() // for twins, whatever the vote
	}
	now := time.Now()
	start, err := r.servers.observe(r, i, rep.Info, rep.InfoErr, now)
	switch {
	case err != nil && rep.Status == engine.AlreadyRun:
		// A mark is written only by a winner's commit: it is a refusal
		// whatever the server's history, and a refusal cannot run a tick.
		return NodeResult{Vote: voteAlreadyRun, fence: rep.Fence}
	case rep.Status == engine.Paused:
		// A refusal too, whatever the server's history.
		return NodeResult{Vote: votePaused, Holder: rep.Holder, fence: rep.Fence,
			WarmingUp: err == nil && !r.cfg.trusted && r.warmingUp(start, now)}
	case err != nil:
		return NodeResult{Vote: voteError, fence: rep.Fence, Err: err}
	}
	recent := !r.cfg.trusted && r.warmingUp(start, now)
	switch {
	case rep.Status == engine.Held:
		return NodeResult{Vote: voteHeld, Holder: rep.Holder, fence: rep.Fence, WarmingUp: recent,
			unproven: recent && !r.survived(rep.Holder, start)}
	case rep.Status == engine.AlreadyRun:
		// A mark is only written by a winner's commit, so it counts even
		// on a node that restarted since.
		return NodeResult{Vote: voteAlreadyRun, fence: rep.Fence, WarmingUp: recent}
	case recent:
		// The node may have forgotten locks it granted before its restart;
		// our key on it is ours, so it is released with the rest.
		return r.warming(start, rep.Fence)
	case !r.cfg.trusted && ticketAt != 0 && !r.vouchesTicket(start, ticketAt):
		// The node may have forgotten that the ticket was taken.
		return NodeResult{Vote: voteWarmingUp, WarmingUp: true, fence: rep.Fence, onlyThis: true,
			Err: fmt.Errorf("server started at %s, too late to vouch that the trigger request placed at %s was not taken",
				start.UTC().Format(time.RFC3339), time.UnixMilli(ticketAt).UTC().Format(time.RFC3339Nano))}
	case !r.cfg.trusted && occurrence > 0 && !r.vouches(start, occurrence):
		return NodeResult{Vote: voteWarmingUp, WarmingUp: true, fence: rep.Fence, onlyThis: true,
			Err: fmt.Errorf("server started at %s, too late to vouch that occurrence %s was not run (its mark may be lost)",
				start.UTC().Format(time.RFC3339), occurrenceTime(occurrence).UTC().Format(time.RFC3339Nano))}
	}
	return NodeResult{Vote: voteYes, fence: rep.Fence}
}

// warming returns the vote of a node whose server started at start, less
// than the max TTL ago: warming up, with when it votes and the first tick
// it vouches for.
func (r *Redlock) warming(start time.Time, fence uint64) NodeResult {
	votes, ticks := r.readyAt(start)
	return NodeResult{Vote: voteWarmingUp, WarmingUp: true, fence: fence, votesFrom: votes, ticksFrom: ticks,
		Err: fmt.Errorf("server started %v ago: votes from %s, after the max TTL %v; ticks from %s",
			time.Since(start).Round(time.Second), votes.Format(time.TimeOnly), r.cfg.maxTTL, ticks.Format(time.TimeOnly))}
}

// survived reports whether holder, the value holding the lock on a node
// whose server started at start, less than the max TTL ago, was set before
// that start, so that its holder may count the node (the node kept its
// data). A value set since proves nothing of its holder, who does not count
// the node either: it was set by an acquisition whose vote there was
// voteWarmingUp (or by a holder that trusts the nodes, which this Redlock
// cannot tell). Its acquisition time is by the holder's clock and started
// up to a node timeout before it reached the node. A value that cannot be
// read counts as set since the start.
func (r *Redlock) survived(holder string, start time.Time) bool {
	v, err := engine.ParseValue(holder)
	if err != nil {
		return false
	}
	return v.Acquired.Before(start.Add(-uptimeSlack - r.cfg.nodeTimeout))
}

// acquireDecider decides an acquisition when a quorum voted yes, or when
// it can no longer get one and the reason is known: a quorum of one
// holder or of marks, or every node answered. A split vote thus waits for
// the slowest node (within the node timeout) to be told apart from a
// lock held elsewhere.
func acquireDecider(n, quorum int) decider {
	return func(rs []NodeResult) bool {
		yes, answered := 0, 0
		for _, r := range rs {
			if r.Vote == voteYes {
				yes++
			}
			if !r.pending() {
				answered++
			}
		}
		if yes >= quorum || answered == n {
			return true
		}
		if n-answered+yes >= quorum {
			return false // the pending nodes could still make a quorum
		}
		_, reason := acquireReason(rs, quorum)
		return reason != ErrNoQuorum
	}
}
