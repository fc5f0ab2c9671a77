package mutex_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestEventOccurrence checks that the events of a lock claiming an
// occurrence carry it, to the millisecond, whatever their outcome, and
// that those of a lock without one carry the zero time.
func TestEventOccurrence(t *testing.T) {
	c := redistest.Start(t, 3)
	rec := &recorder{}
	r := newRedlock(t, c, mutex.WithObserver(rec.ObserveLock))
	ctx := ctxTimeout(t, time.Minute)
	tick := time.Now().Truncate(time.Hour).Add(123456789) // the sub-millisecond part is dropped
	want := tick.Truncate(time.Millisecond)

	check := func(what string, kind string, wantErr bool, want time.Time) {
		t.Helper()
		ev, ok := rec.last(kind)
		switch {
		case !ok:
			t.Fatalf("%s: no %v event", what, kind)
		case (ev.Err != nil) != wantErr:
			t.Fatalf("%s: %v event with error %v", what, kind, ev.Err)
		case !ev.Occurrence.Equal(want):
			t.Errorf("%s: %v event's Occurrence %v, want %v", what, kind, ev.Occurrence, want)
		}
	}

	l, err := r.TryLock(ctx, "report", 2*time.Second, mutex.Occurrence(tick))
	if err != nil {
		t.Fatal(err)
	}
	check("won", "acquire", false, want)
	if err := l.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	check("extended", "extend", false, want)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	check("released", "release", false, want)

	if _, err := r.TryLock(ctx, "report", 2*time.Second, mutex.Occurrence(tick)); !errors.Is(err, mutex.ErrAlreadyRun) {
		t.Fatalf("the same occurrence again: %v, want ErrAlreadyRun", err)
	}
	check("refused as already run", "acquire", true, want)

	res := r.TryLockAll(ctx, []mutex.Request{
		{Name: "batch-a", TTL: 2 * time.Second, Options: []mutex.LockOption{mutex.Occurrence(tick)}},
		{Name: "batch-b", TTL: 2 * time.Second},
	})
	for i, x := range res {
		if x.Err != nil {
			t.Fatalf("batch lock %d: %v", i, x.Err)
		}
		defer x.Lock.Release(ctx)
	}
	got := map[string]time.Time{}
	rec.mu.Lock()
	for _, ev := range rec.events {
		if ev.Op == "acquire" && ev.Err == nil {
			got[ev.Name] = ev.Occurrence
		}
	}
	rec.mu.Unlock()
	if !got["batch-a"].Equal(want) || !got["batch-b"].IsZero() {
		t.Errorf("batch events' Occurrence: a %v, b %v; want %v and the zero time", got["batch-a"], got["batch-b"], want)
	}

	plain, err := r.TryLock(ctx, "plain", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	check("without an occurrence", "acquire", false, time.Time{})
	if err := plain.Release(ctx); err != nil {
		t.Fatal(err)
	}
	check("released, without an occurrence", "release", false, time.Time{})
}

// TestObserversCompose: every observer given receives every lock event.
func TestObserversCompose(t *testing.T) {
	c := redistest.Start(t, 1)
	var first, second atomic.Int32
	r := newRedlock(t, c,
		mutex.WithObserver(func(mutex.Event) { first.Add(1) }),
		mutex.WithObserver(func(mutex.Event) { second.Add(1) }))
	ctx := ctxTimeout(t, 10*time.Second)
	l, err := r.TryLock(ctx, "job", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if a, b := first.Load(), second.Load(); a != 1 || b != 1 {
		t.Fatalf("observers saw %d and %d acquire events, want 1 each", a, b)
	}
}
