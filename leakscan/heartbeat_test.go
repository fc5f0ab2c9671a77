package leakscan

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestClockSkew: a replica whose clock is 3 s ahead of the nodes' learns it
// from its heartbeat (the nodes' TIME) and claims no new lease until its
// clock is back within 2 s; a lease it won before is still extended.
func TestClockSkew(t *testing.T) {
	c := redistest.Start(t, 3)
	var events []Event
	r, s := pair(t, c, "skewed", WithObserver(func(e Event) { events = append(events, e) }))
	var ahead atomic.Int64
	s.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	ctx := ctxTimeout(t, time.Minute)
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if off := events[0].Offset; off.Abs() > 200*time.Millisecond {
		t.Fatalf("offset %v of a clock in step with the nodes'", off)
	}
	held, err := r.TryLock(ctx, "held", 5*time.Second, mutex.Owner("skewed"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)

	ahead.Store(int64(3 * time.Second))
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if off := events[1].Offset; off < 2800*time.Millisecond || off > 3200*time.Millisecond {
		t.Fatalf("offset %v of a clock 3 s ahead", off)
	}
	l, err := r.TryLock(ctx, "new", 5*time.Second, mutex.Owner("skewed"))
	if err == nil {
		_ = l.Release(ctx)
		t.Fatal("a replica 3 s ahead of the nodes won a lease")
	}
	if !errors.Is(err, mutex.ErrNoQuorum) || !strings.Contains(err.Error(), "clock") {
		t.Fatalf("lease for a replica 3 s ahead: %v, want no quorum naming the clock", err)
	}
	if err := held.Extend(ctx); err != nil {
		t.Errorf("a lease won before the skew was not extended: %v", err)
	}

	ahead.Store(int64(500 * time.Millisecond)) // back within the bound
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	l, err = r.TryLock(ctx, "new", 5*time.Second, mutex.Owner("skewed"))
	if err != nil {
		t.Fatalf("lease after the clock came back: %v", err)
	}
	_ = l.Release(ctx)
}

// TestSkewMedian: of an even number of answers, the middle value closer to
// zero counts, so that one node's bad clock never decides alone; fewer
// answers than a quorum change nothing.
func TestSkewMedian(t *testing.T) {
	var k skew
	for _, tc := range []struct {
		offsets []time.Duration
		want    time.Duration
	}{
		{[]time.Duration{0, 5 * time.Second}, 0},
		{[]time.Duration{-5 * time.Second, 0}, 0},
		{[]time.Duration{3 * time.Second, -time.Second, 3 * time.Second}, 3 * time.Second},
		{[]time.Duration{9 * time.Second}, 3 * time.Second}, // below the quorum of 2: the last stays
	} {
		if got := k.record(tc.offsets, 2); got != tc.want {
			t.Errorf("record(%v) = %v, want %v", tc.offsets, got, tc.want)
		}
	}
}
