// Package shard spreads the claiming of ticks over the replicas, so that
// they do not all contend for every tick: job names hash to Count shards,
// one replica at a time holds a shard's lease (a lock of its own on the
// nodes, kept alive), and only the holder of a job's shard asks the nodes
// for the job's ticks. The other replicas refuse them at once, without
// I/O, as held by another replica.
//
// The holder claims a shard's due ticks in bulk: each as a part (see
// mutex's part.go), with no lock key of its own, claimed by the shard's
// lease in one script call per node and shard, and held under the
// replica's anchor, a lock of its own kept alive while the replica lives,
// so that a run outlives a hand-over of its shard and the new holder sees
// it running. Safety does not rest on the shards: every tick is still
// claimed with the job's occurrence mark and fence on a quorum, so two
// replicas that both believe they hold a shard (a lease lost unnoticed,
// views of the fleet that differ for a moment) still run each tick at most
// once. The shards decide who asks, which removes the split votes of every
// replica asking at once and divides the nodes' work per tick by the
// replicas, and make a tick cost a few arguments of a shard's claim rather
// than a lock's acquisition, commit and release.
//
// A job that not every live replica runs with the same ticks (a deploy in
// progress that adds, removes or reschedules it) is not gated: every
// replica that runs it asks for its ticks, as without shards, so that a
// holder that lacks the job cannot keep it from running.
package shard

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockcheck"
	"github.com/redcron/redcron/internal/parts"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// Count is the number of shards (engine.Shards): every replica of a fleet
// hashes a job to the same one.
const Count = engine.Shards

// Of returns the shard of a job (engine.ShardOf).
func Of(job string) int { return engine.ShardOf(job) }

// The gate's answers for a shard, made once: a refusal costs no
// allocation.
var (
	errNotYet  = shardErrors(mutex.ErrNoQuorum, "its lease is not won here yet")
	errAnother = shardErrors(mutex.ErrHeld, "another replica asks for its ticks")
)

func shardErrors(sentinel error, why string) [Count]error {
	var out [Count]error
	for k := range out {
		out[k] = fmt.Errorf("%w: shard %d: %s", sentinel, k, why)
	}
	return out
}

// Gate is a scheduler.Locker that passes to its inner Locker the requests
// of the jobs whose shard this replica holds, and answers the others
// itself: ErrHeld for a shard another replica is to hold, ErrNoQuorum (to
// be asked again within the tick's grace) for a shard this replica is to
// hold but has not won yet. Until its Keeper first reads the fleet, it
// passes every request; it always passes manual runs and the jobs not
// every live replica runs.
type Gate struct {
	inner scheduler.Locker
	on    atomic.Bool
	held  [Count]atomic.Bool // this replica holds the shard's lease
	want  [Count]atomic.Bool // this replica is the shard's target
	// shared, if not nil, are the jobs every live replica runs; nil: all
	// of them (every live replica publishes the same job table).
	shared atomic.Pointer[map[string]bool]
	// lease is each held shard's lease, and anchor the replica's, once
	// won: a held shard's ticks are claimed as parts with them.
	lease  [Count]atomic.Pointer[mutex.Lock]
	anchor atomic.Pointer[mutex.Lock]
	// partOf is parts' Of for this gate (made once).
	partOf parts.Of
	flow   flow
	// instance is the id of the scheduler made over the gate (told by its
	// New: internal/lockcheck), for Instance.
	instance atomic.Value
}

// Instance returns the instance id of the scheduler made over the gate,
// "" before one is.
func (g *Gate) Instance() string {
	id, _ := g.instance.Load().(string)
	return id
}

// NewGate returns a Gate over inner. It passes every request until a
// Keeper turns it on.
func NewGate(inner scheduler.Locker) *Gate {
	g := &Gate{inner: inner}
	g.flow.limit = maxLimit
	g.partOf = func(name string) (any, any) {
		k := Of(name)
		lease, anchor := g.lease[k].Load(), g.anchor.Load()
		if !g.held[k].Load() || lease == nil || anchor == nil {
			return nil, nil
		}
		return lease, anchor
	}
	return g
}

// parted returns ctx carrying the gate's rights and parent for parts.
func (g *Gate) parted(ctx context.Context) context.Context { return parts.With(ctx, g.partOf) }

// verdict returns nil for a request to pass to the inner Locker, or the
// error that answers it; held reports a tick of a shard held here, which
// goes through the shard's flow of claims (flow.go).
func (g *Gate) verdict(req scheduler.LockRequest) (held bool, err error) {
	if !g.on.Load() || req.Tick.IsZero() {
		return false, nil
	}
	if shared := g.shared.Load(); shared != nil && !(*shared)[req.Job] {
		return false, nil
	}
	k := Of(req.Job)
	switch {
	case g.held[k].Load():
		return true, nil
	case g.want[k].Load():
		return false, errNotYet[k]
	}
	return false, errAnother[k]
}

// Acquire asks the inner Locker for the lease of a job whose shard this
// replica holds, and refuses the others. A tick of a shard whose claim is
// in flight here waits for it, and goes with the next.
func (g *Gate) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	held, err := g.verdict(req)
	switch {
	case err != nil:
		return nil, err
	case held:
		return g.acquireGated(ctx, Of(req.Job), req)
	}
	return g.inner.Acquire(g.parted(ctx), req)
}

// AcquireAll asks the inner Locker, in one call, for the leases of the
// jobs whose shard this replica holds, and refuses the others: those of a
// shard whose claim is in flight here, and those beyond the flow's limit
// of a shard's ticks in one claim, with errBusy (asked again by the
// scheduler, through Acquire).
func (g *Gate) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	if len(reqs) == 0 { // the scheduler's New, asking for the inner Locker's check
		g.instance.Store(lockcheck.Instance[scheduler.LockRequest](ctx))
		return g.inner.AcquireAll(ctx, nil)
	}
	out := make([]scheduler.LockResult, len(reqs))
	var pass []scheduler.LockRequest
	var at, shards []int
	var taken [Count]int
	f := &g.flow
	f.mu.Lock()
	for i, req := range reqs {
		held, err := g.verdict(req)
		if err != nil {
			out[i].Err = err
			continue
		}
		if k := Of(req.Job); held {
			if taken[k] == 0 && f.take(k) {
				shards = append(shards, k)
			} else if taken[k] == 0 || taken[k] >= f.limit {
				out[i].Err = errBusy[k]
				continue
			}
			taken[k]++
		}
		pass, at = append(pass, req), append(at, i)
	}
	f.mu.Unlock()
	if len(pass) == 0 {
		return out
	}
	start := time.Now()
	results := g.acquireAll(ctx, pass)
	if len(shards) > 0 { // a claim of held shards' ticks
		g.finish(shards, time.Since(start))
	}
	for j, i := range at {
		out[i] = results[j]
	}
	return out
}

// acquireAll asks the inner Locker for reqs in one call, with the gate's
// rights and parent for parts, and returns one result per request: those
// missing are errors, the leases of any beyond are released.
func (g *Gate) acquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	results := g.inner.AcquireAll(g.parted(ctx), reqs)
	for _, r := range results[min(len(reqs), len(results)):] {
		if r.Lease != nil {
			_ = r.Lease.Release(ctx, scheduler.Outcome{})
		}
	}
	out := make([]scheduler.LockResult, len(reqs))
	n := copy(out, results)
	for j := n; j < len(out); j++ {
		out[j].Err = fmt.Errorf("%w: the locker returned %d results for %d requests", mutex.ErrNoQuorum, len(results), len(reqs))
	}
	return out
}
