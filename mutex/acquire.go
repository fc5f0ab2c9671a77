package mutex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
)

// An acquisition, from the call to the decision: TryLock prepares the
// request, a round collects every node's vote (vote, acquireVote; the
// calls themselves are fanout.go's), commits the fence on a quorum
// (commit, commitAll) and decides (finish), keeping track of the nodes
// that answered too late (stragglers). The release is lock.go's.

// TryLock makes one attempt to acquire the lock called name for ttl. It
// returns the held Lock, or an error: a *QuorumError matching ErrHeld,
// ErrAlreadyRun or ErrNoQuorum (and ErrNotAcquired), or an error matching
// ErrInvalidOption for a bad name or TTL. Under the KeepAlive context of a
// lock of the same name from this Redlock, it reenters that lock (see Lock).
func (r *Redlock) TryLock(ctx context.Context, name string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	keys, lc, err := r.prepare(name, ttl, opts)
	if err != nil {
		return nil, err
	}
	if l, ok, err := r.reenter(ctx, name, lc); ok {
		return l, err
	}
	if lc.permits > 0 {
		return r.tryPermits(ctx, name, ttl, lc)
	}
	return r.tryLock(ctx, keys, ttl, lc)
}

// tryLock is TryLock for a request prepared.
func (r *Redlock) tryLock(ctx context.Context, keys engine.LockKeys, ttl time.Duration, lc lockConfig) (*Lock, error) {
	name := keys.Name
	lc.ticket = lockwire.Ticket(ctx, name) // a trigger's request, from our own wiring
	if err := r.checkOwner(name, lc.owner); err != nil {
		return nil, err
	}
	reqs := []attemptReq{{keys: keys, ttl: ttl, lc: lc, token: engine.NewToken()}}
	var res Result
	if rights, parents := r.partsOf(ctx, reqs); parents != nil {
		res = r.claimAll(ctx, reqs, rights, parents)[0]
	} else {
		res = r.attemptAll(ctx, reqs)[0]
	}
	return res.Lock, res.Err
}

// prepare validates a lock request and applies its options.
func (r *Redlock) prepare(name string, ttl time.Duration, opts []LockOption) (engine.LockKeys, lockConfig, error) {
	if err := r.check(name, ttl, 0, 0); err != nil {
		return engine.LockKeys{}, lockConfig{}, err
	}
	keys, _ := r.keys.Lock(name) // checked above
	var lc lockConfig
	for _, o := range opts {
		if o == nil {
			return engine.LockKeys{}, lockConfig{}, fmt.Errorf("%w: lock %q: nil LockOption", ErrInvalidOption, name)
		}
		o(&lc)
	}
	if err := r.checkOccurrence(name, lc.occurrence); err != nil {
		return engine.LockKeys{}, lockConfig{}, err
	}
	if err := checkPermits(name, lc); err != nil {
		return engine.LockKeys{}, lockConfig{}, err
	}
	return keys, lc, nil
}

// checkOwner refuses a lock to an owner the owner check refuses (see
// WithOwnerCheck), at every attempt: undecided (ErrNoQuorum), as no node
// was asked, and worth trying again once the check passes.
func (r *Redlock) checkOwner(name, owner string) error {
	if err := r.ownerErr(owner, false); err != nil {
		return &QuorumError{Op: "acquire", Name: name, Quorum: r.quorum, Nodes: r.unanswered(), Reason: ErrNoQuorum,
			Detail: err.Error() + "; no node was asked"}
	}
	return nil
}

// checkOccurrence refuses to claim an occurrence (unix ms; 0 for none)
// outside the span its mark protects: older than MaxReach, since its mark
// may have expired, or further ahead than the max TTL and the skew margin,
// since a node restarted before the occurrence could not vouch for it.
func (r *Redlock) checkOccurrence(name string, occurrence int64) error {
	if occurrence == 0 {
		return nil
	}
	at := occurrenceTime(occurrence)
	switch age := time.Since(at); {
	case age > r.maxReach():
		return fmt.Errorf("%w: lock %q: occurrence %s is %v old, more than the %v the state TTL (%v, WithStateTTL) keeps its mark for: it cannot be claimed safely",
			ErrInvalidOption, name, at.UTC().Format(time.RFC3339), age.Round(time.Second), r.maxReach(), r.cfg.stateTTL)
	case -age > r.cfg.maxTTL+clockSkew:
		return fmt.Errorf("%w: lock %q: occurrence %s is %v ahead, more than the max TTL (%v, WithMaxTTL) and %v: it cannot be claimed safely",
			ErrInvalidOption, name, at.UTC().Format(time.RFC3339), (-age).Round(time.Millisecond), r.cfg.maxTTL, clockSkew)
	}
	return nil
}

// maxReach returns how long after an occurrence it can still be claimed:
// the state TTL less the max TTL (the longest a claim may be made ahead of
// its occurrence) and a clock skew margin of 2 s, so that the occurrence's
// mark is still kept on the nodes.
func (r *Redlock) maxReach() time.Duration {
	return r.cfg.stateTTL - r.cfg.maxTTL - clockSkew
}

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
	if rd.dropLate != nil && !slices.ContainsFunc(rd.votes, func(rs []NodeResult) bool { return count(rs, voteYes) >= r.quorum }) {
		rd.dropLate() // nothing can win: the calls not sent yet need not go, nor delay the releases
	}
	rd.commit(ctx)
	out := rd.finish(ctx)
	if rd.dropLate != nil && !slices.ContainsFunc(out, func(res Result) bool { return res.Err == nil }) {
		rd.dropLate() // nothing won: the calls not yet sent need not go
	}
	return out
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
	// dropLate, for a round whose calls outlive its decision (see vote),
	// drops those not sent yet.
	dropLate context.CancelFunc
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
	// The calls of a round of locks that claim no occurrence go to every
	// node, not only until a quorum decided: a call still queued behind a
	// busy node's pipeline then is sent all the same (within the node
	// timeout, unless nothing was won), so that a lock won holds on every
	// node that answers in time rather than on a bare quorum, one failure
	// from lost; and a shard's lease and its replica's anchor, won together,
	// hold on the same nodes. Claims of occurrences (the scheduler's ticks)
	// drop such calls at the decision: under load, they are the work that
	// is not needed.
	var lctx context.Context // the calls', if not the decision's
	answered := func() {}
	if len(r.nodes) > 1 && !slices.ContainsFunc(rd.areqs, func(q engine.AcquireRequest) bool { return q.Occurrence != 0 }) {
		lctx, rd.dropLate = context.WithTimeout(context.WithoutCancel(ctx), r.nodeTimeoutFor(len(rd.reqs)))
		answered = afterAll(len(r.nodes), rd.dropLate)
	}
	rd.votes = r.fanoutAll(ctx, len(rd.reqs), func(nctx context.Context, i int, n *engine.Node, deliver func([]NodeResult)) {
		if lctx != nil {
			nctx = lctx
		}
		// Counted for Flush until answered: a late answer of an abandoned
		// attempt queues a release (stragglers.late) before it is done.
		r.pending.add(1)
		n.AcquireAllAsync(nctx, rd.areqs, func(rs []engine.AcquireResult) {
			defer r.pending.done()
			defer answered()
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
			rd.failed[j] = refusal(q.keys.Name, rd.votes[j], r.quorum)
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

// refusal returns the error of an acquisition of lock name whose votes
// reached no quorum of grants: its reason and, when held, its holder, read
// from the holder's value and the nodes' answers.
func refusal(name string, votes []NodeResult, quorum int) *QuorumError {
	qerr := &QuorumError{Op: "acquire", Name: name, Quorum: quorum, Nodes: votes}
	qerr.Holder, qerr.Reason = acquireReason(votes, quorum)
	if qerr.Reason != ErrHeld {
		return qerr
	}
	if v, err := engine.ParseValue(qerr.Holder); err == nil {
		qerr.HolderOwner = v.Owner
		if v.Occurrence != 0 {
			qerr.HolderOccurrence = time.UnixMilli(v.Occurrence)
		}
	}
	var until []time.Time
	for _, res := range votes {
		if res.Vote == voteHeld && !res.unproven && res.Holder == qerr.Holder && !res.HolderUntil.IsZero() {
			until = append(until, res.HolderUntil)
		}
	}
	if len(until) >= quorum {
		slices.SortFunc(until, func(a, b time.Time) int { return b.Compare(a) })
		qerr.HolderUntil = until[quorum-1]
	}
	return qerr
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
//
// A late grant of a lock won and released already is released again: the
// release may have reached the node first (a call sent again in a second
// pipeline, or on a new connection, runs after the calls of the first).
func (s *stragglers) late(res NodeResult) {
	s.mu.Lock()
	if s.lock != nil {
		l, start := s.lock, s.start
		s.mu.Unlock()
		l.mu.Lock()
		released := l.released
		l.mu.Unlock()
		if !released {
			l.heldAtNamed(res, start)
			return
		}
		s.releaseOn(res, engine.LedgerWrite{}) // its record was written by its release
		return
	}
	if !s.abandoned {
		s.early = append(s.early, res) // the attempt may still be abandoned
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.releaseOn(res, s.ledger)
}

// releaseOn releases the attempt's value on the node that gave res, if
// it may hold it there, with ledger write w.
func (s *stragglers) releaseOn(res NodeResult, w engine.LedgerWrite) {
	if !mayHold(res) {
		return
	}
	for _, n := range s.r.nodes {
		if n.Name() == res.Node {
			ctx, cancel := context.WithTimeout(context.Background(), s.r.releaseBound(s.ttl))
			s.r.releaseAsync(ctx, n, s.keys, s.value, 0, w, func(bool, error) { cancel() })
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
		held := NodeResult{Vote: voteHeld, Holder: rep.Holder, fence: rep.Fence, WarmingUp: recent,
			unproven: recent && !r.survived(rep.Holder, start)}
		if rep.HolderTTL > 0 {
			held.HolderUntil = now.Add(rep.HolderTTL)
		}
		return held
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
