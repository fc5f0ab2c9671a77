package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

func TestTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := locker()
		obs := &recorder{}
		got := make(chan [2]scheduler.RunInfo, 1)
		s := newScheduler(t, l, scheduler.WithInstanceID("replica-1"), scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "report", "@daily", scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
			fromCtx, _ := scheduler.RunInfoFromContext(ctx)
			got <- [2]scheduler.RunInfo{info, fromCtx}
			return nil
		}))
		stop := start(t, s)
		before := time.Now()
		info, err := s.Trigger(context.Background(), "report")
		if err != nil {
			t.Fatalf("Trigger: %v", err)
		}
		if at, ok := uuidV7Time(info.RunID); !ok || at.Before(before.Truncate(time.Millisecond)) || at.After(time.Now()) {
			t.Errorf("run id %s, want a UUIDv7 of when the trigger's lease was won (%v)", info.RunID, before)
		}
		infos := <-got
		if infos[0] != info || infos[1] != info {
			t.Errorf("Trigger returned %+v, the job got %+v and its context %+v", info, infos[0], infos[1])
		}
		if info.Job != "report" || !info.Tick.IsZero() || info.Fence != 1 || info.Instance != "replica-1" || uuidVersion(info.RunID) != 7 {
			t.Errorf("RunInfo %+v, want job report, zero tick, fence 1, replica-1 and a UUIDv7", info)
		}
		synctest.Wait()
		grants := l.Grants()
		if len(grants) != 1 || !grants[0].Tick.IsZero() || grants[0].Owner != "replica-1" || grants[0].TTL != 30*time.Second {
			t.Errorf("grants %+v, want one for the zero tick, owned by replica-1, with the default TTL of 30s", grants)
		}
		assertReleased(t, l, "report")
		if m := l.Mark("report"); !m.IsZero() {
			t.Errorf("a trigger moved the occurrence mark to %v", m)
		}
		started, fin := obs.of("run_started"), obs.finished()
		if len(started) != 1 || started[0].RunID != info.RunID || started[0].StartDelay != 0 || started[0].Attempts != 1 {
			t.Errorf("started %+v, want one for %s", started, info.RunID)
		}
		if len(fin) != 1 || fin[0].RunID != info.RunID || fin[0].Result != "success" {
			t.Errorf("finished %+v, want success for %s", fin, info.RunID)
		}
		if e := s.Entries()[0]; e.LastResult != "success" || !e.Prev.IsZero() {
			t.Errorf("entry %+v, want last result success and no tick handled", e)
		}
		if _, err := s.Trigger(context.Background(), "nope"); !errors.Is(err, scheduler.ErrUnknownJob) {
			t.Errorf("Trigger(nope) = %v, want ErrUnknownJob", err)
		}
		stop()
	})
}

// TestTriggerIsExclusive checks that a triggered run excludes other
// triggers and ticks, here and on another replica.
func TestTriggerIsExclusive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := locker()
		obs := &recorder{}
		started, release := make(chan struct{}, 1), make(chan struct{})
		job, _ := blockingJob(started, release, false)
		a := newScheduler(t, l, scheduler.WithInstanceID("a"), scheduler.WithObserver(obs.Observe))
		b := newScheduler(t, l, scheduler.WithInstanceID("b"), scheduler.WithObserver(obs.Observe))
		mustAdd(t, a, "job", "* * * * *", job)
		mustAdd(t, b, "job", "* * * * *", job)
		stops := []func(){start(t, a), start(t, b)}
		sleepUntil(t0.Add(10 * time.Second))

		if _, err := a.Trigger(context.Background(), "job"); err != nil {
			t.Fatalf("Trigger: %v", err)
		}
		<-started
		if _, err := a.Trigger(context.Background(), "job"); !errors.Is(err, scheduler.ErrOverlap) {
			t.Errorf("second Trigger here = %v, want ErrOverlap", err)
		}
		if _, err := b.Trigger(context.Background(), "job"); !errors.Is(err, mutex.ErrHeld) {
			t.Errorf("Trigger on the other replica = %v, want mutex.ErrHeld", err)
		}
		sleepUntil(t0.Add(70 * time.Second))
		if overlaps := obs.skips("overlap"); len(overlaps) != 2 {
			t.Errorf("overlap skips %+v, want the 00:01 tick on both replicas", overlaps)
		}
		close(release)
		sleepUntil(t0.Add(130 * time.Second))
		stopAll(stops...)
		// The trigger did not claim an occurrence: the 00:02 tick ran.
		if fin := obs.finished(); len(fin) != 2 || !fin[1].Tick.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("finished %+v, want the trigger and the 00:02 tick", fin)
		}
	})
}

// TestTriggerLeaseWonAfterStop checks that a lease won by a trigger after
// the scheduler stopped is released, and the trigger reports ErrClosed,
// without running the job; and that a failed release is logged.
func TestTriggerLeaseWonAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &stallingLocker{Locker: locker(), entered: make(chan struct{}), proceed: make(chan struct{})}
		var logs lockedBuffer
		s := newScheduler(t, l, scheduler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		var log runLog
		mustAdd(t, s, "job", "@daily", log.job(0))
		stop := start(t, s)
		errc := make(chan error, 1)
		go func() {
			_, err := s.Trigger(context.Background(), "job")
			errc <- err
		}()
		<-l.entered
		stop()
		close(l.proceed)
		if err := <-errc; !errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("Trigger = %v, want ErrClosed", err)
		}
		assertReleased(t, l.Locker, "job")
		if runs := log.all(); len(runs) != 0 {
			t.Errorf("runs %+v, want none", runs)
		}
		if out := logs.String(); !strings.Contains(out, "lease release failed") || !strings.Contains(out, "node down") {
			t.Errorf("log %q, want the failed release", out)
		}
	})
}

// stallingLocker is a Locker whose Acquire for a trigger (the zero tick),
// made once, closes entered and waits until proceed is closed, and then
// wins the lease even if its context is done.
type stallingLocker struct {
	*schedulertest.Locker
	entered, proceed chan struct{}
}

func (l *stallingLocker) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	if !req.Tick.IsZero() {
		return l.Locker.Acquire(ctx, req)
	}
	close(l.entered)
	<-l.proceed
	lease, err := l.Locker.Acquire(context.WithoutCancel(ctx), req)
	if err != nil {
		return nil, err
	}
	return failingRelease{lease}, nil
}

// failingRelease is a Lease whose Release releases it and reports an
// error anyway, as a release that reached too few nodes would.
type failingRelease struct{ scheduler.Lease }

func (l failingRelease) Release(ctx context.Context, _ scheduler.Outcome) error {
	if err := l.Lease.Release(ctx, scheduler.Outcome{}); err != nil {
		return err
	}
	return errors.New("node down")
}

// lockedBuffer is a bytes.Buffer that a logger may write to from several
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestTriggerWaitsForRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, locker())
		var log runLog
		mustAdd(t, s, "job", "@daily", log.job(0))
		type result struct {
			info scheduler.RunInfo
			err  error
		}
		res := make(chan result, 1)
		go func() {
			info, err := s.Trigger(context.Background(), "job")
			res <- result{info, err}
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case r := <-res:
			t.Fatalf("Trigger returned %+v before Run started", r)
		default:
		}
		stop := start(t, s)
		if r := <-res; r.err != nil || r.info.Job != "job" {
			t.Errorf("Trigger = %+v", r)
		}
		stop()

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s2 := newScheduler(t, locker())
		mustAdd(t, s2, "job", "@daily", noop)
		if _, err := s2.Trigger(ctx, "job"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Trigger without Run = %v, want the context's error", err)
		}
	})
}

func TestTriggerRetriesUndecidedAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := locker()
		obs := &recorder{}
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "job", "@daily", noop)
		stop := start(t, s)
		l.FailNext(3)
		if _, err := s.Trigger(context.Background(), "job"); err != nil {
			t.Errorf("Trigger: %v", err)
		}
		if started := obs.of("run_started"); len(started) != 1 || started[0].Attempts != 4 {
			t.Errorf("started %+v, want one after 4 attempts", started)
		}

		synctest.Wait() // for the run to end
		l.FailNext(1 << 30)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		t0 := time.Now()
		if _, err := s.Trigger(ctx, "job"); !errors.Is(err, mutex.ErrNoQuorum) {
			t.Errorf("Trigger during an outage = %v, want mutex.ErrNoQuorum", err)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("Trigger took %v with a 5s context", d)
		}
		// Without a deadline, Trigger gives up after the misfire grace.
		t0 = time.Now()
		if _, err := s.Trigger(context.Background(), "job"); !errors.Is(err, mutex.ErrNoQuorum) {
			t.Errorf("Trigger during an outage = %v, want mutex.ErrNoQuorum", err)
		}
		if d := time.Since(t0); d > time.Minute || d < 58*time.Second {
			t.Errorf("Trigger took %v, want about the misfire grace of 1m", d)
		}
		l.FailNext(0)
		stop()
	})
}

// TestTriggerRemoved checks that a Trigger whose job is removed while its
// lock attempts are retried stops trying, returns ErrUnknownJob and does
// not run the job; and that one whose lease is won before a Remove that
// comes before its run starts releases the lease and does not run it
// either.
func TestTriggerRemoved(t *testing.T) {
	t.Run("while retrying", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := locker()
			var log runLog
			s := newScheduler(t, l)
			mustAdd(t, s, "job", "@daily", log.job(0))
			stop := start(t, s)
			defer stop()
			l.FailNext(1 << 30)
			done := make(chan error, 1)
			go func() {
				_, err := s.Trigger(context.Background(), "job")
				done <- err
			}()
			time.Sleep(100 * time.Millisecond) // Trigger is retrying
			l.FailNext(0)
			if err := s.Remove("job"); err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			if err := <-done; !errors.Is(err, scheduler.ErrUnknownJob) {
				t.Errorf("Trigger of a job removed while it retried = %v, want ErrUnknownJob", err)
			}
			if d := time.Since(t0); d > 0 {
				t.Errorf("Trigger returned %v after Remove, want at once", d)
			}
			synctest.Wait()
			if runs := log.all(); len(runs) != 0 {
				t.Errorf("the removed job ran: %+v", runs)
			}
			if g, held := l.Held("job"); held {
				t.Errorf("lease held after Trigger returned: %+v", g)
			}
		})
	})
	t.Run("lease won, then removed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			base := locker()
			var log runLog
			var s *scheduler.Scheduler
			// Remove the job as its lease is won, before Trigger starts
			// the run.
			lk := &acquireHook{Locker: base, after: func() {
				if err := s.Remove("job"); err != nil {
					t.Errorf("Remove: %v", err)
				}
			}}
			s = newScheduler(t, lk)
			mustAdd(t, s, "job", "@daily", log.job(0))
			stop := start(t, s)
			defer stop()
			if _, err := s.Trigger(context.Background(), "job"); !errors.Is(err, scheduler.ErrUnknownJob) {
				t.Errorf("Trigger of a job removed as its lease was won = %v, want ErrUnknownJob", err)
			}
			synctest.Wait()
			if runs := log.all(); len(runs) != 0 {
				t.Errorf("the removed job ran: %+v", runs)
			}
			grants := base.Grants()
			if len(grants) != 1 || grants[0].Released.IsZero() {
				t.Errorf("grants %+v, want the trigger's lease, released", grants)
			}
		})
	})
}

// acquireHook is a Locker that calls after once a lease is won by Acquire,
// before returning it.
type acquireHook struct {
	*schedulertest.Locker
	after func()
}

func (a *acquireHook) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	lease, err := a.Locker.Acquire(ctx, req)
	if err == nil {
		a.after()
	}
	return lease, err
}

func TestRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, locker(), scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "minutely", "* * * * *", log.job(30*time.Second))
		stop := start(t, s)
		sleepUntil(t0.Add(3*time.Minute + 10*time.Second))
		if err := s.Remove("minutely"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if e := s.Entries(); len(e) != 0 {
			t.Errorf("entries after Remove: %+v", e)
		}
		sleepUntil(t0.Add(10 * time.Minute))
		if err := s.Remove("minutely"); !errors.Is(err, scheduler.ErrUnknownJob) {
			t.Errorf("second Remove = %v, want ErrUnknownJob", err)
		}
		// The name can be registered again.
		mustAdd(t, s, "minutely", "* * * * *", log.job(0))
		sleepUntil(t0.Add(11*time.Minute + 10*time.Second))
		stop()

		want := append(expectTicks(t0, t0.Add(3*time.Minute), time.Minute), t0.Add(11*time.Minute))
		if got := log.ticks(); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("ran %v, want %v", got, want)
		}
		// The run in progress at Remove was not interrupted.
		for _, ev := range obs.finished() {
			if ev.Result != "success" {
				t.Errorf("run of %v: %s", ev.Tick, ev.Result)
			}
		}
		var kinds []scheduler.Kind
		for _, ev := range obs.of("job_added", "job_removed") {
			kinds = append(kinds, ev.Kind)
		}
		if want := []scheduler.Kind{"job_added", "job_removed", "job_added"}; !slices.Equal(kinds, want) {
			t.Errorf("job events %v, want %v", kinds, want)
		}
	})
}

// heldAfter is a Locker whose Acquire reports that called, waits for
// answer and then refuses the lock as held elsewhere.
type heldAfter struct {
	*schedulertest.Locker
	called, answer chan struct{}
}

func (h *heldAfter) Acquire(context.Context, scheduler.LockRequest) (scheduler.Lease, error) {
	h.called <- struct{}{}
	<-h.answer
	return nil, fmt.Errorf("test: held by another replica: %w", mutex.ErrHeld)
}

// TestRemoveBeforeRefusal: a refusal that comes for a job removed while
// its lock attempt was under way is not reported: no skip of the job
// follows EventJobRemoved.
func TestRemoveBeforeRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &heldAfter{Locker: locker(), called: make(chan struct{}), answer: make(chan struct{})}
		obs := &recorder{}
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "job", "* * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
		stop := start(t, s)
		<-l.called // the first tick's attempt
		if err := s.Remove("job"); err != nil {
			t.Fatal(err)
		}
		close(l.answer)
		synctest.Wait()
		stop()

		events := obs.of("job_removed", "skipped")
		if len(events) == 0 || events[0].Kind != "job_removed" {
			t.Fatalf("events %v: want EventJobRemoved and nothing after it", events)
		}
		for _, ev := range events[1:] {
			t.Errorf("after EventJobRemoved: %v skip %v of tick %v", ev.Kind, ev.Skip, ev.Tick)
		}
	})
}

// TestRemoveAbandonsLockAttempts removes a job whose tick is being retried.
func TestRemoveAbandonsLockAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := locker()
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "job", "* * * * *", log.job(0))
		stop := start(t, s)
		l.FailNext(1 << 30)
		sleepUntil(t0.Add(70 * time.Second))
		if err := s.Remove("job"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		retries := len(obs.of("lock_retry"))
		l.FailNext(0)
		sleepUntil(t0.Add(5 * time.Minute))
		stop()
		if retries == 0 || len(obs.of("lock_retry")) != retries {
			t.Errorf("%d retries before Remove, %d in all; want some, and none after", retries, len(obs.of("lock_retry")))
		}
		if skips := obs.of("skipped"); len(skips) != 0 {
			t.Errorf("skips %+v, want none", skips)
		}
		if runs := log.all(); len(runs) != 0 {
			t.Errorf("runs %+v, want none", runs)
		}
	})
}

func TestEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		errJob := errors.New("job failed")
		var fail atomic.Bool
		release := make(chan struct{})
		s := newScheduler(t, locker())
		mustAdd(t, s, "b-flaky", "*/2 * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
			if fail.Load() {
				return errJob
			}
			return nil
		}))
		mustAdd(t, s, "a-slow", "@hourly", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
			<-release
			return nil
		}))
		want := []scheduler.Entry{
			{Name: "a-slow", Spec: "@hourly", Next: t0.Add(time.Hour)},
			{Name: "b-flaky", Spec: "*/2 * * * *", Next: t0.Add(2 * time.Minute)},
		}
		if got := s.Entries(); !slices.EqualFunc(got, want, entryEqual) {
			t.Errorf("entries before Run:\n%+v\nwant\n%+v", got, want)
		}
		stop := start(t, s)

		sleepUntil(t0.Add(time.Hour + time.Second))
		want = []scheduler.Entry{
			{Name: "a-slow", Spec: "@hourly", Next: t0.Add(2 * time.Hour), Prev: t0.Add(time.Hour), Running: true},
			{Name: "b-flaky", Spec: "*/2 * * * *", Next: t0.Add(time.Hour + 2*time.Minute), Prev: t0.Add(time.Hour), LastResult: "success"},
		}
		if got := s.Entries(); !slices.EqualFunc(got, want, entryEqual) {
			t.Errorf("entries at 01:00:01:\n%+v\nwant\n%+v", got, want)
		}

		fail.Store(true)
		close(release)
		sleepUntil(t0.Add(time.Hour + 2*time.Minute + time.Second))
		got := s.Entries()
		if e := got[0]; e.Running || e.LastResult != "success" {
			t.Errorf("a-slow: %+v, want finished with success", e)
		}
		if e := got[1]; e.LastResult != "failure" || !errors.Is(e.LastErr, errJob) || !e.Prev.Equal(t0.Add(time.Hour+2*time.Minute)) {
			t.Errorf("b-flaky: %+v, want the 01:02 tick failed", e)
		}
		stop()
	})
}

// TestEntryZoneAndOptions: an entry carries the zone its spec is read in
// (the spec's prefix, else WithLocation's) and the job's options as Add
// applied them, defaults included.
func TestEntryZoneAndOptions(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	s := newScheduler(t, locker(), scheduler.WithLocation(paris))
	nop := scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })
	mustAdd(t, s, "a-default", "@hourly", nop)
	mustAdd(t, s, "b-tokyo", "CRON_TZ=Asia/Tokyo 0 3 * * *", nop, scheduler.WithLockTTL(time.Minute),
		scheduler.WithRunTimeout(10*time.Minute), scheduler.WithMisfireGrace(2*time.Minute),
		scheduler.WithCatchUp(time.Hour), scheduler.WithRetry(3, 5*time.Second))
	got := s.Entries()
	want := []scheduler.Entry{
		{Name: "a-default", Spec: "@hourly", Location: paris, LockTTL: 30 * time.Second, MisfireGrace: time.Minute, Attempts: 1},
		{Name: "b-tokyo", Spec: "CRON_TZ=Asia/Tokyo 0 3 * * *", Location: tokyo, LockTTL: time.Minute, RunTimeout: 10 * time.Minute,
			MisfireGrace: 2 * time.Minute, CatchUp: time.Hour, Attempts: 3, Backoff: 5 * time.Second},
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Location.String() != w.Location.String() || g.LockTTL != w.LockTTL || g.RunTimeout != w.RunTimeout ||
			g.MisfireGrace != w.MisfireGrace || g.CatchUp != w.CatchUp || g.Attempts != w.Attempts || g.Backoff != w.Backoff {
			t.Errorf("entry %d:\n%+v\nwant\n%+v", i, g, w)
		}
	}
}

func entryEqual(a, b scheduler.Entry) bool {
	return a.Name == b.Name && a.Spec == b.Spec && a.Next.Equal(b.Next) && a.Prev.Equal(b.Prev) &&
		a.Running == b.Running && a.LastResult == b.LastResult && a.LastSkip == b.LastSkip && errors.Is(a.LastErr, b.LastErr)
}

// TestAddWhileRunning checks that a job added to a running scheduler gets
// its ticks.
func TestAddWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		var log runLog
		s := newScheduler(t, locker())
		mustAdd(t, s, "daily", "@daily", noop)
		stop := start(t, s)
		sleepUntil(t0.Add(90 * time.Second))
		mustAdd(t, s, "late", "* * * * *", log.job(0))
		sleepUntil(t0.Add(4*time.Minute + 30*time.Second))
		stop()
		if got, want := log.ticks(), expectTicks(t0.Add(90*time.Second), t0.Add(4*time.Minute), time.Minute); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("ran %v, want %v", got, want)
		}
	})
}

// TestDefaultMisfireGrace pins the default grace of one minute: a tick
// noticed a minute late runs, one noticed 61 seconds late does not.
func TestDefaultMisfireGrace(t *testing.T) {
	for _, late := range []time.Duration{time.Minute, time.Minute + time.Second} {
		t.Run(late.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				var offset atomic.Int64
				clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
				var log runLog
				obs := &recorder{}
				s := newScheduler(t, locker(), scheduler.WithClock(clock), scheduler.WithObserver(obs.Observe))
				mustAdd(t, s, "hourly", "@hourly", log.job(0))
				stop := start(t, s)
				// The loop's last sleep before 01:00 starts at 00:59; the
				// clock then jumps, and the loop wakes at 01:00 real time.
				sleepUntil(t0.Add(59*time.Minute + 30*time.Second))
				offset.Store(int64(late))
				sleepUntil(t0.Add(61 * time.Minute))
				stop()
				ran := len(log.all()) == 1
				misfired := len(obs.skips("misfire")) == 1
				if wantRun := late <= time.Minute; ran != wantRun || misfired == wantRun {
					t.Errorf("noticed %v late: ran %v, misfired %v", late, ran, misfired)
				}
			})
		})
	}
}
