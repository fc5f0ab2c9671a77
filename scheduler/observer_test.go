package scheduler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/scheduler"
)

// TestObserversCompose: every observer given receives every event, so an
// audit observer added next to the metrics one does not silence it.
func TestObserversCompose(t *testing.T) {
	var first, second []string
	s := newScheduler(t, schedulertest.NewLocker(),
		scheduler.WithObserver(func(e scheduler.Event) { first = append(first, e.Kind) }),
		scheduler.WithObserver(func(e scheduler.Event) { second = append(second, e.Kind) }))
	mustAdd(t, s, "job", "@hourly", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
	if len(first) != 1 || len(second) != 1 || first[0] != "job_added" || second[0] != "job_added" {
		t.Fatalf("observers saw %v and %v, want one EventJobAdded each", first, second)
	}
}

// TestTriggerUnknownBeforeRun: Trigger of a name no job has fails at once,
// before Run too, instead of waiting for Run or its context.
func TestTriggerUnknownBeforeRun(t *testing.T) {
	s := newScheduler(t, schedulertest.NewLocker())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := s.Trigger(ctx, "nope"); !errors.Is(err, scheduler.ErrUnknownJob) || time.Since(start) > 10*time.Second {
		t.Fatalf("Trigger(nope) before Run = %v after %v, want ErrUnknownJob at once", err, time.Since(start))
	}
}
