package engine

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// AcquireStatus is a node's answer to an acquisition.
type AcquireStatus int

// The answers a node gives to Acquire.
const (
	// Acquired: the node set the lock to our value (or it already held it).
	Acquired AcquireStatus = iota + 1
	// Held: the lock holds another value.
	Held
	// AlreadyRun: the requested occurrence is at or below the node's mark.
	AlreadyRun
	// Paused: the lock is paused (Holder is the pause key's value) and an
	// occurrence was claimed.
	Paused
)

// String returns the status's name.
func (s AcquireStatus) String() string {
	switch s {
	case Acquired:
		return "acquired"
	case Held:
		return "held"
	case AlreadyRun:
		return "already_run"
	case Paused:
		return "paused"
	case FenceAhead:
		return "fence_ahead"
	case ParentLost:
		return "parent_lost"
	}
	return "AcquireStatus(" + strconv.Itoa(int(s)) + ")"
}

// AcquireRequest is one acquisition on one node.
type AcquireRequest struct {
	Keys  LockKeys      // the lock's keys
	Value string        // the encoded Value to store
	TTL   time.Duration // the lock's TTL, at least a millisecond
	// Occurrence, in unix ms, makes the node refuse when its mark is at or
	// above it; 0 means no occurrence.
	Occurrence int64
	// WantInfo asks the node for its run id and uptime, for the restart
	// check.
	WantInfo bool
	// FenceFloor, unless 0, commits the fence with the vote (a lock on one
	// node): once the lock is set, its fence counter is raised to the
	// larger of the counter + 1 and FenceFloor, the state then kept for
	// StateTTL (or at most a minute less, as it already was: a fence
	// counter forgotten starts over from the time floor), and the reply's
	// Fence is the raised counter.
	FenceFloor uint64
	StateTTL   time.Duration
	// Waiter, unless "", is the waiter making the attempt ("id|start":
	// an id of its own and when it began to wait, in unix ms; see
	// lua/acquire.lua): refused by a holder, it takes the lock's turn
	// (Keys.Turn) for TurnTTL, unless a waiter that came before it holds
	// it. Any other attempt without an occurrence is refused while the
	// turn is set (Held, its Holder "turn " and the waiter, when the lock
	// itself is free).
	Waiter  string
	TurnTTL time.Duration
}

// AcquireReply is a node's answer to an AcquireRequest.
type AcquireReply struct {
	Status AcquireStatus
	// Fence is the node's fence counter for the lock (0 when unset).
	Fence uint64
	// Holder is the value holding the lock when Status is Held, and
	// HolderTTL how long it had left on the node (its key's PTTL; a part's
	// parent key's, or the waiters' turn's), 0 when the node did not say.
	Holder    string
	HolderTTL time.Duration
	// Mark is the node's occurrence mark when Status is AlreadyRun.
	Mark int64
	// Info is the server's run id and uptime when asked for (WantInfo)
	// and readable; InfoErr says why it is not, when asked for.
	Info    *Info
	InfoErr error
}

// AcquireResult is a node's answer to one request of AcquireAll.
type AcquireResult struct {
	Reply AcquireReply
	Err   error // a *Error, whose cause is a server error reply or the client's error
}

// Acquire runs the acquire script: SET NX PX unless the occurrence was
// already run, returning the node's fence counter either way.
func (n *Node) Acquire(ctx context.Context, req AcquireRequest) (AcquireReply, error) {
	return wait(func(done func(AcquireReply, error)) { n.AcquireAsync(ctx, req, done) })
}

// AcquireAsync is Acquire, with the answer passed to done instead of
// returned. done is called exactly once, possibly before AcquireAsync
// returns, and otherwise from the node's worker goroutine: it must not
// block.
func (n *Node) AcquireAsync(ctx context.Context, req AcquireRequest, done func(AcquireReply, error)) {
	n.AcquireAllAsync(ctx, []AcquireRequest{req}, func(rs []AcquireResult) { done(rs[0].Reply, rs[0].Err) })
}

// AcquireAll is Acquire for many locks at once: the requests go to the
// node together (in one script call per up to 256 locks, all in one round
// trip), and the answers come back in the same order. A request the node
// fails (WRONGTYPE, say) fails alone.
func (n *Node) AcquireAll(ctx context.Context, reqs []AcquireRequest) []AcquireResult {
	ch := make(chan []AcquireResult, 1)
	n.AcquireAllAsync(ctx, reqs, func(rs []AcquireResult) { ch <- rs })
	return <-ch
}

// AcquireAllAsync is AcquireAll, with the answers passed to done (see
// AcquireAsync).
func (n *Node) AcquireAllAsync(ctx context.Context, reqs []AcquireRequest, done func([]AcquireResult)) {
	at := byShard(len(reqs), func(i int) string { return reqs[i].Keys.State })
	reqs = permute(reqs, at)
	out := make([]AcquireResult, len(reqs))
	var plain *plainAcquire
	if plainEligible(n, reqs) {
		plain = &plainAcquire{req: reqs[0]}
	}
	n.submitPlain(ctx, acquireScript, len(reqs), plain, func(lo, hi int) ([]string, []any) {
		keys := make([]string, 0, 4*(hi-lo))
		args := make([]any, 1, 1+8*(hi-lo))
		args[0] = "0"
		for _, r := range reqs[lo:hi] {
			keys = append(keys, r.Keys.Lock, r.Keys.State, r.Keys.Pause, r.Keys.Turn)
			args = append(args, r.Keys.Name, r.Value, millis(r.TTL), r.Occurrence, r.FenceFloor, millis(r.StateTTL), r.Waiter, millis(r.TurnTTL))
			if r.WantInfo {
				args[0] = "1"
			}
		}
		return keys, args
	}, func(lo, hi int, res []any, err error) {
		var info *Info
		var infoErr error
		if err == nil {
			info, infoErr, err = parseServer(res[0], res[1])
		}
		for i := lo; i < hi; i++ {
			var rep AcquireReply
			ierr := err
			if ierr == nil {
				rep, ierr = parseAcquire(res[2+4*(i-lo):][:4])
			}
			if ierr != nil {
				out[i].Err = n.fail("acquire", reqs[i].Keys.Lock, ierr)
				continue
			}
			if reqs[i].WantInfo {
				rep.Info, rep.InfoErr = info, infoErr
			}
			out[i].Reply = rep
		}
	}, func() { done(unpermute(out, at)) })
}

// CommitRequest is the second phase of one acquisition on one node.
type CommitRequest struct {
	Keys  LockKeys // the lock's keys
	Value string   // the value the lock must still hold
	// Fence and Occurrence are raised to (0 leaves either unchanged).
	Fence      uint64
	Occurrence int64
	// Ledger is the acquisition's record, written with the commit (its
	// Old is unused).
	Ledger LedgerWrite
	// Ticket, unless "", is a trigger's request the acquisition must take
	// (see LockKeys.Trigger): the commit fails where another took it.
	Ticket string
}

// CommitResult is a node's answer to one request of CommitAll.
type CommitResult struct {
	Held bool  // the lock held the value, and the state was raised
	Err  error // a *Error
}

// Commit runs the commit script, the second phase of an acquisition: while
// the lock still holds req.Value (and, with req.Ticket, the acquisition
// has the ticket), it raises the fence counter and the occurrence mark
// (0 leaves either unchanged; neither is ever lowered), when it raised
// either gives the state a TTL of stateTTL, and writes req.Ledger's New to
// the lock's ledger. It reports whether the lock held the value (and the
// ticket was had).
func (n *Node) Commit(ctx context.Context, req CommitRequest, stateTTL time.Duration) (bool, error) {
	return wait(func(done func(bool, error)) {
		n.CommitAllAsync(ctx, []CommitRequest{req}, stateTTL, func(rs []CommitResult) { done(rs[0].Held, rs[0].Err) })
	})
}

// CommitAllAsync is Commit for many locks at once, as AcquireAll is for
// Acquire, with the answers passed to done (see AcquireAsync) in the order
// of reqs.
func (n *Node) CommitAllAsync(ctx context.Context, reqs []CommitRequest, stateTTL time.Duration, done func([]CommitResult)) {
	at := byShard(len(reqs), func(i int) string { return reqs[i].Keys.State })
	reqs = permute(reqs, at)
	out := make([]CommitResult, len(reqs))
	n.submitAll(ctx, commitScript, len(reqs), func(lo, hi int) ([]string, []any) {
		keys := make([]string, 0, 4*(hi-lo))
		args := make([]any, 1, 1+9*(hi-lo))
		args[0] = millis(stateTTL)
		for _, r := range reqs[lo:hi] {
			w := r.Ledger
			keys = append(keys, r.Keys.Lock, r.Keys.State, r.Keys.Ledger, r.Keys.Trigger)
			args = append(args, r.Keys.Name, r.Value, r.Fence, r.Occurrence, w.New, w.Score, w.Cap, millis(w.Window), r.Ticket)
		}
		return keys, args
	}, n.heldAnswers(out, "commit", func(i int) string { return reqs[i].Keys.Lock }), func() { done(unpermute(out, at)) })
}

// heldAnswers returns submitAll's decode for a script that answers
// {result, detail} per item (commit, free): each item's Held, or its
// error, naming op and the item's key (key(i)), in out.
func (n *Node) heldAnswers(out []CommitResult, op string, key func(i int) string) func(lo, hi int, res []any, err error) {
	return func(lo, hi int, res []any, err error) {
		for i := lo; i < hi; i++ {
			ierr := err
			if ierr == nil {
				out[i].Held, ierr = parseBool(res[2*(i-lo):][:2])
			}
			if ierr != nil {
				out[i].Err = n.fail(op, key(i), ierr)
			}
		}
	}
}

// byShard returns the order that sorts count locks by their shard's state
// key (key(i)), stably, or nil when they are sorted already: the locks of
// one shard then share a script call, read and written together.
func byShard(count int, key func(i int) string) []int {
	sorted := true
	for i := 1; i < count && sorted; i++ {
		sorted = key(i-1) <= key(i)
	}
	if sorted {
		return nil
	}
	at := make([]int, count)
	for i := range at {
		at[i] = i
	}
	slices.SortStableFunc(at, func(a, b int) int { return strings.Compare(key(a), key(b)) })
	return at
}

// permute returns xs in the order at (xs itself for nil).
func permute[T any](xs []T, at []int) []T {
	if at == nil {
		return xs
	}
	out := make([]T, len(xs))
	for i, j := range at {
		out[i] = xs[j]
	}
	return out
}

// unpermute undoes permute: ys in the order at, back in the original one.
func unpermute[T any](ys []T, at []int) []T {
	if at == nil {
		return ys
	}
	out := make([]T, len(ys))
	for i, j := range at {
		out[j] = ys[i]
	}
	return out
}

// Extend sets the lock's TTL to ttl while it holds value (compare and
// pexpire). It reports whether the lock held value.
func (n *Node) Extend(ctx context.Context, k LockKeys, value string, ttl time.Duration) (bool, error) {
	return wait(func(done func(bool, error)) { n.ExtendAsync(ctx, k, value, ttl, done) })
}

// ExtendAsync is Extend, with the answer passed to done (see AcquireAsync).
func (n *Node) ExtendAsync(ctx context.Context, k LockKeys, value string, ttl time.Duration, done func(bool, error)) {
	n.boolCall(ctx, "extend", false, extendScript, []string{k.Lock}, []any{"", value, millis(ttl)}, done)
}

// HealAsync is ExtendAsync that also sets value, with ttl, where the lock
// is free: call it only for a lock whose extension a quorum of the nodes
// has just granted, on a node that answered that it did not hold value
// (restarted empty, or its copy expired while it was paused or cut off),
// so that the lock is held on every node again and a lock held by a bare
// quorum does not stay one failure away from being lost. done gets
// whether the lock holds value now.
func (n *Node) HealAsync(ctx context.Context, k LockKeys, value string, ttl time.Duration, done func(bool, error)) {
	n.boolCall(ctx, "heal", false, extendScript, []string{k.Lock}, []any{"heal", value, millis(ttl)}, done)
}

// Release deletes the lock while it holds value (compare and delete),
// raising the occurrence mark to occurrence first (0 leaves it), and writes
// w to the lock's ledger whether or not the lock held value. It reports
// whether the lock held value.
func (n *Node) Release(ctx context.Context, k LockKeys, value string, occurrence int64, stateTTL time.Duration, w LedgerWrite) (bool, error) {
	return wait(func(done func(bool, error)) { n.ReleaseAsync(ctx, k, value, occurrence, stateTTL, w, done) })
}

// ReleaseAsync is Release, with the answer passed to done (see
// AcquireAsync); done may be nil. Releases, unlike the other calls, are
// sent even while the node backs off after a failure: it may hold a key
// that a call timed out on, which would block others until it expires.
// Calls to one node are sent in the order they were made (but for
// extensions, which go ahead: a compare-and-pexpire changes no value), so
// a release made after an acquisition that timed out still removes what
// that acquisition may have set.
func (n *Node) ReleaseAsync(ctx context.Context, k LockKeys, value string, occurrence int64, stateTTL time.Duration, w LedgerWrite, done func(bool, error)) {
	n.boolCall(ctx, "release", true, releaseScript, []string{k.Lock, k.State, k.Ledger},
		[]any{millis(stateTTL), k.Name, value, occurrence, w.Old, w.New, w.Score, w.Cap, millis(w.Window)}, done)
}

// DeleteIfValue deletes the string key while it holds value, and reports
// whether it did. The leak scan fixes leaks with it, so that a key that
// changed since it was scanned is never touched.
func (n *Node) DeleteIfValue(ctx context.Context, key, value string) (bool, error) {
	return wait(func(done func(bool, error)) { n.DeleteIfValueAsync(ctx, key, value, done) })
}

// DeleteIfValueAsync is DeleteIfValue, with the answer passed to done (see
// AcquireAsync); done may be nil. Like a release, it is sent even while
// the node backs off.
func (n *Node) DeleteIfValueAsync(ctx context.Context, key, value string, done func(bool, error)) {
	n.boolCall(ctx, "delete", true, releaseScript, []string{key, key, key},
		[]any{millis(time.Millisecond), "", value, 0, "", "", 0, 0, 0}, done)
}

// boolCall queues a compare-and-act script on one lock, whose answer is 1
// or 0; a cleanup call is sent even while the node backs off.
func (n *Node) boolCall(ctx context.Context, op string, cleanup bool, s *script, keys []string, args []any, done func(bool, error)) {
	n.batch.submit(mayBlock(ctx), &call{ctx: ctx, script: s, keys: keys, args: args, items: 1, cleanup: cleanup, done: func(cmd *redis.Cmd) {
		if done == nil {
			return
		}
		res, err := s.answer(cmd, 1)
		var ok bool
		if err == nil {
			ok, err = parseBool(res)
		}
		if err != nil {
			done(false, n.fail(op, keys[0], err))
			return
		}
		done(ok, nil)
	}})
}

// wait runs an asynchronous call and waits for its answer.
func wait[T any](start func(done func(T, error))) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	start(func(v T, err error) { ch <- result{v, err} })
	r := <-ch
	return r.v, r.err
}

// millis returns d in whole milliseconds, at least 1.
func millis(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}
