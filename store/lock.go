package store

import (
	"context"
	"fmt"
	"strconv"
	"time"
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
	want := "0"
	if req.WantUptime {
		want = "1"
	}
	res, err := acquireScript.Run(ctx, n.client, []string{req.Keys.Lock, req.Keys.State},
		req.Value, millis(req.TTL), req.Occurrence, want).Slice()
	if err != nil {
		return AcquireReply{}, n.fail("acquire", req.Keys.Lock, err)
	}
	rep, err := parseAcquire(res)
	if err != nil {
		return AcquireReply{}, n.fail("acquire", req.Keys.Lock, err)
	}
	return rep, nil
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
	ok, err := commitScript.Run(ctx, n.client, []string{k.Lock, k.State},
		value, fence, occurrence, millis(stateTTL)).Bool()
	if err != nil {
		return false, n.fail("commit", k.Lock, err)
	}
	return ok, nil
}

// Extend sets the lock's TTL to ttl while it holds value (compare and
// pexpire). It reports whether the lock held value.
func (n *Node) Extend(ctx context.Context, k LockKeys, value string, ttl time.Duration) (bool, error) {
	ok, err := extendScript.Run(ctx, n.client, []string{k.Lock}, value, millis(ttl)).Bool()
	if err != nil {
		return false, n.fail("extend", k.Lock, err)
	}
	return ok, nil
}

// Release deletes the lock while it holds value (compare and delete),
// raising the occurrence mark to occurrence first (0 leaves it). It reports
// whether the lock held value.
func (n *Node) Release(ctx context.Context, k LockKeys, value string, occurrence int64, stateTTL time.Duration) (bool, error) {
	ok, err := releaseScript.Run(ctx, n.client, []string{k.Lock, k.State},
		value, occurrence, millis(stateTTL)).Bool()
	if err != nil {
		return false, n.fail("release", k.Lock, err)
	}
	return ok, nil
}

// DeleteIfValue deletes the string key while it holds value, and reports
// whether it did. The leak scan fixes leaks with it, so that a key that
// changed since it was scanned is never touched.
func (n *Node) DeleteIfValue(ctx context.Context, key, value string) (bool, error) {
	ok, err := releaseScript.Run(ctx, n.client, []string{key, key}, value, 0, 1).Bool()
	if err != nil {
		return false, n.fail("delete", key, err)
	}
	return ok, nil
}

// millis returns d in whole milliseconds, at least 1.
func millis(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}
