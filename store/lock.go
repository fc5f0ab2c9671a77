package store

import (
	"context"
	"fmt"
	"strconv"
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
	// WantUptime asks the node for its uptime, for the restart check.
	WantUptime bool
}

// AcquireReply is a node's answer to an AcquireRequest.
type AcquireReply struct {
	Status AcquireStatus
	// Fence is the node's fence counter for the lock (0 when unset).
	Fence uint64
	// Holder is the value holding the lock when Status is Held.
	Holder string
	// Mark is the node's occurrence mark when Status is AlreadyRun.
	Mark int64
	// Uptime is the server's uptime, or -1 when not asked for.
	Uptime time.Duration
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
	want := "0"
	if req.WantUptime {
		want = "1"
	}
	n.batch.submit(&call{ctx: ctx, script: acquireScript, keys: []string{req.Keys.Lock, req.Keys.State},
		args: []any{req.Value, millis(req.TTL), req.Occurrence, want},
		done: func(cmd *redis.Cmd) {
			res, err := cmd.Slice()
			if err != nil {
				done(AcquireReply{}, n.fail("acquire", req.Keys.Lock, err))
				return
			}
			rep, err := parseAcquire(res)
			if err != nil {
				done(AcquireReply{}, n.fail("acquire", req.Keys.Lock, err))
				return
			}
			done(rep, nil)
		}})
}

func parseAcquire(res []any) (AcquireReply, error) {
	if len(res) != 4 {
		return AcquireReply{}, fmt.Errorf("unexpected reply %v", res)
	}
	status, ok1 := res[0].(int64)
	fence, ok2 := res[1].(string)
	detail, ok3 := res[2].(string)
	uptime, ok4 := res[3].(int64)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return AcquireReply{}, fmt.Errorf("unexpected reply %v", res)
	}
	f, err := strconv.ParseUint(fence, 10, 64)
	if err != nil {
		return AcquireReply{}, fmt.Errorf("fence counter %q: %w", fence, err)
	}
	rep := AcquireReply{Fence: f, Uptime: -1}
	if uptime >= 0 {
		rep.Uptime = time.Duration(uptime) * time.Second
	}
	switch status {
	case 1:
		rep.Status = Acquired
	case 0:
		rep.Status, rep.Holder = Held, detail
	case 2:
		rep.Status = AlreadyRun
		if rep.Mark, err = strconv.ParseInt(detail, 10, 64); err != nil {
			return AcquireReply{}, fmt.Errorf("occurrence mark %q: %w", detail, err)
		}
	default:
		return AcquireReply{}, fmt.Errorf("unexpected status %d", status)
	}
	return rep, nil
}

// Commit runs the commit script, the second phase of an acquisition: while
// the lock still holds value, it raises the fence counter to fence and the
// occurrence mark to occurrence (0 leaves either unchanged) and gives the
// state a TTL of stateTTL. It reports whether the lock held value.
func (n *Node) Commit(ctx context.Context, k LockKeys, value string, fence uint64, occurrence int64, stateTTL time.Duration) (bool, error) {
	return wait(func(done func(bool, error)) { n.CommitAsync(ctx, k, value, fence, occurrence, stateTTL, done) })
}

// CommitAsync is Commit, with the answer passed to done (see AcquireAsync).
func (n *Node) CommitAsync(ctx context.Context, k LockKeys, value string, fence uint64, occurrence int64, stateTTL time.Duration, done func(bool, error)) {
	n.boolCall(ctx, "commit", false, commitScript, []string{k.Lock, k.State},
		[]any{value, fence, occurrence, millis(stateTTL)}, done)
}

// Extend sets the lock's TTL to ttl while it holds value (compare and
// pexpire). It reports whether the lock held value.
func (n *Node) Extend(ctx context.Context, k LockKeys, value string, ttl time.Duration) (bool, error) {
	return wait(func(done func(bool, error)) { n.ExtendAsync(ctx, k, value, ttl, done) })
}

// ExtendAsync is Extend, with the answer passed to done (see AcquireAsync).
func (n *Node) ExtendAsync(ctx context.Context, k LockKeys, value string, ttl time.Duration, done func(bool, error)) {
	n.boolCall(ctx, "extend", false, extendScript, []string{k.Lock}, []any{value, millis(ttl)}, done)
}

// Release deletes the lock while it holds value (compare and delete),
// raising the occurrence mark to occurrence first (0 leaves it). It reports
// whether the lock held value.
func (n *Node) Release(ctx context.Context, k LockKeys, value string, occurrence int64, stateTTL time.Duration) (bool, error) {
	return wait(func(done func(bool, error)) { n.ReleaseAsync(ctx, k, value, occurrence, stateTTL, done) })
}

// ReleaseAsync is Release, with the answer passed to done (see
// AcquireAsync); done may be nil. Releases, unlike the other calls, are
// sent even while the node backs off after a failure: it may hold a key
// that a call timed out on, which would block others until it expires.
// Calls to one node are sent in the order they were made, so a release
// made after an acquisition that timed out still removes what that
// acquisition may have set.
func (n *Node) ReleaseAsync(ctx context.Context, k LockKeys, value string, occurrence int64, stateTTL time.Duration, done func(bool, error)) {
	n.boolCall(ctx, "release", true, releaseScript, []string{k.Lock, k.State},
		[]any{value, occurrence, millis(stateTTL)}, done)
}

// DeleteIfValue deletes the string key while it holds value, and reports
// whether it did. The leak scan fixes leaks with it, so that a key that
// changed since it was scanned is never touched.
func (n *Node) DeleteIfValue(ctx context.Context, key, value string) (bool, error) {
	return wait(func(done func(bool, error)) {
		n.boolCall(ctx, "delete", true, releaseScript, []string{key, key}, []any{value, 0, 1}, done)
	})
}

// boolCall queues a compare-and-act script whose answer is 1 or 0; a
// cleanup call is sent even while the node backs off.
func (n *Node) boolCall(ctx context.Context, op string, cleanup bool, s script, keys []string, args []any, done func(bool, error)) {
	n.batch.submit(&call{ctx: ctx, script: s, keys: keys, args: args, cleanup: cleanup, done: func(cmd *redis.Cmd) {
		if done == nil {
			return
		}
		ok, err := cmd.Bool()
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
