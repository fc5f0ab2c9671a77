package scheduler_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/duehook"
	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/scheduler"
)

// TestDue: the ticks due, which Run hands to the duehook.Hook of its
// context, are each job's ticks in the window whose claim window (misfire
// grace or catch-up) has ended, oldest first, none from before the first
// tick the replica dispatched (none before Run).
func TestDue(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s, err := scheduler.New(schedulertest.NewLocker(), scheduler.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	nop := func(context.Context, scheduler.RunInfo) error { return nil }
	if err := s.Add("minutely", "* * * * *", nop, scheduler.WithMisfireGrace(90*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("hourly", "0 * * * *", nop); err != nil {
		t.Fatal(err)
	}
	hook := &duehook.Hook{}
	if got := hook.Due(now.Add(-time.Hour), now.Add(5*time.Minute)); len(got) != 0 {
		t.Errorf("before Run: %v; want nothing due", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(duehook.NewContext(ctx, hook)) }()
	defer func() { cancel(); <-done }()
	var got map[string][]time.Time
	for got = hook.Due(now.Add(-time.Hour), now.Add(5*time.Minute)); len(got) == 0; got = hook.Due(now.Add(-time.Hour), now.Add(5*time.Minute)) {
		<-time.After(time.Millisecond) // until Run has started
	}
	// The first tick dispatched is 12:01; 12:04 is still in its grace, and
	// its 10 s margin, at 12:05.
	want := []time.Time{now.Add(time.Minute), now.Add(2 * time.Minute), now.Add(3 * time.Minute)}
	if !slices.Equal(got["minutely"], want) {
		t.Errorf("minutely: %v; want %v", got["minutely"], want)
	}
	if h, ok := got["hourly"]; ok {
		t.Errorf("hourly: %v; want none (its first tick is 13:00)", h)
	}
	if got := hook.Due(now.Add(2*time.Minute), now.Add(2*time.Minute)); len(got) != 0 {
		t.Errorf("empty window: %v", got)
	}
}
