package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/mutex"
)

// A won lease's path, to the job's return: the run waits for its tick
// and its start group (startAtTick, startGroup), starts (launch,
// markStart), runs its tries (tryJob), ends (finishRun, classify) and
// releases its lease with its outcome (release).

// startAtTick keeps lease alive and starts d's run under it at d's tick,
// in a goroutine that waits for the tick if it is still to come: for the
// gate of its start group starts (see startGroup) if it is not nil, or
// else for a timer of its own. It returns the run once its job has
// started, and, if starts is not nil, the group's wait has ended. The wait
// for the tick goes on when the scheduler stops gracefully: the tick is
// claimed, and Shutdown waits for it as for a running job. If the tick is
// abandoned (see abandoned), or its job removed, or the lease lost before
// the tick or given up by a hard stop, the run does not start: startAtTick
// releases the lease and returns why.
func (s *Scheduler) startAtTick(rn *session, d dueTick, lease Lease, attempts int, starts *startGroup) (*run, error) {
	kept := lease.Keep(rn.jobCtx)
	r := s.newRun(d.e, lease, d.tick, d.tick, attempts)
	r.batch, r.slot = starts, d.slot
	var err error
	if starts == nil {
		s.launch(rn, r, kept, func() error {
			if err := s.waitTick(d, kept); err != nil {
				return err
			}
			return s.stillWanted(rn, d)
		})
		err = r.awaitStart()
	} else {
		s.launch(rn, r, kept, func() error {
			starts.wait()
			if !r.claim() {
				return errWithdrawn
			}
			return s.readyAtGate(rn, d, kept)
		})
		err = s.awaitGate(d, r, kept)
	}
	if err != nil {
		s.releaseUnused(rn, d.e.name, d.tick, lease)
		return nil, err
	}
	return r, nil
}

// waitTick waits for d's tick, if it is still to come, and returns nil; or
// why not: the lease's kept context done, or the tick abandoned (see
// abandoned). It goes on waiting when the scheduler stops gracefully.
func (s *Scheduler) waitTick(d dueTick, kept context.Context) error {
	wait := d.tick.Sub(s.cfg.clock())
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for stop := d.ctx.Done(); ; {
		select {
		case <-t.C:
			return nil
		case <-kept.Done():
			return context.Cause(kept)
		case <-stop:
			if abandoned(d) {
				return errAbandonedEarly(d)
			}
			stop = nil // the scheduler is stopping: wait for the tick
		}
	}
}

// awaitGate is awaitStart for run r of d's tick, a member of a start group
// (see startAtTick). The run's goroutine waits for the group's gate alone,
// since a goroutine parked on one channel wakes at less cost than one in a
// select, which matters when hundreds wake at once on a few cores. Until
// the gate opens, awaitGate watches for what waitTick does instead, and
// withdraws r if its lease's kept context is done or its tick abandoned.
func (s *Scheduler) awaitGate(d dueTick, r *run, kept context.Context) error {
	lost, stop := kept.Done(), d.ctx.Done()
	for {
		select {
		case <-r.batch.all: // r started, or will not
			return r.awaitStart()
		case err := <-r.failed:
			return err
		case <-lost:
			lost = nil
			if r.withdraw() {
				return context.Cause(kept)
			}
		case <-stop:
			stop = nil // if the scheduler is stopping, wait for the tick
			if s.givenUp(d) && r.withdraw() {
				return errAbandonedEarly(d)
			}
		}
	}
}

// readyAtGate returns nil if d's run, its group's gate open, is to start,
// or else why not (see waitTick and stillWanted).
func (s *Scheduler) readyAtGate(rn *session, d dueTick, kept context.Context) error {
	switch {
	case kept.Err() != nil:
		return context.Cause(kept)
	case s.givenUp(d):
		return errAbandonedEarly(d)
	}
	return s.stillWanted(rn, d)
}

// stillWanted returns nil if d's run, its tick come, is still to start, or
// else why not: its job removed once the scheduler was stopping, or the
// scheduler stopped hard.
func (s *Scheduler) stillWanted(rn *session, d dueTick) error {
	switch {
	case d.e.removed.Load(): // removed once the scheduler was stopping
		return fmt.Errorf("scheduler: lease released: %w", errRemoved)
	case rn.jobCtx.Err() != nil:
		return fmt.Errorf("scheduler: lease given up: %w", context.Cause(rn.jobCtx))
	}
	return nil
}

// errAbandonedEarly returns the error of a run whose tick was abandoned
// before it came.
func errAbandonedEarly(d dueTick) error {
	return fmt.Errorf("scheduler: tick abandoned before it came, lease released: %w", context.Cause(d.ctx))
}

// sleepUntil waits until tick by the scheduler's clock, or until ctx is
// done, and reports whether it waited until tick.
func (s *Scheduler) sleepUntil(ctx context.Context, tick time.Time) bool {
	if wait := tick.Sub(s.cfg.clock()); wait > 0 {
		return sleep(ctx, wait)
	}
	return ctx.Err() == nil
}

// maxStartWait bounds how long after its gate opens a start group waits
// for the runs of its members to start.
const maxStartWait = 100 * time.Millisecond

// minStartWait is how long after its gate opens a start group of more
// than one member waits at least, however fast its members started: the
// other replicas' runs of the same tick may take longer to start than
// this replica's, and releases sent meanwhile would compete with them for
// the CPU, the replicas' and the Redis servers'.
const minStartWait = 20 * time.Millisecond

// startGroup is the runs of one tick whose leases one batch won (or a
// retry of it, before the tick). Their goroutines wait on one gate, opened
// by one timer at the tick, and start together.
//
// Their handlers then keep the leases until every member has started, and
// as long again (at least minStartWait, at most maxStartWait after the
// gate opened), so that releases do not compete for the CPU with the
// starts still under way, here or on the other replicas. A run that ended
// meanwhile is shown finished at once, with its job's own duration; its
// lock is released and its end reported after the wait. A member that will
// not start does not wait.
//
// The methods of a nil *startGroup do nothing.
type startGroup struct {
	left   atomic.Int64  // members whose outcome is not known yet
	size   atomic.Int64  // members, those that joined included
	all    chan struct{} // closed when the handlers' wait ends
	close  sync.Once     // closes all
	gate   chan struct{} // closed when the gate opens
	opens  time.Time     // when the gate opens, by the monotonic clock
	opener *time.Timer   // opens the gate, or nil if it was open at once
	bound  *time.Timer   // ends the wait maxStartWait after the opening
}

// wait waits for g's gate to open.
func (g *startGroup) wait() { <-g.gate }

// startGroups returns the start group of each of a batch's ticks: one
// group for the ticks of one instant whose leases the batch won (results,
// one per tick), its members, and whose first attempts were undecided,
// which may join it if a retry wins the lease before the gate opens; nil
// for the ticks refused, and for a won tick that no other won or
// undecided tick of its instant could start with. (An instant whose
// attempts were all undecided has no group: its retries start on their
// own.) With lock-ahead, a batch can hold ticks of several instants (jobs
// whose leads differ): a run waits only for those due with it. now is the
// time by the scheduler's clock, from which the gates' timers are set.
func startGroups(ticks []dueTick, results []LockResult, now time.Time) []*startGroup {
	type count struct{ won, undecided int }
	counts := make(map[int64]count) // by tick, in Unix ns (ticks may differ in location)
	for i, r := range results {
		c := counts[ticks[i].tick.UnixNano()]
		switch {
		case r.won():
			c.won++
		case !refused(r.Err):
			c.undecided++
		default:
			continue
		}
		counts[ticks[i].tick.UnixNano()] = c
	}
	groups := make(map[int64]*startGroup, len(counts))
	for t, c := range counts {
		// A lone winner needs a group only if a retry may join it, which
		// it may until the gate opens, at the tick.
		wait := time.Unix(0, t).Sub(now)
		if c.won > 1 || c.won == 1 && c.undecided > 0 && wait > 0 {
			groups[t] = newStartGroup(c.won, wait)
		}
	}
	out := make([]*startGroup, len(ticks))
	for i, r := range results {
		if !refused(r.Err) { // won or undecided
			out[i] = groups[ticks[i].tick.UnixNano()]
		}
	}
	return out
}

// newStartGroup returns a group of n members whose gate opens after wait;
// n must be at least 1.
func newStartGroup(n int, wait time.Duration) *startGroup {
	g := &startGroup{all: make(chan struct{}), gate: make(chan struct{})}
	g.left.Store(int64(n))
	g.size.Store(int64(n))
	wait = max(wait, 0)
	g.opens = time.Now().Add(wait)
	if wait > 0 {
		g.opener = time.AfterFunc(wait, func() { close(g.gate) })
	} else {
		close(g.gate)
	}
	g.bound = time.AfterFunc(wait+maxStartWait, g.closeAll)
	return g
}

// done records that one member's run has started, or that it will not
// start. Each member calls it once. After the last, the handlers' wait
// ends as long after as the members took from the gate's opening, but no
// sooner than minStartWait after the opening, or at its bound if that
// comes first; at once if the group had one member only, whose release
// delays no other start of its own replica.
func (g *startGroup) done() {
	if g == nil || g.left.Add(-1) != 0 {
		return
	}
	if g.opener != nil && g.opener.Stop() {
		// Every member was withdrawn: let their goroutines end now.
		close(g.gate)
	}
	switch took := time.Since(g.opens); {
	case took <= 0 || g.size.Load() == 1:
		// Every member was done before the gate opened, or the only one is.
		g.bound.Stop()
		g.closeAll()
	case 2*took < maxStartWait:
		g.bound.Reset(max(took, minStartWait-took))
	}
}

// join adds a member to g, a run whose lease was won after g was made (by
// a retry of the batch's undecided first attempt, or, rarely, won again
// by a member whose lease was lost before the tick), and reports whether
// it did. It does not once g's gate has opened, or once g's wait for its
// members has ended (every member done before the tick): the run then
// starts on its own.
func (g *startGroup) join() bool {
	if g == nil {
		return false
	}
	select {
	case <-g.gate:
		return false
	default:
	}
	for {
		n := g.left.Load()
		if n <= 0 {
			return false
		}
		if g.left.CompareAndSwap(n, n+1) {
			g.size.Add(1)
			return true
		}
	}
}

func (g *startGroup) closeAll() { g.close.Do(func() { close(g.all) }) }

// errGoexit is the error of a job that called runtime.Goexit.
var errGoexit = errors.New("scheduler: job called runtime.Goexit")

// releaseUnused releases a lease that no run will use.
func (s *Scheduler) releaseUnused(rn *session, job string, tick time.Time, lease Lease) {
	s.release(rn, lease, Outcome{}, func() []slog.Attr { return tickAttrs(job, tick) })
}

// release releases lease, recording o, within releaseTimeout whether or
// not the scheduler is stopping, and returns the error. A failure other
// than mutex.ErrLost is logged, with the attributes attrs returns.
func (s *Scheduler) release(rn *session, lease Lease, o Outcome, attrs func() []slog.Attr) error {
	ctx := context.WithoutCancel(rn.jobCtx)
	rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	err := lease.Release(rctx, o)
	cancel()
	if err != nil && !errors.Is(err, mutex.ErrLost) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "lease release failed; the lock expires with its TTL",
			append(attrs(), slog.Any("error", err))...)
	}
	return err
}

// run is one run of a job on this replica, from the lease's acquisition to
// its release.
type run struct {
	e        *entry
	lease    Lease
	info     RunInfo
	attempts int
	start    time.Time     // by the monotonic clock
	delay    time.Duration // from its tick to its start, by the scheduler's clock
	batch    *startGroup   // the group it starts with, or nil
	state    atomic.Int32  // runWaiting, runClaimed or runWithdrawn, if batch is not nil
	ctx      context.Context
	cancel   context.CancelCauseFunc // cancels ctx, under OverlapReplace (else nil); set before the job starts
	stopCtx  context.CancelFunc      // releases ctx's run timeout
	started  chan struct{}           // closed once the job has started
	failed   chan error              // why the job will not start; capacity 1
	done     chan outcome            // capacity 1, so that an abandoned job never blocks
	ended    atomic.Bool             // the run no longer counts as running (see end)
	tries    atomic.Int32            // tries of the job so far (WithRetry)
	slot     *slot                   // the run slot it frees when it ends, or nil
	permit   Lease                   // its permit of its job's cluster limit (WithClusterLimit), or nil
	triesMu  sync.Mutex
	tryErrs  []string // the errors of the tries tried again, for the ledger
}

// The states of a run that is a member of a start group.
const (
	runWaiting   = iota // for the group's gate
	runClaimed          // by its goroutine, the gate open: it starts, or fails to
	runWithdrawn        // by its handler: it will not start
)

// errWithdrawn is returned by the ready function of a run its handler
// withdrew (see awaitGate).
var errWithdrawn = errors.New("scheduler: run withdrawn before its tick")

// claim reports whether r, a member of a start group whose gate has
// opened, is to start, or fail to, in its goroutine: whether its handler
// did not withdraw it first.
func (r *run) claim() bool { return r.state.CompareAndSwap(runWaiting, runClaimed) }

// withdraw reports whether r, a member of a start group, will not start,
// as its goroutine did not claim it first, and then marks it done in its
// group.
func (r *run) withdraw() bool {
	if !r.state.CompareAndSwap(runWaiting, runWithdrawn) {
		return false
	}
	r.batch.done()
	return true
}

// awaitStart waits until r's job has started and returns nil, or returns
// why it will not start.
func (r *run) awaitStart() error {
	select {
	case <-r.started:
		return nil
	case err := <-r.failed:
		return err
	}
}

// outcome is how a job returned.
type outcome struct {
	err       error     // the job's error, or a *PanicError
	cause     error     // context.Cause of the job's context when it returned
	abandoned bool      // the job did not return within stopGrace of its cancellation
	returned  time.Time // when the job returned (monotonic)
}

// newRun returns a run of e on this replica, for tick (zero for a manual
// run), under lease, won in attempts attempts; its RunID's time is idTime.
// Its job is started by launch. The RunID is drawn here, when the lease is
// won (with lock-ahead, before the tick), so that the start itself does
// not wait for the system's random source.
func (s *Scheduler) newRun(e *entry, lease Lease, tick, idTime time.Time, attempts int) *run {
	return &run{
		e:        e,
		lease:    lease,
		attempts: attempts,
		info: RunInfo{
			Job:      e.name,
			Tick:     tick,
			Fence:    lease.Fence(),
			RunID:    newRunID(idTime),
			Instance: s.cfg.instanceID,
			Try:      1,
		},
		started: make(chan struct{}),
		failed:  make(chan error, 1),
		done:    make(chan outcome, 1),
	}
}

// startRun starts a manual run of e under lease at once, in run slot sl,
// and returns it, or why it did not start (no permit of its job's cluster
// limit in time).
func (s *Scheduler) startRun(rn *session, e *entry, lease Lease, attempts int, sl *slot) (*run, error) {
	r := s.newRun(e, lease, time.Time{}, s.cfg.clock(), attempts)
	r.slot = sl
	s.launch(rn, r, lease.Keep(rn.jobCtx), nil)
	if err := r.awaitStart(); err != nil {
		return nil, err
	}
	return r, nil
}

// launch starts r's goroutine, which closes r.started once r's job has
// started, or sends why it did not start on r.failed, and then marks r
// done in its start group. kept is the context returned by the lease's
// Keep. The goroutine first calls ready, if it is not nil, and does not
// start the job if ready returns an error. It is not in rn.wg: the handler
// that called launch waits for it, except when it abandons a job that
// ignores cancellation. The job's context, but for its run timeout, is
// built here, before the goroutine waits for the tick, with r.cancel under
// OverlapReplace.
func (s *Scheduler) launch(rn *session, r *run, kept context.Context, ready func() error) {
	base := contextWithRunInfo(kept, &r.info)
	if r.e.cfg.overlap == OverlapReplace {
		base, r.cancel = context.WithCancelCause(base)
	}
	go func() {
		if r.cancel != nil {
			defer r.cancel(nil)
		}
		var err error
		if ready != nil {
			if err = ready(); err == nil {
				err = outlived(kept)
			}
		}
		if err == nil {
			err = s.takePermit(r, kept)
		}
		if err == nil && r.permit != nil { // the wait for it may have outlived the lease
			if err = outlived(kept); err == nil && kept.Err() != nil {
				err = context.Cause(kept)
			}
			if err != nil {
				r.releasePermit()
			}
		}
		if err != nil {
			if err == errWithdrawn { // its handler has dealt with it
				return
			}
			r.failed <- err
			r.batch.done()
			return
		}
		base, unwatch := withPermit(r, base)
		s.markStart(rn, r, base)
		close(r.started) // wakes no handler waiting for its group
		r.batch.done()
		out := outcome{err: errGoexit}
		defer func() {
			out.cause, out.returned = context.Cause(r.ctx), time.Now()
			r.stopCtx()
			unwatch()
			r.releasePermit()
			s.end(r, out, nil, false)
			r.done <- out
		}()
		out.err = s.tryJob(rn.loopCtx, r)
	}()
}

// validityKey is the key under which a lease's kept context carries when
// its validity ends (func() time.Time; redlockLease.Keep).
type validityKey struct{}

// outlived returns why a run of the lease kept with kept must not start:
// its validity ended, though the keepalive, whose timer a busy process
// runs late, has not cancelled kept yet; nil otherwise, or for a Locker
// whose leases do not say.
func outlived(kept context.Context) error {
	until, ok := kept.Value(validityKey{}).(func() time.Time)
	if !ok {
		return nil
	}
	if late := time.Since(until()); late >= 0 {
		return fmt.Errorf("%w: its validity ended %v before its run could start", mutex.ErrLost, late)
	}
	return nil
}

// markStart records r's start and builds its job's context from base, the
// lease's kept context with r's RunInfo.
func (s *Scheduler) markStart(rn *session, r *run, base context.Context) {
	e, tick := r.e, r.info.Tick
	e.latest.Store(r) // first: a tick that sees the run running may replace it
	e.running.Add(1)

	r.start = time.Now()
	var startDelay time.Duration
	if !tick.IsZero() {
		wall := r.start // one reading of the clock with the default one
		if s.cfg.ownClock {
			wall = s.cfg.clock()
		}
		startDelay = wall.Sub(tick)
	}
	r.delay = startDelay
	s.emit(e, Event{Kind: KindRunStarted, Job: e.name, Tick: tick, RunID: r.info.RunID, Fence: r.info.Fence,
		StartDelay: startDelay, Attempts: r.attempts})
	if s.log.Enabled(rn.jobCtx, slog.LevelDebug) {
		s.log.LogAttrs(rn.jobCtx, slog.LevelDebug, "run started", r.attrs(slog.Duration("start_delay", startDelay))...)
	}

	r.ctx, r.stopCtx = base, func() {}
	if d := e.cfg.runTimeout; d > 0 {
		r.ctx, r.stopCtx = context.WithTimeoutCause(base, d, ErrRunTimeout)
	}
}

// callJob runs job, turning a panic into a *PanicError.
func callJob(ctx context.Context, job JobFunc, info RunInfo) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Job: info.Job, Value: v, Stack: debug.Stack()}
		}
	}()
	return job(ctx, info)
}

// finishRun waits for r's job to return, or to be abandoned, releases the
// lease and reports the result.
func (s *Scheduler) finishRun(rn *session, r *run) {
	var out outcome
	select {
	case out = <-r.done: // a job that returned is never reported abandoned
	default:
		select {
		case out = <-r.done:
		case <-rn.abandon:
			out = outcome{cause: context.Cause(r.ctx), abandoned: true}
		}
	}
	duration := time.Since(r.start)
	if !out.returned.IsZero() {
		duration = out.returned.Sub(r.start) // the job's own time, without waiting for its group
	}
	ledger, ledgerErr := classify(out, nil) // the lease's own loss is the ledger's to tell
	relErr := s.release(rn, r.lease, Outcome{RunID: r.info.RunID, Result: ledger, Err: r.ledgerErr(ledgerErr), Try: int(r.tries.Load()), Delay: r.delay},
		func() []slog.Attr { return r.attrs() })
	result, err := s.end(r, out, relErr, true)
	s.emit(r.e, Event{Kind: KindRunFinished, Job: r.info.Job, Tick: r.info.Tick, RunID: r.info.RunID,
		Fence: r.info.Fence, Result: result, Duration: duration, Attempts: r.attempts, Try: int(r.tries.Load()), Err: err})

	s.logRun(context.WithoutCancel(rn.jobCtx), r, result, duration, err)
}

// end records that r's job returned (final false, from its goroutine), or
// that its lease was released (final true, from its handler). The first
// call takes the run off the running count and records its result, so
// that Entries and Trigger see a finished run as finished at once, even
// while its lease is kept for its start group. The release's call records
// the result again, now knowing whether the lease was lost (relErr), and
// wakes the ticks waiting for the release (see releaseSignal); a job that
// returns after it was abandoned changes nothing.
func (s *Scheduler) end(r *run, out outcome, relErr error, final bool) (string, error) {
	result, err := classify(out, relErr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if final && r.e.released != nil {
		close(r.e.released)
		r.e.released = nil
	}
	first := r.ended.CompareAndSwap(false, true)
	if first {
		r.e.running.Add(-1)
		r.slot.free()
	}
	if (first || final) && r.e.latest.Load() == r { // not over a newer run's result
		r.e.lastResult, r.e.lastSkip, r.e.lastErr = result, "", err
	}
	return result, err
}

// logRun logs the end of run r. Its attributes are built only if the
// logger takes the record: with thousands of runs a tick, they would cost
// the CPU the other runs' starts need.
func (s *Scheduler) logRun(ctx context.Context, r *run, result string, duration time.Duration, err error) {
	level, msg := slog.LevelError, "run failed"
	switch result {
	case resultSuccess:
		level, msg = slog.LevelInfo, "run finished"
	case resultCanceled:
		level, msg = slog.LevelWarn, "run canceled"
		if errors.Is(err, ErrReplaced) {
			level, msg = slog.LevelInfo, "run canceled: replaced by a newer tick"
		}
	case resultAbandoned:
		level, msg = slog.LevelError, "run abandoned: the job ignored its context's cancellation"
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := r.attrs(slog.String("result", result), slog.Duration("duration", duration))
	if result != resultSuccess {
		attrs = append(attrs, slog.Any("error", err))
	}
	if pe, ok := err.(*PanicError); ok && result == resultPanic {
		attrs = append(attrs, slog.String("stack", string(pe.Stack)))
	}
	s.log.LogAttrs(ctx, level, msg, attrs...)
}

// classify turns how a job returned, and how its lease was released, into
// a Result and the error to report.
// A lease found lost at the release after the scheduler stopped the job
// (Shutdown, Run's context) was lost because the keepalive stopped with
// the job's context, not because of the nodes: the run is reported as
// canceled, or abandoned, not as lock_lost. A run timeout does not stop
// the keepalive, so a loss after it is one.
func classify(out outcome, releaseErr error) (string, error) {
	switch {
	case errors.Is(out.cause, mutex.ErrLost):
		return resultLockLost, withCause(out.cause, out.err)
	case out.abandoned:
		return resultAbandoned, fmt.Errorf("scheduler: the job did not stop in time: %w", out.cause)
	case (out.cause == nil || errors.Is(out.cause, ErrRunTimeout)) && errors.Is(releaseErr, mutex.ErrLost):
		return resultLockLost, withCause(releaseErr, out.err)
	}
	if _, ok := out.err.(*PanicError); ok {
		return resultPanic, out.err
	}
	switch {
	case out.err == nil:
		return resultSuccess, nil
	case errors.Is(out.cause, ErrRunTimeout):
		return resultTimeout, withCause(out.cause, out.err)
	case out.cause != nil:
		return resultCanceled, withCause(out.cause, out.err)
	default:
		return resultFailure, out.err
	}
}

// withCause returns cause, annotated with the job's error if there is a
// different one.
func withCause(cause, jobErr error) error {
	if jobErr == nil || errors.Is(jobErr, cause) {
		return cause
	}
	return fmt.Errorf("%w (job returned: %w)", cause, jobErr)
}

func (r *run) attrs(extra ...slog.Attr) []slog.Attr {
	return append(tickAttrs(r.info.Job, r.info.Tick,
		slog.String("run_id", r.info.RunID), slog.Uint64("fence", r.info.Fence)), extra...)
}

// tryJob runs r's job, and, with WithRetry, runs it again after a failure
// while tries are left, the run's context is live, the scheduler is not
// stopping (stopping is its session's loop context), the failure was not a
// panic and the next try would start within the job's late limit of the
// tick (the misfire grace, or the catch-up window: a tick caught up after
// an outage keeps its retries), or of the first try's start for a manual
// run. Each try gets its number in RunInfo.Try; each failure tried again is
// reported and logged.
func (s *Scheduler) tryJob(stopping context.Context, r *run) error {
	cfg := r.e.cfg
	from := r.info.Tick
	if from.IsZero() {
		from = s.cfg.clock()
	}
	deadline, backoff := from.Add(cfg.lateLimit()), cfg.backoff
	for try := 1; ; try++ {
		r.tries.Store(int32(try))
		ctx, info := r.ctx, r.info
		if try > 1 {
			info.Try = try
			ctx = contextWithRunInfo(r.ctx, &info)
		}
		err := callJob(ctx, r.e.job, info)
		var panicked *PanicError
		if err == nil || try >= cfg.attempts || errors.As(err, &panicked) || r.ctx.Err() != nil ||
			stopping.Err() != nil || !s.cfg.clock().Add(backoff).Before(deadline) {
			return err
		}
		s.emit(r.e, Event{Kind: KindRunRetry, Job: info.Job, Tick: info.Tick, RunID: info.RunID, Fence: info.Fence,
			Attempts: r.attempts, Try: try, Err: err})
		r.failedTry(try, err)
		s.log.LogAttrs(r.ctx, slog.LevelWarn, "run failed; trying again",
			r.attrs(slog.Int("try", try), slog.Duration("backoff", backoff), slog.Any("error", err))...)
		wait, stop := context.WithCancel(r.ctx)
		unhook := context.AfterFunc(stopping, stop) // a Shutdown ends the wait too
		slept := sleep(wait, backoff)
		unhook()
		stop()
		if !slept || outlived(r.ctx) != nil { // no try after the lease's validity
			return err
		}
		backoff *= 2
	}
}

// failedTry records that try failed with err and is tried again, for the
// run's record in the ledger.
func (r *run) failedTry(try int, err error) {
	r.triesMu.Lock()
	defer r.triesMu.Unlock()
	r.tryErrs = append(r.tryErrs, fmt.Sprintf("try %d: %v", try, err))
}

// ledgerErr returns the error the run's ledger record keeps: err, then
// the errors of the tries that failed before (WithRetry), if any (the
// record keeps the first 200 bytes: the outcome first).
func (r *run) ledgerErr(err error) error {
	r.triesMu.Lock()
	defer r.triesMu.Unlock()
	if len(r.tryErrs) == 0 {
		return err
	}
	last := "ok"
	if err != nil {
		last = err.Error()
	}
	return errors.New(last + " (after " + strings.Join(r.tryErrs, "; ") + ")")
}
