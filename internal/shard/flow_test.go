package shard

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// heldLease is a lease of heldLocker; it counts its releases.
type heldLease struct{ released *atomic.Int32 }

func (l heldLease) Fence() uint64                            { return 1 }
func (l heldLease) Keep(ctx context.Context) context.Context { return ctx }
func (l heldLease) Release(context.Context, scheduler.Outcome) error {
	l.released.Add(1)
	return nil
}

// heldLocker grants every request, each call only once the test lets it
// go (through proceed), and records the calls (their jobs) and how many
// were in flight at once.
type heldLocker struct {
	calls    chan []string
	proceed  chan struct{}
	inFlight atomic.Int32
	most     atomic.Int32
	released atomic.Int32
}

func newHeldLocker() *heldLocker {
	return &heldLocker{calls: make(chan []string, 16), proceed: make(chan struct{})}
}

func (h *heldLocker) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	r := h.AcquireAll(ctx, []scheduler.LockRequest{req})
	return r[0].Lease, r[0].Err
}

func (h *heldLocker) AcquireAll(_ context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	if len(reqs) == 0 { // the scheduler's New: no check to offer
		return nil
	}
	n := h.inFlight.Add(1)
	for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
	}
	jobs := make([]string, len(reqs))
	for i, r := range reqs {
		jobs[i] = r.Job + "@" + r.Tick.Format("05")
	}
	h.calls <- jobs
	<-h.proceed
	h.inFlight.Add(-1)
	out := make([]scheduler.LockResult, len(reqs))
	for i := range out {
		out[i].Lease = heldLease{&h.released}
	}
	return out
}

// jobsIn returns n job names of shard k.
func jobsIn(k, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if name := "job-" + string(rune('a'+i%26)) + time.Duration(i).String(); Of(name) == k {
			out = append(out, name)
		}
	}
	return out
}

// TestFlow: a shard has one claim in flight at a time; a tick asked for
// meanwhile through AcquireAll is answered at once to be asked again,
// through Acquire it waits and goes in the next claim with the others that
// waited, newest first; a newer tick of a job replaces the older waiting
// one; a waiter whose context ends is not sent, and a lease won for one
// that left during its claim is released.
func TestFlow(t *testing.T) { synctest.Test(t, testFlow) }

func testFlow(t *testing.T) {
	inner := newHeldLocker()
	g := NewGate(inner)
	g.on.Store(true)
	const k = 5
	g.held[k].Store(true)
	jobs := jobsIn(k, 5)
	a, b, c, d, e := jobs[0], jobs[1], jobs[2], jobs[3], jobs[4]
	t1, t2 := time.Unix(1001, 0), time.Unix(1002, 0)
	ctx := context.Background()

	first := make(chan []scheduler.LockResult, 1)
	go func() { first <- g.AcquireAll(ctx, []scheduler.LockRequest{{Job: a, Tick: t1}, {Job: b, Tick: t1}}) }()
	if got := <-inner.calls; len(got) != 2 {
		t.Fatalf("first claim: %v", got)
	}
	// In flight: AcquireAll answers at once, without asking.
	res := g.AcquireAll(ctx, []scheduler.LockRequest{{Job: c, Tick: t1}})
	if !errors.Is(res[0].Err, mutex.ErrNoQuorum) || res[0].Lease != nil {
		t.Fatalf("AcquireAll behind a claim in flight: %+v; want ErrNoQuorum at once", res[0])
	}
	// Acquire waits.
	type answer struct {
		job   string
		lease scheduler.Lease
		err   error
	}
	answers := make(chan answer, 8)
	var wg sync.WaitGroup
	acquire := func(ctx context.Context, job string, tick time.Time) {
		wg.Go(func() {
			l, err := g.Acquire(ctx, scheduler.LockRequest{Job: job, Tick: tick})
			answers <- answer{job + "@" + tick.Format("05"), l, err}
		})
	}
	waitQueued := func(n int) {
		t.Helper()
		synctest.Wait()
		g.flow.mu.Lock()
		defer g.flow.mu.Unlock()
		if q := len(g.flow.queue[k]); q != n {
			t.Fatalf("%d waiting; want %d", q, n)
		}
	}
	acquire(ctx, c, t1)
	waitQueued(1)
	acquire(ctx, d, t1)
	waitQueued(2)
	left, leave := context.WithCancel(ctx)
	acquire(left, e, t1)
	waitQueued(3)
	leave()
	if got := <-answers; got.job != e+"@41" || !errors.Is(got.err, mutex.ErrNoQuorum) || !errors.Is(got.err, context.Canceled) {
		t.Errorf("a waiter whose context ended: %+v; want ErrNoQuorum and its cause", got)
	}
	acquire(ctx, c, t2) // replaces c@t1
	if got := <-answers; got.job != c+"@41" || !errors.Is(got.err, mutex.ErrNoQuorum) {
		t.Errorf("a waiter replaced by its job's newer tick: %+v; want ErrNoQuorum", got)
	}
	waitQueued(4) // c@t1 (replaced), d@t1, e (gone), c@t2

	inner.proceed <- struct{}{} // the first claim ends
	if r := <-first; r[0].Lease == nil || r[1].Lease == nil {
		t.Errorf("first claim's results: %+v", r)
	}
	if got, want := <-inner.calls, []string{c + "@42", d + "@41"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("the waiters' claim: %v; want %v (newest first, without the one gone)", got, want)
	}
	inner.proceed <- struct{}{}
	for range 2 {
		if got := <-answers; got.lease == nil || got.err != nil {
			t.Errorf("a waiter's answer: %+v; want its lease", got)
		}
	}
	wg.Wait()
	if n := inner.most.Load(); n != 1 {
		t.Errorf("%d claims of the shard in flight at once; want 1", n)
	}

	// A waiter that leaves while its claim is out: its lease is released.
	go g.AcquireAll(ctx, []scheduler.LockRequest{{Job: a, Tick: t2}})
	<-inner.calls
	left, leave = context.WithCancel(ctx)
	acquire(left, b, t2)
	waitQueued(1)
	inner.proceed <- struct{}{}
	<-inner.calls // b's claim is out
	leave()
	if got := <-answers; got.err == nil {
		t.Errorf("a waiter gone during its claim: %+v; want an error", got)
	}
	inner.proceed <- struct{}{}
	synctest.Wait() // the release comes from the claim's goroutine
	if n := inner.released.Load(); n != 1 {
		t.Errorf("%d leases released; want the one won for the waiter gone", n)
	}
	g.flow.mu.Lock()
	busy := g.flow.busy[k]
	g.flow.mu.Unlock()
	if busy {
		t.Error("the shard is still marked in flight after its last claim")
	}
}

// TestFlowLimit: a claim takes at most the limit of a shard's ticks (the
// others are answered to be asked again), and the limit follows the
// claims' latency within its bounds.
func TestFlowLimit(t *testing.T) {
	inner := newHeldLocker()
	g := NewGate(inner)
	g.on.Store(true)
	const k = 7
	g.held[k].Store(true)
	g.flow.limit = 2
	jobs := jobsIn(k, 3)
	tick := time.Unix(1001, 0)
	done := make(chan []scheduler.LockResult, 1)
	go func() {
		done <- g.AcquireAll(context.Background(), []scheduler.LockRequest{{Job: jobs[0], Tick: tick}, {Job: jobs[1], Tick: tick}, {Job: jobs[2], Tick: tick}})
	}()
	if got := <-inner.calls; len(got) != 2 {
		t.Errorf("a claim with a limit of 2: %v", got)
	}
	inner.proceed <- struct{}{}
	if r := <-done; r[0].Lease == nil || r[1].Lease == nil || !errors.Is(r[2].Err, mutex.ErrNoQuorum) {
		t.Errorf("results: %+v; want two leases and ErrNoQuorum", r)
	}

	f := &flow{limit: maxLimit}
	for range 200 {
		f.adapt(2 * claimTarget)
	}
	if f.limit != minLimit {
		t.Errorf("after slow claims the limit is %d; want %d", f.limit, minLimit)
	}
	f.adapt(claimTarget * 3 / 4)
	if f.limit != minLimit {
		t.Errorf("a claim near the target moved the limit to %d", f.limit)
	}
	for range 1000 {
		f.adapt(claimTarget / 4)
	}
	if f.limit != maxLimit {
		t.Errorf("after fast claims the limit is %d; want %d", f.limit, maxLimit)
	}
}

// TestFlowDeadline: a waiter whose attempt's deadline passes while its
// claim is out gets the claim's answer (the claim is bounded by the latest
// deadline of its waiters), rather than leaving and having the lease won
// for it released: released, the lease would keep its tick's mark, and
// the tick, asked again, would be refused as already run, never run.
func TestFlowDeadline(t *testing.T) { synctest.Test(t, testFlowDeadline) }

func testFlowDeadline(t *testing.T) {
	inner := newHeldLocker()
	g := NewGate(inner)
	g.on.Store(true)
	const k = 9
	g.held[k].Store(true)
	jobs := jobsIn(k, 2)
	tick := time.Unix(1001, 0)
	go g.AcquireAll(context.Background(), []scheduler.LockRequest{{Job: jobs[0], Tick: tick}})
	<-inner.calls

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	type answer struct {
		lease scheduler.Lease
		err   error
	}
	got := make(chan answer, 1)
	go func() {
		l, err := g.Acquire(ctx, scheduler.LockRequest{Job: jobs[1], Tick: tick})
		got <- answer{l, err}
	}()
	synctest.Wait() // it waits behind the claim in flight
	inner.proceed <- struct{}{}
	<-inner.calls               // its claim is out
	time.Sleep(2 * time.Second) // its deadline passes meanwhile
	inner.proceed <- struct{}{}
	if a := <-got; a.lease == nil || a.err != nil {
		t.Errorf("a waiter whose deadline passed during its claim: %+v; want the lease won for it", a)
	}
	synctest.Wait()
	if n := inner.released.Load(); n != 0 {
		t.Errorf("%d leases released; want none (the lease goes to its waiter)", n)
	}
}

// TestFlowRetry: a tick asked again after its waiter left (its attempt's
// deadline passed behind the claim in flight) waits for the next claim,
// rather than being answered at once as replaced by the waiter gone.
func TestFlowRetry(t *testing.T) { synctest.Test(t, testFlowRetry) }

func testFlowRetry(t *testing.T) {
	inner := newHeldLocker()
	g := NewGate(inner)
	g.on.Store(true)
	const k = 11
	g.held[k].Store(true)
	jobs := jobsIn(k, 2)
	tick := time.Unix(1001, 0)
	go g.AcquireAll(context.Background(), []scheduler.LockRequest{{Job: jobs[0], Tick: tick}})
	<-inner.calls

	req := scheduler.LockRequest{Job: jobs[1], Tick: tick}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := g.Acquire(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a waiter at its deadline: %v; want it to leave", err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := g.Acquire(context.Background(), req) // asked again
		got <- err
	}()
	synctest.Wait()
	select {
	case err := <-got:
		t.Errorf("the tick asked again was answered at once: %v; want it to wait for the claim in flight", err)
		inner.proceed <- struct{}{}
		return
	default:
	}
	inner.proceed <- struct{}{}
	if c := <-inner.calls; len(c) != 1 || c[0] != jobs[1]+"@41" {
		t.Errorf("the next claim: %v; want the tick asked again", c)
	}
	inner.proceed <- struct{}{}
	if err := <-got; err != nil {
		t.Errorf("the tick asked again: %v", err)
	}
}

// TestFlowLimitClaimsOnly: the limit follows the claims of held shards'
// ticks only, not the latency of calls that pass the gate ungated (before
// its Keeper turns it on, manual runs, jobs not every replica runs).
func TestFlowLimitClaimsOnly(t *testing.T) { synctest.Test(t, testFlowLimitClaimsOnly) }

func testFlowLimitClaimsOnly(t *testing.T) {
	inner := newHeldLocker()
	g := NewGate(inner) // off: every request passes ungated
	for range 5 {
		done := make(chan struct{})
		go func() {
			g.AcquireAll(context.Background(), []scheduler.LockRequest{{Job: "a", Tick: time.Unix(1001, 0)}, {Job: "b", Tick: time.Unix(1001, 0)}})
			close(done)
		}()
		<-inner.calls
		time.Sleep(time.Second) // a slow call
		inner.proceed <- struct{}{}
		<-done
	}
	g.flow.mu.Lock()
	defer g.flow.mu.Unlock()
	if g.flow.limit != maxLimit {
		t.Errorf("after slow ungated calls the limit is %d; want %d", g.flow.limit, maxLimit)
	}
}

// TestFlowSkipOverload: a tick that waited behind its shard's claim in
// flight until its job's next tick came is reported skipped as overload,
// not no_quorum: the nodes were not at fault, the replica's claims were
// behind.
func TestFlowSkipOverload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newHeldLocker()
		g := NewGate(inner)
		g.on.Store(true)
		const k = 7
		g.held[k].Store(true)
		job := jobsIn(k, 1)[0]
		var mu sync.Mutex
		skips := map[int64]scheduler.Event{} // by tick, unix s
		s, err := scheduler.New(g, scheduler.WithSeconds(), scheduler.WithObserver(func(e scheduler.Event) {
			if e.Kind == "skipped" {
				mu.Lock()
				skips[e.Tick.Unix()] = e
				mu.Unlock()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(job, "* * * * * *", func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
			t.Fatal(err)
		}
		first := time.Now().Truncate(time.Second).Add(time.Second)
		errc := make(chan error, 1)
		go func() { errc <- s.Run(context.Background()) }()
		// The first tick's claim is held in flight; the second tick waits
		// behind it and is replaced by the third.
		time.Sleep(time.Until(first.Add(2500 * time.Millisecond)))
		synctest.Wait()
		mu.Lock()
		second, ok := skips[first.Add(time.Second).Unix()]
		mu.Unlock()
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-inner.calls:
					inner.proceed <- struct{}{}
				case <-stop:
					return
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-errc
		// A claim whose waiters all gave up may still be in flight after
		// Shutdown (the gate's own goroutine): let it end before the
		// drain stops.
		synctest.Wait()
		close(stop)
		if !ok {
			t.Fatalf("the tick behind the claim in flight was not reported skipped (skips: %v)", skips)
		}
		if second.Skip != "overload" || !errors.Is(second.Err, mutex.ErrNoQuorum) {
			t.Errorf("tick behind the claim in flight: skipped %q (%v); want overload, matching ErrNoQuorum", second.Skip, second.Err)
		}
	})
}
