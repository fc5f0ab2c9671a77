package mutex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// attemptReq is one lock of an acquisition round.
type attemptReq struct {
	keys  engine.LockKeys
	ttl   time.Duration
	lc    lockConfig
	token string // fresh for every attempt: a late release of an earlier attempt must never match
	// waiter, for a Lock that waited, is its id: refused, it takes the
	// lock's turn (engine.AcquireRequest.Waiter).
	waiter string
}

// attemptAll makes one acquisition attempt at each of reqs, all together:
// the vote, the commit of the fences and occurrences, and the validity
// check. Each phase costs one round trip per node for all of them. The
// results are in the order of reqs.
func (r *Redlock) attemptAll(ctx context.Context, reqs []attemptReq) []Result {
	if err := ctx.Err(); err != nil {
		out := make([]Result, len(reqs))
		for j, q := range reqs {
			out[j].Err = &QuorumError{Op: "acquire", Name: q.keys.Name, Quorum: r.quorum,
				Nodes: r.unanswered(), Reason: ErrNoQuorum, Cause: context.Cause(ctx)}
		}
		return out
	}
	// Parts released and not yet ended go first, so that the lock's vote
	// sees them ended (a node's calls run in order).
	r.flushEnds()
	rd := r.newRound(reqs)
	rd.vote(ctx)
	rd.commit(ctx)
	return rd.finish(ctx)
}

// round is one attemptAll, phase by phase: each request's value and the
// nodes' votes, fences and failures.
type round struct {
	r      *Redlock
	reqs   []attemptReq
	start  time.Time
	areqs  []engine.AcquireRequest
	strags []*stragglers
	votes  [][]NodeResult
	failed []*QuorumError
	fences []uint64
	// records and started are each acquisition's ledger record and its
	// text, as its commit writes it ("" with the ledger off).
	records []engine.Record
	started []string
	// ticketAt is when each acquisition's ticket was placed (unix ms; 0
	// for none, -1 for a ticket redcron did not make, which no node
	// vouches for).
	ticketAt []int64
}

func (r *Redlock) newRound(reqs []attemptReq) *round {
	rd := &round{r: r, reqs: reqs, start: time.Now(), areqs: make([]engine.AcquireRequest, len(reqs)),
		strags: make([]*stragglers, len(reqs)), failed: make([]*QuorumError, len(reqs)), fences: make([]uint64, len(reqs)),
		records: make([]engine.Record, len(reqs)), started: make([]string, len(reqs)), ticketAt: make([]int64, len(reqs))}
	for j, q := range reqs {
		value := engine.Value{Token: q.token, Acquired: rd.start, Occurrence: q.lc.occurrence, Owner: q.lc.owner}.String()
		rd.areqs[j] = engine.AcquireRequest{Keys: q.keys, Value: value, TTL: q.ttl, Occurrence: q.lc.occurrence, WantInfo: true}
		if q.waiter != "" {
			rd.areqs[j].Waiter, rd.areqs[j].TurnTTL = q.waiter, r.turnTTL()
		}
		if r.fencing1(q.lc) {
			rd.areqs[j].FenceFloor, rd.areqs[j].StateTTL = uint64(rd.start.UnixMicro()), r.cfg.stateTTL
		}
		rd.strags[j] = &stragglers{r: r, keys: q.keys, value: value, ttl: q.ttl}
		if q.lc.ticket != "" {
			rd.ticketAt[j] = -1
			if at, ok := engine.TicketTime(q.lc.ticket); ok {
				rd.ticketAt[j] = at.UnixMilli()
			}
		}
	}
	return rd
}

// vote asks every node for every lock at once.
func (rd *round) vote(ctx context.Context) {
	r := rd.r
	rd.votes = r.fanoutAll(ctx, len(rd.reqs), func(ctx context.Context, i int, n *engine.Node, deliver func([]NodeResult)) {
		// Counted for Flush until answered: a late answer of an abandoned
		// attempt queues a release (stragglers.late) before it is done.
		r.pending.add(1)
		n.AcquireAllAsync(ctx, rd.areqs, func(rs []engine.AcquireResult) {
			defer r.pending.done()
			res := make([]NodeResult, len(rs))
			for j, a := range rs {
				res[j] = r.acquireVote(i, a, rd.areqs[j].Occurrence, rd.ticketAt[j])
			}
			deliver(res)
		})
	}, rd.decider(), func(j int, res NodeResult) { rd.strags[j].late(res) })
	for _, rs := range rd.votes {
		twins(rs)
	}
}

// commit writes the fences and occurrences of the locks that won a quorum
// of votes; the others fail.
func (rd *round) commit(ctx context.Context) {
	r := rd.r
	var commits []commitItem
	for j, q := range rd.reqs {
		if count(rd.votes[j], voteYes) < r.quorum {
			rd.failed[j] = &QuorumError{Op: "acquire", Name: q.keys.Name, Quorum: r.quorum, Nodes: rd.votes[j]}
			rd.failed[j].Holder, rd.failed[j].Reason = acquireReason(rd.votes[j], r.quorum)
			if v, err := engine.ParseValue(rd.failed[j].Holder); err == nil {
				rd.failed[j].HolderOwner = v.Owner
				if v.Occurrence != 0 {
					rd.failed[j].HolderOccurrence = time.UnixMilli(v.Occurrence)
				}
			}
			continue
		}
		fused := rd.areqs[j].FenceFloor != 0
		if r.cfg.fencing {
			var seen uint64
			for _, res := range rd.votes[j] {
				seen = max(seen, res.fence)
			}
			rd.fences[j] = max(seen+1, uint64(time.Now().UnixMicro()))
			if fused {
				rd.fences[j] = seen // raised by the vote itself
			}
		}
		rd.records[j] = r.startRecord(q.keys.Name, q.lc, rd.fences[j], rd.start)
		if rd.fences[j] != 0 && !fused || q.lc.occurrence != 0 || q.lc.ticket != "" {
			rd.started[j] = r.recordText(rd.records[j])
			// A commit may write the started record on some nodes and
			// still fail: the attempt's releases take it back.
			rd.strags[j].ledger = r.ledgerWrite(rd.records[j], rd.started[j], "")
			commits = append(commits, commitItem{j: j, until: rd.start.Add(q.ttl - r.drift(q.ttl)), voters: rd.voters(j),
				req: engine.CommitRequest{Keys: q.keys, Value: rd.areqs[j].Value, Fence: rd.fences[j], Occurrence: q.lc.occurrence,
					Ledger: r.ledgerWrite(rd.records[j], "", rd.started[j]), Ticket: q.lc.ticket}})
		} // else no commit, so no started record: the release writes the record
	}
	for _, c := range r.commitAll(ctx, commits) {
		if !c.ok {
			rd.failed[c.j] = &QuorumError{Op: "commit", Name: rd.reqs[c.j].keys.Name, Quorum: r.quorum, Nodes: c.results,
				Reason: ErrNoQuorum, Detail: "fence and occurrence not committed to a majority"}
		}
	}
}

// finish makes the locks still valid, and abandons the others: they are
// released together, where they may hold their value, so that their
// releases share round trips, and then reported. Where they may hold it is
// told by the votes, which set it, not by a failed commit's answers: a
// commit never sent to a node says nothing of the value its vote set there.
func (rd *round) finish(ctx context.Context) []Result {
	r := rd.r
	out := make([]Result, len(rd.reqs))
	var abandons []int
	for j, q := range rd.reqs {
		until := rd.start.Add(q.ttl - r.drift(q.ttl))
		if rd.failed[j] == nil && !time.Now().Before(until) {
			rd.failed[j] = &QuorumError{Op: "acquire", Name: q.keys.Name, Quorum: r.quorum, Nodes: rd.votes[j], Reason: ErrNoQuorum,
				Detail: fmt.Sprintf("validity ran out: acquiring took %v of the %v TTL", time.Since(rd.start), q.ttl)}
		}
		if rd.failed[j] != nil {
			abandons = append(abandons, j)
			continue
		}
		out[j].Lock = &Lock{r: r, keys: q.keys, value: rd.areqs[j].Value, token: q.token, fence: rd.fences[j],
			occurrence: q.lc.occurrence, owner: q.lc.owner, ttl: q.ttl, acquired: rd.start, until: until,
			record: rd.records[j], started: rd.started[j]}
		out[j].Lock.heldAt(rd.votes[j], rd.start)
		rd.strags[j].won(out[j].Lock, rd.start)
		ev := out[j].Lock.event(opAcquire, nil)
		ev.Fence, ev.Duration, ev.Nodes = rd.fences[j], time.Since(rd.start), rd.votes[j]
		r.observe(ev)
	}
	var releases []func()
	for _, j := range abandons {
		s := rd.strags[j]
		if targets := s.abandon(rd.votes[j]); targets != nil {
			releases = append(releases, func() { s.r.releaseOn(ctx, targets, s.keys, s.value, 0, s.ttl, s.ledger, allAnswered) })
		}
	}
	if len(releases) == 1 {
		releases[0]()
	} else {
		var wg sync.WaitGroup
		for _, release := range releases {
			wg.Go(release)
		}
		wg.Wait()
	}
	for _, j := range abandons {
		out[j].Err = r.reportFailure(ctx, rd.failed[j], rd.start, rd.reqs[j].lc.occurrence)
	}
	return out
}

// acquireReason says which value holds a quorum, when that is the reason,
// and why an acquisition without quorum failed. The outcome is final only
// when the votes prove it: a quorum of nodes has the occurrence marked as
// run, or a quorum holds one and the same other value. Refusals from
// different holders (a split vote between contenders), holds set since
// a recent restart of their node (see survived), or marks on a
// minority (left by a winner whose commit failed), are undecided: a later
// attempt may win.
func acquireReason(rs []NodeResult, quorum int) (holder string, reason error) {
	if count(rs, voteAlreadyRun) >= quorum {
		return "", ErrAlreadyRun
	}
	if count(rs, votePaused) >= quorum {
		return "", errPaused
	}
	counts := func(r NodeResult) bool { return r.Vote == voteHeld && !r.unproven }
	for i, a := range rs {
		if !counts(a) {
			continue
		}
		same := 1
		for _, b := range rs[i+1:] {
			if counts(b) && b.Holder == a.Holder {
				same++
			}
		}
		if same >= quorum {
			return a.Holder, ErrHeld
		}
	}
	return "", ErrNoQuorum
}

// reportFailure reports a failed attempt at a lock claiming occurrence (0
// for none) and returns its error.
func (r *Redlock) reportFailure(ctx context.Context, qerr *QuorumError, start time.Time, occurrence int64) error {
	if err := ctx.Err(); err != nil {
		qerr.Cause = context.Cause(ctx)
	}
	r.observe(Event{Op: opAcquire, Name: qerr.Name, Err: qerr, Duration: time.Since(start), Nodes: qerr.Nodes,
		Occurrence: occurrenceTime(occurrence)})
	return qerr
}

// stragglers undoes the grants of nodes that answer after an acquisition
// round was decided, if the attempt is abandoned.
type stragglers struct {
	r         *Redlock
	keys      engine.LockKeys
	value     string
	ttl       time.Duration
	ledger    engine.LedgerWrite // takes back a started record the commit may have written
	mu        sync.Mutex
	abandoned bool
	early     []NodeResult // late answers that came before the attempt was abandoned or won
	// lock is the attempt's Lock once won: a late grant is noted where
	// it holds (heldAt).
	lock  *Lock
	start time.Time
}

// won notes that the attempt, started at start, won l: the late answers
// that granted it, then and later, are noted as nodes where l holds.
func (s *stragglers) won(l *Lock, start time.Time) {
	s.mu.Lock()
	s.lock, s.start = l, start
	early := s.early
	s.early = nil
	s.mu.Unlock()
	for _, res := range early {
		l.heldAtNamed(res, start)
	}
}

// late receives an answer that came after its round was decided, on the
// node's worker: it must not block.
func (s *stragglers) late(res NodeResult) {
	s.mu.Lock()
	if s.lock != nil {
		l, start := s.lock, s.start
		s.mu.Unlock()
		l.heldAtNamed(res, start)
		return
	}
	if !s.abandoned {
		s.early = append(s.early, res) // the attempt may still be abandoned
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if mayHold(res) {
		for _, n := range s.r.nodes {
			if n.Name() == res.Node {
				ctx, cancel := context.WithTimeout(context.Background(), s.r.releaseBound(s.ttl))
				s.r.releaseAsync(ctx, n, s.keys, s.value, 0, s.ledger, func(bool, error) { cancel() })
			}
		}
	}
}

// abandon marks the attempt abandoned and returns the nodes that may hold
// its value, to be released, or nil if none may. Nodes that had not
// answered when the round was decided are left to late, which releases
// them when (and if) their answer says they may hold it.
func (s *stragglers) abandon(rs []NodeResult) []bool {
	s.mu.Lock()
	s.abandoned = true
	early := s.early
	s.mu.Unlock()
	targets := make([]bool, len(rs))
	some := false
	for i, res := range rs {
		targets[i] = mayHold(res)
		for _, e := range early {
			if e.Node == res.Node && mayHold(e) {
				targets[i] = true
			}
		}
		some = some || targets[i]
	}
	if !some {
		return nil
	}
	return targets
}

// mayHold reports whether a node that gave res to an acquisition may hold
// the acquirer's value: it granted it, or it may have before failing. Not
// a node that had not answered, that said another value or the mark holds,
// or whose call was never sent.
func mayHold(res NodeResult) bool {
	switch res.Vote {
	case "", voteHeld, voteAlreadyRun, votePaused:
		return false
	}
	return !errors.Is(res.Err, engine.ErrNotSent)
}

// decider returns how the round's vote is decided: at a quorum, as
// usual; but a round taking a ticket waits for every node's answer (or the
// node timeout), so that each node's server is read before its commit
// counts (see voters).
func (rd *round) decider() decider {
	for _, at := range rd.ticketAt {
		if at != 0 {
			return allAnswered
		}
	}
	return acquireDecider(len(rd.r.nodes), rd.r.quorum)
}

// voters returns, for an acquisition taking a ticket, the nodes whose
// commits count: those that voted yes, whose servers were read and vouch
// that they were up when the ticket was placed; not a node that may have
// forgotten that the ticket was taken (restarted or changed since, or
// unread). It returns nil (every node) for an acquisition without a
// ticket.
func (rd *round) voters(j int) []bool {
	if rd.ticketAt[j] == 0 {
		return nil
	}
	out := make([]bool, len(rd.votes[j]))
	for i, v := range rd.votes[j] {
		out[i] = v.Vote == voteYes
	}
	return out
}
