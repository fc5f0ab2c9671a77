package scheduler_test

import (
	"context"
	"testing"

	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/scheduler/schedulertest"
)

// TestObserversCompose: every observer given receives every event, so an
// audit observer added next to the metrics one does not silence it.
func TestObserversCompose(t *testing.T) {
	var first, second []scheduler.EventKind
	s := newScheduler(t, schedulertest.NewLocker(),
		scheduler.WithObserver(scheduler.ObserverFunc(func(e scheduler.Event) { first = append(first, e.Kind) })),
		scheduler.WithObserver(scheduler.ObserverFunc(func(e scheduler.Event) { second = append(second, e.Kind) })))
	mustAdd(t, s, "job", "@hourly", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
	if len(first) != 1 || len(second) != 1 || first[0] != scheduler.EventJobAdded || second[0] != scheduler.EventJobAdded {
		t.Fatalf("observers saw %v and %v, want one EventJobAdded each", first, second)
	}
}
