package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/parts"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// The flow of claims: a replica keeps at most one claim of each shard it
// holds in flight, so that load shows as latency rather than as a queue
// that grows on the nodes until every answer comes too late. A tick asked
// for while its shard's claim is out is answered at once with errBusy
// (ErrNoQuorum: the scheduler asks again, through Acquire), and Acquire
// waits for the claim in flight, then goes with the others that waited,
// in one claim, the newest ticks first. A newer tick of a job replaces its
// older one in the queue. A claim takes at most limit of a shard's ticks; limit shrinks
// while claims take longer than claimTarget and grows again while they
// take less than half of it, so that under overload a shard's ticks are
// claimed in short claims, each on time, and those not reached before
// their job's next tick are given up for it (and reported by the
// scheduler) rather than all claimed too late to run.
const (
	claimTarget = 250 * time.Millisecond
	minLimit    = 16
	maxLimit    = 256 // engine's calls carry up to 256 parts
)

// The flow's answers, made once: under overload they come by the
// thousand. Each is ErrNoQuorum (the scheduler asks again) and
// parts.ErrBehind (a tick that ends with one is skipped as "overload").
var (
	// errBusy answers a tick whose shard's claim is in flight here.
	errBusy = behindErrors("its claim is in flight here; asked again behind it")
	// errReplaced answers a tick waiting behind its shard's claim in
	// flight when a newer tick of its job is asked for.
	errReplaced = behindErrors("a newer tick of the job was asked for behind the shard's claim in flight")
	// errWaited answers, with its context's cause, a tick whose context
	// ended while it waited behind its shard's claim in flight.
	errWaited = behindErrors("waited behind the shard's claim in flight")
)

// behindError is one of the flow's answers for a shard.
type behindError struct{ text string }

func (e behindError) Error() string   { return e.text }
func (e behindError) Unwrap() []error { return []error{mutex.ErrNoQuorum, parts.ErrBehind} }

func behindErrors(why string) [Count]error {
	var out [Count]error
	for k := range out {
		out[k] = behindError{fmt.Sprintf("%s (%s): shard %d: %s", mutex.ErrNoQuorum, parts.ErrBehind, k, why)}
	}
	return out
}

// waitedError is errWaited of a shard with its context's cause.
type waitedError struct{ shard, cause error }

func (e waitedError) Error() string   { return e.shard.Error() + ": " + e.cause.Error() }
func (e waitedError) Unwrap() []error { return []error{e.shard, e.cause} }

// flow is a gate's claims in flight and waiting, by shard.
type flow struct {
	mu    sync.Mutex
	busy  [Count]bool
	queue [Count][]*waiter
	// last is, by shard, each job's newest waiter in queue (which may also
	// hold older ones, answered as replaced: a claim passes them over).
	last  [Count]map[string]*waiter
	limit int
}

// waiter is an Acquire waiting for its shard's claim in flight.
type waiter struct {
	ctx   context.Context
	req   scheduler.LockRequest
	res   scheduler.LockResult
	state atomic.Int32 // waiting, inClaim, answered or gone
	done  chan struct{}
}

const (
	waiting int32 = iota
	inClaim       // sent in a claim of waiters
	answered
	gone // its Acquire returned: a lease won for it is released
)

// answer gives w its result, or releases the lease won for it once its
// Acquire is gone.
func (w *waiter) answer(res scheduler.LockResult) {
	w.res = res
	if w.state.CompareAndSwap(waiting, answered) || w.state.CompareAndSwap(inClaim, answered) {
		close(w.done)
		return
	}
	if res.Lease != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 10*time.Second)
		defer cancel()
		_ = res.Lease.Release(ctx, scheduler.Outcome{})
	}
}

// take marks a shard's claim in flight and reports whether it was free.
func (f *flow) take(k int) bool {
	if f.busy[k] {
		return false
	}
	f.busy[k] = true
	return true
}

// enqueue queues w behind its shard's claim in flight; a waiter of the
// same job for an older tick is answered as replaced (or w, if it is the
// older), and passed over by the claim that comes to it. A waiter gone
// (its Acquire returned) replaces nothing.
func (f *flow) enqueue(k int, w *waiter) {
	if f.last[k] == nil {
		f.last[k] = map[string]*waiter{}
	}
	if o := f.last[k][w.req.Job]; o != nil && o.state.Load() != gone {
		if !w.req.Tick.After(o.req.Tick) {
			w.answer(scheduler.LockResult{Err: errReplaced[k]})
			return
		}
		o.answer(scheduler.LockResult{Err: errReplaced[k]})
	}
	f.last[k][w.req.Job] = w
	f.queue[k] = append(f.queue[k], w)
}

// adapt adjusts the limit to a claim's latency, called once per claim
// (a replica holding a third of the shards ends about 20 claims a round):
// a slow claim takes a 32nd off, a fast one adds 1, so that a round of
// slow claims about halves the limit and a round of fast ones adds a few
// percent. Called with f.mu held.
func (f *flow) adapt(latency time.Duration) {
	switch {
	case latency > claimTarget:
		f.limit = max(minLimit, f.limit-max(1, f.limit/32))
	case latency < claimTarget/2:
		f.limit = min(maxLimit, f.limit+1)
	}
}

// finish ends the claims in flight of shards, which took latency, and
// starts the next claim of those with waiters.
func (g *Gate) finish(shards []int, latency time.Duration) {
	f := &g.flow
	var next []*waiter
	var again []int
	f.mu.Lock()
	f.adapt(latency)
	for _, k := range shards {
		// The newest first: under overload the oldest are those whose
		// job's next tick comes soonest, when the claim would be given up.
		q, n := f.queue[k], 0
		for len(q) > 0 && n < f.limit {
			w := q[len(q)-1]
			q[len(q)-1], q = nil, q[:len(q)-1]
			if f.last[k][w.req.Job] == w {
				delete(f.last[k], w.req.Job)
			}
			if w.state.Load() == waiting {
				next, n = append(next, w), n+1
			}
		}
		f.queue[k] = q
		if n == 0 { // the queue is empty: the shard is free
			f.busy[k] = false
			continue
		}
		again = append(again, k) // stays in flight
	}
	f.mu.Unlock()
	if len(again) > 0 {
		go g.claimWaiters(next, again)
	}
}

// claimWaiters sends the waiters' requests in one claim (bounded by the
// latest of their deadlines; none of them cancels it), answers them, and
// finishes the claim of shards.
func (g *Gate) claimWaiters(ws []*waiter, shards []int) {
	var deadline time.Time
	reqs := make([]scheduler.LockRequest, 0, len(ws))
	sent := make([]*waiter, 0, len(ws))
	for _, w := range ws {
		if _, err := g.verdict(w.req); err != nil { // the shard moved meanwhile
			w.answer(scheduler.LockResult{Err: err})
			continue
		}
		if !w.state.CompareAndSwap(waiting, inClaim) {
			continue
		}
		if d, ok := w.ctx.Deadline(); ok && d.After(deadline) {
			deadline = d
		}
		reqs, sent = append(reqs, w.req), append(sent, w)
	}
	start := time.Now()
	if len(reqs) > 0 {
		if deadline.IsZero() {
			deadline = start.Add(maxWait)
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		results := g.acquireAll(ctx, reqs)
		cancel()
		for j, w := range sent {
			w.answer(results[j])
		}
	}
	g.finish(shards, time.Since(start))
}

// maxWait bounds a claim of waiters none of which has a deadline.
const maxWait = 10 * time.Second

// acquireGated is Acquire for a tick of a held shard k: sent at once if
// the shard has no claim in flight here, else with the next one.
func (g *Gate) acquireGated(ctx context.Context, k int, req scheduler.LockRequest) (scheduler.Lease, error) {
	f := &g.flow
	f.mu.Lock()
	if f.take(k) {
		f.mu.Unlock()
		start := time.Now()
		lease, err := g.inner.Acquire(g.parted(ctx), req)
		g.finish([]int{k}, time.Since(start))
		return lease, err
	}
	w := &waiter{ctx: ctx, req: req, done: make(chan struct{})}
	f.enqueue(k, w)
	f.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		// Not sent yet, it leaves. Sent, it leaves if its tick is given up
		// (ctx cancelled); at its deadline it waits for its claim, bounded
		// by the latest deadline of the claim's waiters: a lease won then
		// and released would keep its tick's mark, and the tick, asked
		// again, would be refused as already run without having run.
		if w.state.CompareAndSwap(waiting, gone) ||
			!errors.Is(ctx.Err(), context.DeadlineExceeded) && w.state.CompareAndSwap(inClaim, gone) {
			return nil, waitedError{errWaited[k], context.Cause(ctx)}
		}
		<-w.done
	}
	return w.res.Lease, w.res.Err
}
