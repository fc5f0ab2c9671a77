// Package schedulertest provides an in-memory scheduler.Locker for tests of
// schedulers and of the jobs they run, in the manner of net/http/httptest.
package schedulertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/lockcheck"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// Locker is an in-memory scheduler.Locker with the semantics of
// the Redis one, for a single process, but for one race: over Redis a
// replica asking for a tick gets ErrHeld only until the winner has
// committed it (right after its vote) and ErrAlreadyRun after, while here it
// gets ErrHeld for as long as the lease is held, as replicas whose clocks
// agree mostly do over Redis, their attempts racing the winner's. Time is
// read from time.Now, so it works under testing/synctest's fake clock. It
// is safe for concurrent use; create it with NewLocker.
//
// Per job it keeps one lock, a fencing counter and an occurrence mark:
//   - While the lock is held, Acquire fails with ErrOverlap if it is held
//     for a tick earlier than the requested one (a triggered run, whose
//     tick is zero, counts as earlier than any tick), and with ErrHeld
//     otherwise. When it is free, Acquire fails with ErrAlreadyRun if the
//     requested tick is not after the mark. A zero LockRequest.Tick
//     (Scheduler.Trigger) is not checked against the mark and does not
//     move it.
//   - A winning Acquire increments the fence and records the tick as the
//     mark at once; Release records it again (the mark never goes back).
//   - A lease expires after its TTL unless Keep was called: a kept lease
//     stays valid until it is released or lost (as if its keepalive always
//     succeeded). LoseLease simulates a loss.
type Locker struct {
	mu              sync.Mutex
	jobs            map[string]*jobState
	failNext        int
	acquireAllCalls int
	grants          []Grant
}

var _ scheduler.Locker = (*Locker)(nil)

type jobState struct {
	holder *lease // nil if free
	mark   time.Time
	fence  uint64
}

// Grant is the record of one successful lock attempt (by Acquire or
// AcquireAll).
type Grant struct {
	Job   string
	Tick  time.Time // zero for a triggered run
	Owner string
	Fence uint64
	TTL   time.Duration
	// Acquired is when the lease was granted.
	Acquired time.Time
	// Released is when the lease was released; zero while it is held, or
	// if it was lost first.
	Released time.Time
	// Lost reports that the lease was lost (LoseLease, or it expired
	// without Keep) before it was released.
	Lost bool
}

// NewLocker returns an empty Locker.
func NewLocker() *Locker {
	return &Locker{jobs: make(map[string]*jobState)}
}

// Check refuses an empty job name and a TTL that is not positive, as
// Acquire does; AcquireAll offers it to the scheduler's Add
// (internal/lockcheck).
func (l *Locker) Check(req scheduler.LockRequest) error {
	switch {
	case req.Job == "":
		return errors.New("schedulertest: empty job name")
	case req.TTL <= 0:
		return fmt.Errorf("schedulertest: job %q: TTL %v is not positive", req.Job, req.TTL)
	}
	return nil
}

// Acquire implements scheduler.Locker.
func (l *Locker) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.Check(req); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acquireLocked(req)
}

// AcquireAll implements scheduler.Locker: it makes one attempt at each
// request, in order, as Acquire would, and counts the call (see
// AcquireAllCalls). Each request is one attempt for FailNext. With no
// requests (the scheduler's New), it offers Check and counts nothing.
func (l *Locker) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	if len(reqs) == 0 {
		lockcheck.Offer(ctx, l.Check)
		return nil
	}
	out := make([]scheduler.LockResult, len(reqs))
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acquireAllCalls++
	for i, req := range reqs {
		if err := ctx.Err(); err != nil {
			out[i].Err = err
			continue
		}
		if err := l.Check(req); err != nil {
			out[i].Err = err
			continue
		}
		out[i].Lease, out[i].Err = l.acquireLocked(req)
	}
	return out
}

// AcquireAllCalls returns the number of calls of AcquireAll so far.
func (l *Locker) AcquireAllCalls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acquireAllCalls
}

// acquireLocked makes one attempt at a checked request. l.mu must be held.
func (l *Locker) acquireLocked(req scheduler.LockRequest) (scheduler.Lease, error) {
	if l.failNext > 0 {
		l.failNext--
		return nil, fmt.Errorf("schedulertest: job %q: injected failure: %w", req.Job, mutex.ErrNoQuorum)
	}
	now := time.Now()
	st := l.job(req.Job)
	if h := l.validHolder(st, now); h != nil {
		if req.Tick.After(h.tick) {
			return nil, fmt.Errorf("schedulertest: job %q: held by %s for tick %s: %w",
				req.Job, h.owner, formatTick(h.tick), scheduler.ErrOverlap)
		}
		return nil, fmt.Errorf("schedulertest: job %q: held by %s for tick %s: %w",
			req.Job, h.owner, formatTick(h.tick), mutex.ErrHeld)
	}
	if !req.Tick.IsZero() && !req.Tick.After(st.mark) {
		return nil, fmt.Errorf("schedulertest: job %q: tick %s not after %s: %w",
			req.Job, formatTick(req.Tick), formatTick(st.mark), mutex.ErrAlreadyRun)
	}
	st.fence++
	if !req.Tick.IsZero() {
		st.mark = req.Tick
	}
	h := &lease{
		l:       l,
		grant:   len(l.grants),
		job:     req.Job,
		owner:   req.Owner,
		tick:    req.Tick,
		fence:   st.fence,
		expires: now.Add(req.TTL),
	}
	st.holder = h
	l.grants = append(l.grants, Grant{
		Job: req.Job, Tick: req.Tick, Owner: req.Owner, Fence: st.fence, TTL: req.TTL, Acquired: now,
	})
	return h, nil
}

// FailNext makes the next n lock attempts (calls of Acquire, or requests of
// AcquireAll, in order) fail with an error matching mutex.ErrNoQuorum,
// as if no quorum of nodes could be reached. It replaces any previous
// count; FailNext(0) ends the failures.
func (l *Locker) FailNext(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failNext = max(n, 0)
}

// LoseLease makes the lease currently held for job lost, as if it could no
// longer be extended: the context returned by its Keep is cancelled with a
// cause matching mutex.ErrLost, its Release returns such an error,
// and the lock is free for others. It reports whether a lease was held.
func (l *Locker) LoseLease(job string) bool {
	l.mu.Lock()
	st := l.jobs[job]
	var h *lease
	if st != nil {
		h = l.validHolder(st, time.Now())
	}
	if h == nil {
		l.mu.Unlock()
		return false
	}
	l.loseLocked(h)
	cancel := h.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel(h.lostError())
	}
	return true
}

// Held returns the Grant of the lease currently held for job, if any.
func (l *Locker) Held(job string) (Grant, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.jobs[job]
	if st == nil {
		return Grant{}, false
	}
	h := l.validHolder(st, time.Now())
	if h == nil {
		return Grant{}, false
	}
	return l.grants[h.grant], true
}

// Mark returns the latest tick of job that was run (acquired), or the zero
// time.
func (l *Locker) Mark(job string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.jobs[job]; st != nil {
		return st.mark
	}
	return time.Time{}
}

// Grants returns the record of every successful lock attempt, in order.
func (l *Locker) Grants() []Grant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.grants)
}

func (l *Locker) job(name string) *jobState {
	st := l.jobs[name]
	if st == nil {
		st = &jobState{}
		l.jobs[name] = st
	}
	return st
}

// validHolder returns the holder of st's lock, after expiring it if its TTL
// passed without Keep. l.mu must be held.
func (l *Locker) validHolder(st *jobState, now time.Time) *lease {
	h := st.holder
	if h != nil && !h.kept && !now.Before(h.expires) {
		l.loseLocked(h)
		return nil
	}
	return h
}

// loseLocked marks h lost and frees its lock. l.mu must be held.
func (l *Locker) loseLocked(h *lease) {
	h.lost = true
	l.grants[h.grant].Lost = true
	if st := l.jobs[h.job]; st.holder == h {
		st.holder = nil
	}
}

// lease is one lease of a Locker. Its fields are guarded by l.mu.
type lease struct {
	l       *Locker
	grant   int // index in l.grants
	job     string
	owner   string
	tick    time.Time
	fence   uint64
	expires time.Time
	kept    bool
	lost    bool
	done    bool // released
	cancel  context.CancelCauseFunc
}

var errReleased = errors.New("schedulertest: lease released")

func (h *lease) lostError() error {
	return fmt.Errorf("schedulertest: lease of job %q (fence %d) lost: %w", h.job, h.fence, mutex.ErrLost)
}

// Fence implements scheduler.Lease.
func (h *lease) Fence() uint64 { return h.fence }

// Keep implements scheduler.Lease. The returned context is also cancelled,
// with a cause of its own, when the lease is released.
func (h *lease) Keep(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	l := h.l
	l.mu.Lock()
	h.cancel = cancel
	var cause error
	switch {
	case h.lost:
		cause = h.lostError()
	case h.done:
		cause = errReleased
	case l.validHolder(l.jobs[h.job], time.Now()) != h:
		cause = h.lostError()
	default:
		h.kept = true
	}
	l.mu.Unlock()
	if cause != nil {
		cancel(cause)
	}
	return ctx
}

// Release implements scheduler.Lease. It fails with ctx's error, releasing
// nothing, if ctx is done, and with an error matching mutex.ErrLost
// if the lease was lost. Releasing again returns nil. It keeps no ledger.
func (h *lease) Release(ctx context.Context, _ scheduler.Outcome) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("schedulertest: release job %q: %w", h.job, err)
	}
	l := h.l
	l.mu.Lock()
	if h.done {
		l.mu.Unlock()
		return nil
	}
	h.done = true
	var err error
	st := l.jobs[h.job]
	if h.lost || l.validHolder(st, time.Now()) != h {
		err = h.lostError()
	} else {
		st.holder = nil
		if h.tick.After(st.mark) {
			st.mark = h.tick
		}
		l.grants[h.grant].Released = time.Now()
	}
	cancel := h.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel(errReleased)
	}
	return err
}

func formatTick(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
