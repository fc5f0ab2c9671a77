package scheduler

import (
	"context"
	"testing"
	"time"
)

// TestEmitAllocatesNothing: reporting an event of a job without an
// observer of its own (WithJobObserver), to a scheduler-wide observer,
// allocates nothing: a job's observers cost nothing to the jobs without.
func TestEmitAllocatesNothing(t *testing.T) {
	seen := 0
	s, err := New(nopLocker{}, WithObserver(func(Event) { seen++ }))
	if err != nil {
		t.Fatal(err)
	}
	e := &entry{name: "job", cfg: defaultJobConfig()}
	tick := time.Now()
	if n := testing.AllocsPerRun(100, func() {
		s.emit(e, Event{Kind: KindSkipped, Job: e.name, Tick: tick, Skip: skipHeld, Attempts: 1})
	}); n != 0 || seen == 0 {
		t.Errorf("emit: %v allocations per event, %d events seen; want 0 and some", n, seen)
	}
}

// nopLocker is a Locker that is never asked for a lock.
type nopLocker struct{ Locker }

func (nopLocker) AcquireAll(context.Context, []LockRequest) []LockResult { return nil }
