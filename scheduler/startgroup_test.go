package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/scheduler"
)

// TestBatchReleaseWaitsForStarts checks that a run that ends before another
// run of its batch (due at the same tick) has started keeps its lease until
// that run starts and as long again from the tick, but at least 20ms from
// the tick, or until 100ms after the tick at most (not after its end), also
// when the batch was locked ahead of the tick.
func TestBatchReleaseWaitsForStarts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		startSlow time.Duration // when the slow run starts after the tick; 0: never, wait out the bound
		ahead     time.Duration // WithLockAhead
		released  time.Duration // after the tick
	}{
		{"released as long after the other run started as it took", 30 * time.Millisecond, 0, 60 * time.Millisecond},
		{"released 20ms after the tick at least", 5 * time.Millisecond, 0, 20 * time.Millisecond},
		{"released after 100ms at most", 0, 0, 100 * time.Millisecond},
		{"locked ahead, released as long after the other run started as it took", 30 * time.Millisecond, 400 * time.Millisecond, 60 * time.Millisecond},
		{"locked ahead, released 20ms after the tick at least", 5 * time.Millisecond, 400 * time.Millisecond, 20 * time.Millisecond},
		{"locked ahead, released 100ms after the tick at most", 0, 400 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := locker()
				hold := holdFirstStart("slow")
				s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(observerFunc(hold.observe)), scheduler.WithLockAhead(tc.ahead))
				fastRan := make(chan time.Time, 10)
				mustAdd(t, s, "fast", "* * * * * *", scheduler.JobFunc(func(_ context.Context, info scheduler.RunInfo) error {
					fastRan <- info.Tick
					time.Sleep(10 * time.Millisecond)
					return nil
				}))
				mustAdd(t, s, "slow", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
				stop := start(t, s)

				tick := <-fastRan
				if !time.Now().Equal(tick) {
					t.Fatalf("fast's run for %v started at %v", tick, time.Now())
				}
				synctest.Wait()
				if _, held := l.Held("fast"); !held {
					t.Errorf("fast's lease for %v released while slow's run, due at the same tick, had not started", tick)
				}
				// heldUntil checks that fast's lease is held until end, and
				// released at end.
				heldUntil := func(end time.Time, why string) {
					time.Sleep(time.Until(end) - time.Millisecond)
					synctest.Wait()
					if _, held := l.Held("fast"); !held {
						t.Errorf("fast's lease released before %v after the tick (%s)", end.Sub(tick), why)
					}
					time.Sleep(time.Millisecond)
					synctest.Wait()
					if g, held := l.Held("fast"); held {
						t.Errorf("fast's lease still held (%+v) %v after the tick (%s)", g, end.Sub(tick), why)
					}
				}
				why := "the bound of the wait"
				if tc.startSlow > 0 {
					time.Sleep(tc.startSlow)
					hold.release()
					why = fmt.Sprintf("slow started %v after the tick", tc.startSlow)
				}
				heldUntil(tick.Add(tc.released), why)
				hold.release()
				stop()
				if n := len(l.Grants()); n != 2 {
					t.Errorf("%d leases granted, want 2 (one tick of each job)", n)
				}
			})
		})
	}
}

// TestBatchRetryJoinsStartGroup checks that, with lock-ahead, a run whose
// lease was won by a retry of the batch's undecided attempt, before the
// tick, starts with the runs due with it that the batch won and keeps its
// lease until they have started, as they do; and that a retry won after
// the tick starts on its own and does not wait for them.
func TestBatchRetryJoinsStartGroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ahead time.Duration // WithLockAhead
		join  bool
	}{
		{"won before the tick: joins", 400 * time.Millisecond, true},
		{"won after the tick: alone", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newBatchLocker()
				l.undecided["retried"] = true
				hold := holdFirstStart("slow")
				s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(observerFunc(hold.observe)),
					scheduler.WithLockAhead(tc.ahead))
				ran := make(chan time.Time, 10)
				mustAdd(t, s, "retried", "* * * * * *", sendTick(ran))
				mustAdd(t, s, "slow", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
				stop := start(t, s)
				defer stop()
				defer hold.release() // before stop, which waits for slow's run

				tick := <-ran
				if tc.join && !time.Now().Equal(tick) {
					t.Fatalf("retried's run for %v started at %v, want at the tick", tick, time.Now())
				}
				if _, _, acquires := l.recorded(); len(acquires) == 0 || acquires[0].Job != "retried" {
					t.Fatalf("retried's lease was not won by a retry: Acquire calls %+v", acquires)
				}
				synctest.Wait()
				if _, held := l.Held("retried"); held != tc.join {
					t.Fatalf("retried's lease held after its run while slow's start is held: %v, want %v", held, tc.join)
				}
				if !tc.join {
					return
				}
				const took = 30 * time.Millisecond
				time.Sleep(took)
				hold.release()
				// Released as long after slow's start as that took from
				// the tick.
				sleepUntil(tick.Add(2*took - time.Millisecond))
				synctest.Wait()
				if _, held := l.Held("retried"); !held {
					t.Errorf("retried's lease released %v after the tick, before slow's start plus as long again", time.Since(tick))
				}
				time.Sleep(time.Millisecond)
				synctest.Wait()
				if g, held := l.Held("retried"); held {
					t.Errorf("retried's lease still held (%+v) %v after the tick", g, time.Since(tick))
				}
			})
		})
	}
}

// TestBatchReleaseWithoutOtherStart checks that a run of a batch does not
// keep its lease waiting for a run of its batch that will not start: here,
// with lock-ahead, a job removed between its lease's acquisition and its
// tick.
func TestBatchReleaseWithoutOtherStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPair(t, 400*time.Millisecond, "fast", "* * * * * *", "removed", "* * * * * *")
		defer p.stop()
		l, s, fastRan, rl := p.l, p.s, p.ran, p.other

		// Both leases for the first tick are won 400ms ahead of it.
		first := time.Now().Truncate(time.Second).Add(time.Second)
		sleepUntil(first.Add(-200 * time.Millisecond))
		synctest.Wait()
		if _, held := l.Held("removed"); !held {
			t.Fatal("no lease held for job removed 200ms before the tick")
		}
		if err := s.Remove("removed"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if tick := <-fastRan; !tick.Equal(first) {
			t.Fatalf("fast ran tick %v, want %v", tick, first)
		}
		synctest.Wait()
		if g, held := l.Held("fast"); held {
			t.Errorf("fast's lease still held (%+v) after its run: its release waits for a run that will not start", g)
		}
		if runs := rl.all(); len(runs) != 0 {
			t.Errorf("removed job ran: %+v", runs)
		}
		for _, g := range l.Grants() {
			if g.Job == "removed" && !g.Released.Equal(first.Add(-200*time.Millisecond)) {
				t.Errorf("removed job's lease %+v, want released when the job was removed, 200ms before the tick", g)
			}
		}
	})
}

// TestBatchLeaseLostRetriedAtTick checks that a run of a batch whose lease,
// won ahead, is lost before the tick is attempted again at the tick, not
// once the other runs of its batch have started. (The in-memory locker
// refuses the second attempt: the lost lease had claimed the tick.)
func TestBatchLeaseLostRetriedAtTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := locker()
		hold := holdFirstStart("slow")
		defer hold.release()
		skipped := make(chan time.Time, 10) // when lost's ticks were skipped
		obs := observerFunc(func(ev scheduler.Event) {
			hold.observe(ev)
			if ev.Kind == "skipped" && ev.Job == "lost" {
				if ev.Skip != "lease_lost" || ev.Attempts != 2 {
					t.Errorf("lost's skip %+v, want lease_lost after 2 attempts", ev)
				}
				skipped <- time.Now()
			}
		})
		s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(obs.Observe), scheduler.WithLockAhead(400*time.Millisecond))
		mustAdd(t, s, "lost", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
		mustAdd(t, s, "slow", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
		stop := start(t, s)
		defer stop()

		first := time.Now().Truncate(time.Second).Add(time.Second)
		sleepUntil(first.Add(-200 * time.Millisecond))
		if !l.LoseLease("lost") {
			t.Fatal("no lease held for lost 200ms before the tick")
		}
		sleepUntil(first.Add(30 * time.Millisecond))
		hold.release()
		if at := <-skipped; !at.Equal(first) {
			t.Errorf("lost's tick attempted again %v after the tick, want at the tick: it waited for slow's start", at.Sub(first))
		}
	})
}

// TestBatchReleaseOtherTick checks that a run does not wait for a run of its
// batch due at a later tick: with lock-ahead, jobs whose leads differ are
// locked together.
func TestBatchReleaseOtherTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every second (lead 500ms) and every 3 s (lead 1.5 s): tick 3k−1 of
		// the first and tick 3k of the second are locked together at 3k−1.5.
		p := startPair(t, 1500*time.Millisecond, "often", "* * * * * *", "seldom", "*/3 * * * * *")
		defer p.stop()
		l, ran, rl := p.l, p.ran, p.other

		base := time.Now().Truncate(3 * time.Second)
		want := base.Add(2 * time.Second)
		for tick := <-ran; tick.Before(want); tick = <-ran {
		}
		synctest.Wait()
		if g, held := l.Held("often"); held {
			t.Errorf("often's lease for %v still held (%+v) after its run: it waits for seldom's run due at %v", want, g, base.Add(3*time.Second))
		}
		if n := len(rl.all()); n != 0 {
			t.Errorf("seldom ran %d times before its first tick", n)
		}
	})
}

// sendTick returns a job that sends the tick of each of its runs to ch.
func sendTick(ch chan<- time.Time) scheduler.JobFunc {
	return scheduler.JobFunc(func(_ context.Context, info scheduler.RunInfo) error {
		ch <- info.Tick
		return nil
	})
}

// pair is a running scheduler with lock-ahead and two jobs.
type pair struct {
	l     *schedulertest.Locker
	s     *scheduler.Scheduler
	ran   chan time.Time // the ticks run by the first job
	other *runLog        // the runs of the second job
	stop  func()
}

// startPair starts a scheduler with seconds and WithLockAhead(ahead) over
// an in-memory locker, with a job called first on firstSpec that sends
// the ticks it runs to ran, and one called second on secondSpec that
// records its runs in other.
func startPair(t *testing.T, ahead time.Duration, first, firstSpec, second, secondSpec string) *pair {
	t.Helper()
	p := &pair{l: locker(), ran: make(chan time.Time, 10), other: &runLog{}}
	p.s = newScheduler(t, p.l, scheduler.WithSeconds(), scheduler.WithLockAhead(ahead))
	mustAdd(t, p.s, first, firstSpec, sendTick(p.ran))
	mustAdd(t, p.s, second, secondSpec, p.other.job(0))
	p.stop = start(t, p.s)
	return p
}

// firstStartHold holds the first run of one job in its EventRunStarted,
// before the run counts as started in its start group, until release.
type firstStartHold struct {
	job     string
	once    sync.Once
	gate    chan struct{}
	release func() // may be called more than once
}

// holdFirstStart returns a hold on the first run of job; its observe method
// is to be called with every event of the scheduler.
func holdFirstStart(job string) *firstStartHold {
	h := &firstStartHold{job: job, gate: make(chan struct{})}
	h.release = sync.OnceFunc(func() { close(h.gate) })
	return h
}

func (h *firstStartHold) observe(ev scheduler.Event) {
	if ev.Kind == "run_started" && ev.Job == h.job {
		h.once.Do(func() { <-h.gate })
	}
}

// TestBatchStopBeforeTick checks a stop between a batch's lock-ahead and
// its tick. On Shutdown, the runs of the start group start at the tick, and
// Shutdown returns once they have ended. On a hard stop, each gives its
// lease up, and no goroutine of theirs is left waiting for the group's
// gate once Run has returned.
func TestBatchStopBeforeTick(t *testing.T) {
	for _, hard := range []bool{false, true} {
		name := "Shutdown"
		if hard {
			name = "hard stop"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := locker()
				runs := &runLog{}
				s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithLockAhead(400*time.Millisecond))
				for _, name := range []string{"a", "b", "c"} {
					mustAdd(t, s, name, "* * * * * *", runs.job(0))
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				errc := make(chan error, 1)
				go func() { errc <- s.Run(ctx) }()

				first := time.Now().Truncate(time.Second).Add(time.Second)
				stopAt := first.Add(-200 * time.Millisecond)
				sleepUntil(stopAt)
				if n := len(l.Grants()); n != 3 {
					t.Fatalf("%d leases won 200ms before the tick, want 3", n)
				}
				var want error = context.Canceled
				if hard {
					cancel()
				} else {
					want = scheduler.ErrClosed
					if err := s.Shutdown(context.Background()); err != nil {
						t.Errorf("Shutdown: %v", err)
					}
				}
				if err := <-errc; !errors.Is(err, want) {
					t.Errorf("Run returned %v, want %v", err, want)
				}
				synctest.Wait()
				if n := goroutinesIn("scheduler.(*Scheduler).launch"); n != 0 {
					t.Errorf("%d run goroutines left after Run returned, want 0", n)
				}
				wantRuns, released := 3, first
				if hard {
					wantRuns, released = 0, stopAt
				}
				if got := runs.ticks(); len(got) != wantRuns {
					t.Errorf("ticks run %v, want %d runs", got, wantRuns)
				}
				for _, g := range l.Grants() {
					if !g.Released.Equal(released) {
						t.Errorf("lease %+v, want released at %v", g, released.Sub(first))
					}
				}
			})
		})
	}
}

// goroutinesIn returns the number of goroutines with fn in their stack.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(fn)) {
			n++
		}
	}
	return n
}

// TestBatchFinishedRunIsFinished checks that a run of a start group whose
// job returned is reported with the job's own duration, not the time its
// lease was kept for the group, and that Entries shows it finished as soon
// as its job returned, while the lease is still kept.
func TestBatchFinishedRunIsFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := locker()
		hold := holdFirstStart("slow")
		finished := make(chan scheduler.Event, 10)
		s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(observerFunc(func(e scheduler.Event) {
			hold.observe(e)
			if e.Kind == "run_finished" && e.Job == "fast" {
				finished <- e
			}
		})))
		returned := make(chan struct{}, 10)
		mustAdd(t, s, "fast", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
			time.Sleep(5 * time.Millisecond)
			returned <- struct{}{}
			return nil
		}))
		mustAdd(t, s, "slow", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
		stop := start(t, s)
		<-returned
		synctest.Wait()
		if _, held := l.Held("fast"); !held {
			t.Fatal("fast's lease released while slow's run had not started: no start group to test")
		}
		for _, e := range s.Entries() {
			if e.Name == "fast" && e.Running {
				t.Errorf("Entries shows fast running after its job returned: %+v", e)
			}
		}
		time.Sleep(30 * time.Millisecond)
		hold.release()
		if e := <-finished; e.Duration != 5*time.Millisecond {
			t.Errorf("fast's run reported a duration of %v, want its job's own 5ms", e.Duration)
		}
		stop()
	})
}
