package scheduler_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/scheduler"
)

// TestReplicasRunEachTickOnce runs three replicas sharing one locker and
// checks that every tick ran exactly once, also when their clocks differ.
func TestReplicasRunEachTickOnce(t *testing.T) {
	schedules := []struct {
		name    string
		spec    string
		period  time.Duration
		span    time.Duration
		jobTime time.Duration
	}{
		{"minutely for an hour", "0 * * * * *", time.Minute, time.Hour, 10 * time.Second},
		{"secondly for five minutes", "* * * * * *", time.Second, 5 * time.Minute, 100 * time.Millisecond},
	}
	clocks := []struct {
		name    string
		offsets []time.Duration
	}{
		{"same clocks", []time.Duration{0, 0, 0}},
		{"skewed clocks", []time.Duration{0, 150 * time.Millisecond, 400 * time.Millisecond}},
	}
	for _, sc := range schedules {
		for _, cl := range clocks {
			t.Run(sc.name+"/"+cl.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					t0 := time.Now()
					l := locker()
					var log runLog
					obs := &recorder{}
					var stops []func()
					for i, off := range cl.offsets {
						s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithClock(offsetClock(off)),
							scheduler.WithInstanceID(fmt.Sprintf("replica-%d", i)), scheduler.WithObserver(obs.Observe))
						mustAdd(t, s, "job", sc.spec, log.job(sc.jobTime))
						stops = append(stops, start(t, s))
					}
					end := t0.Add(sc.span)
					sleepUntil(end.Add(sc.period / 2))
					stopAll(stops...)

					want := expectTicks(t0, end, sc.period)
					got := log.ticks()
					if !slices.EqualFunc(got, want, time.Time.Equal) {
						t.Fatalf("ran %d ticks, want each of %d once; ran %v", len(got), len(want), got)
					}
					runs := log.all()
					for i := 1; i < len(runs); i++ {
						if runs[i].Fence <= runs[i-1].Fence {
							t.Errorf("fence of tick %v is %d, not above %d", runs[i].Tick, runs[i].Fence, runs[i-1].Fence)
						}
					}
					// Every replica handled every tick: one ran it, the
					// others were refused in the normal ways.
					handled := len(obs.of("run_started")) +
						len(obs.skips("held")) + len(obs.skips("already_run"))
					if wantHandled := len(want) * len(cl.offsets); handled != wantHandled {
						t.Errorf("%d ticks handled (run, held elsewhere or already run), want %d", handled, wantHandled)
					}
					for _, ev := range obs.of("skipped") {
						if ev.Skip != "held" && ev.Skip != "already_run" {
							t.Errorf("unexpected skip: %s of tick %v on %s (%v)", ev.Skip, ev.Tick, ev.Instance, ev.Err)
						}
					}
					for _, ev := range obs.finished() {
						if ev.Result != "success" {
							t.Errorf("tick %v: result %s (%v)", ev.Tick, ev.Result, ev.Err)
						}
					}
				})
			})
		}
	}
}
