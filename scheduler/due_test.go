package scheduler_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/scheduler"
)

// TestDue: Due lists each job's ticks in the window whose claim window
// (misfire grace or catch-up) has ended, none from before the job was
// added, oldest first.
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
	got := s.Due(now.Add(-time.Hour), now.Add(5*time.Minute))
	// 12:04 is still in its grace at 12:05, until 12:05:30.
	want := []time.Time{now, now.Add(time.Minute), now.Add(2 * time.Minute), now.Add(3 * time.Minute)}
	if !slices.Equal(got["minutely"], want) {
		t.Errorf("minutely: %v; want %v", got["minutely"], want)
	}
	if h := got["hourly"]; !slices.Equal(h, []time.Time{now}) {
		t.Errorf("hourly: %v; want only the tick at its adding, not earlier ones", h)
	}
	if got := s.Due(now.Add(time.Minute), now.Add(time.Minute)); len(got) != 0 {
		t.Errorf("empty window: %v", got)
	}
}
