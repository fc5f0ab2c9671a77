package mutex

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Every failed acquisition matches ErrNotAcquired and
// exactly one of ErrHeld, ErrAlreadyRun and ErrNoQuorum; but for a claim
// of an occurrence refused because the lock is paused (the votes of a
// quorum are "paused"; the admin command pauses and resumes), which
// matches ErrNotAcquired only.
var (
	// ErrNotAcquired is matched by every failed acquisition.
	ErrNotAcquired = errors.New("mutex: lock not acquired")
	// ErrHeld: another owner holds the lock on a quorum of nodes
	// (QuorumError.Holder is its value). Unless the nodes are trusted
	// (WithTrustedNodes), a value set since its node restarted, less than
	// the max TTL ago, does not count toward this quorum: it was set by
	// an acquisition that could not count the node either.
	ErrHeld = fmt.Errorf("%w: held by another owner", ErrNotAcquired)
	// ErrAlreadyRun: a quorum of nodes has the occurrence, or a later one,
	// marked as run.
	ErrAlreadyRun = fmt.Errorf("%w: occurrence already run", ErrNotAcquired)
	// ErrNoQuorum: too few nodes granted the lock in time, and no other
	// owner holds a quorum either (nodes down, slow or warming up, a split
	// vote between contenders, a value set only since its nodes' servers
	// started, the validity ran out, or the owner's heartbeat is stale); a
	// later attempt may succeed.
	ErrNoQuorum = fmt.Errorf("%w: no quorum", ErrNotAcquired)

	// ErrLost: the lease can no longer be proven (it expired, or a quorum
	// of nodes no longer holds it), or this handle released it. It is the
	// cause of a KeepAlive context's cancellation.
	ErrLost = errors.New("mutex: lock lost")
	// ErrMaxHold: KeepAlive stopped extending because the lock reached the
	// maximum hold time; it comes joined with ErrLost.
	ErrMaxHold = errors.New("mutex: maximum hold time reached")
	// ErrInvalidOption is matched by errors about option values and
	// arguments, of this package and of every package above it (the
	// scheduler, the leak scan, the metrics, the status page, the admin
	// API and the front door): one error for all of them.
	ErrInvalidOption = errors.New("redcron: invalid option")
)

// errPaused is the reason of a claim refused by a quorum of nodes on
// which the lock is paused.
var errPaused = fmt.Errorf("%w: paused", ErrNotAcquired)

// errNodeRefused is matched by the error of a node whose answer cannot be
// counted whatever it says: its server's run id or uptime cannot be read,
// or one server answers under two node names; the tally shows it.
var errNodeRefused = errors.New("mutex: node not counted")

// The votes a node can cast (NodeResult.Vote).
const (
	voteYes         = "yes"         // granted, extended or released
	voteHeld        = "held"        // the lock holds another owner's value
	voteAlreadyRun  = "already_run" // the occurrence is at or below the node's mark
	votePaused      = "paused"      // the lock is paused and an occurrence was claimed
	voteNotOwner    = "not_owner"   // extend/release/commit: our value is not there
	voteWarmingUp   = "warming_up"  // the node's server started too recently to vouch (new or restarted): not counted
	voteTimeout     = "timeout"     // no answer within the per-node timeout
	voteCanceled    = "canceled"    // the caller's context was cancelled
	voteUnreachable = "unreachable" // a connection or network error
	voteError       = "error"       // an error reply from the server (e.g. WRONGTYPE)
)

// failedVote reports whether a vote stands for a failure of the node
// itself (rather than an answer about the lock).
func failedVote(v string) bool {
	return v == voteTimeout || v == voteUnreachable || v == voteError
}

// NodeResult is one node's part in one operation.
type NodeResult struct {
	Node string // the node's name
	// Vote is what it answered: yes, held (another owner's value),
	// already_run (the occurrence is marked as run), paused (the lock is
	// paused, and an occurrence was claimed), not_owner (our value
	// is not there), warming_up (its server started too recently to
	// vouch: not counted), timeout, canceled, unreachable or error (an
	// error reply); "" if it had not answered when the operation was
	// decided. timeout, unreachable and error are failures of the node.
	Vote    string
	Err     error         // the error, for timeouts, network and server errors
	Latency time.Duration // time to the node's answer
	Holder  string        // the value holding the lock, for held; the pause key's, for paused
	// HolderUntil is, for held, until when the holder's value lives on
	// the node, by this process's clock: the answer's arrival plus the
	// TTL the node reported (late by the answer's transit, a fraction of
	// a round trip); zero if the node did not say.
	HolderUntil time.Time
	// WarmingUp says the node answered an acquisition while warming up:
	// its server, brand new or restarted, started less than the max TTL
	// ago (or too recently to vouch for the occurrence claimed) and is not
	// trusted (WithMaxTTL, WithTrustedNodes). Its grants do not count (the
	// vote is warming_up). Another owner's value there counts toward that
	// owner's quorum only if it was set before the server started (the
	// node kept its data): one set since was set by an acquisition that
	// could not count the node either. Its marks of occurrences as run
	// count: only a winner writes one.
	WarmingUp bool
	fence     uint64 // the node's fence counter, in an answer to an acquisition
	// unproven: for voteHeld on such a node, the value was set since the
	// restart, so it proves nothing of its holder (see survived).
	unproven bool
	// server is the run id of the node's server, when read.
	server string
	// votesFrom and ticksFrom, for warming_up, are when the node's vote
	// counts and the first tick it vouches for (readyAt); onlyThis says
	// it votes, but not for this occurrence or ticket (too old for it).
	votesFrom, ticksFrom time.Time
	onlyThis             bool
}

// pending reports whether the node had not answered when the operation
// was decided.
func (r NodeResult) pending() bool { return r.Vote == "" }

// text returns the node's name and vote, with the error if any, as in a
// QuorumError's tally: "127.0.0.1:7001 timeout (...)".
func (r NodeResult) text() string {
	switch {
	case r.pending():
		return r.Node + " pending"
	case r.Err != nil:
		return fmt.Sprintf("%s %s (%v)", r.Node, r.Vote, r.Err)
	case r.unproven:
		return r.Node + " held (set since the node's server started: not counted for its holder)"
	}
	return r.Node + " " + r.Vote
}

// QuorumError is the error of an operation that did not reach a quorum.
// It carries the tally: what every node answered. It matches (errors.Is)
// its reason (ErrHeld, ErrAlreadyRun, ErrNoQuorum, which all match
// ErrNotAcquired, or ErrLost), the caller's context error if any, and every
// node's error.
type QuorumError struct {
	Op     string       // acquire, commit, extend or release
	Name   string       // the lock's name
	Quorum int          // votes needed
	Nodes  []NodeResult // every node's answer, in node order
	Reason error        // the sentinel saying why
	Holder string       // for ErrHeld, the value holding the lock on a quorum
	// For ErrHeld, the holder's owner (WithOwner) and occurrence
	// (Occurrence; the zero time if none), read from Holder.
	HolderOwner      string
	HolderOccurrence time.Time
	// HolderUntil is, for ErrHeld, until when the holder holds a quorum
	// unless it extends or releases the lock: the latest time a quorum of
	// the nodes that named it said its value lives on them (NodeResult's
	// HolderUntil); zero if too few of them said.
	HolderUntil time.Time
	Detail      string // more about the reason, if any
	Cause       error  // the caller's context error, if it ended the operation
}

// Error implements error. It reads like a tally:
//
//	mutex: acquire "job": 2/5 yes, quorum 3: held by another owner; n1 yes, n2 held, n3 timeout (...), ...
func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mutex: %s %q: %d/%d yes, quorum %d: %s", e.Op, e.Name, count(e.Nodes, voteYes), len(e.Nodes), e.Quorum, reasonText(e.Reason))
	if e.Reason == ErrHeld {
		if e.HolderOwner != "" {
			fmt.Fprintf(&b, " %q", e.HolderOwner)
		}
		if !e.HolderUntil.IsZero() {
			b.WriteString(" until " + e.HolderUntil.UTC().Format("2006-01-02T15:04:05.000Z"))
		}
	}
	if e.Detail != "" {
		b.WriteString(" (" + e.Detail + ")")
	}
	if e.Cause != nil {
		b.WriteString(": " + e.Cause.Error())
	}
	for i, n := range e.Nodes {
		if i == 0 {
			b.WriteString("; ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(n.text())
	}
	return b.String()
}

func reasonText(err error) string {
	switch err {
	case ErrHeld:
		return "held by another owner"
	case ErrAlreadyRun:
		return "occurrence already run"
	case errPaused:
		return "paused"
	case ErrNoQuorum:
		return "no quorum"
	}
	return strings.TrimPrefix(err.Error(), "mutex: ")
}

// Unwrap returns the reason, the context error and the nodes' errors.
func (e *QuorumError) Unwrap() []error {
	errs := []error{e.Reason}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	for _, n := range e.Nodes {
		if n.Err != nil {
			errs = append(errs, n.Err)
		}
	}
	return errs
}

func count(rs []NodeResult, v string) int {
	n := 0
	for _, r := range rs {
		if r.Vote == v {
			n++
		}
	}
	return n
}
