package leakscan

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
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

// TestHeartbeatDocument: the heartbeat key holds the replica's instance
// id, version, job-table digest, start and send time, and, from the second
// heartbeat on, the clock offset the first measured.
func TestHeartbeatDocument(t *testing.T) {
	c := redistest.Start(t, 3)
	_, s := pair(t, c, "replica-1", WithReplicaInfo("v1.4.2", func() string { return "3f2a9c1b7d4e" }))
	s.now = func() time.Time { return time.Now().Add(1500 * time.Millisecond) } // ahead: logged, not refused
	ctx := ctxTimeout(t, time.Minute)
	read := func() engine.Beat {
		t.Helper()
		v, err := c.Node(1).Client(t).Get(ctx, "redcron:hb:replica-1").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(v) > 200 {
			t.Errorf("heartbeat of %d bytes, want it small: %s", len(v), v)
		}
		return engine.ParseBeat(v)
	}
	before := time.Now()
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	b := read()
	if !b.Details() || b.Instance != "replica-1" || b.Version != "v1.4.2" || b.JobTable != "3f2a9c1b7d4e" ||
		b.StartMS != s.started.UnixMilli() || b.Sent().Before(before.Add(time.Second)) {
		t.Errorf("first heartbeat %+v", b)
	}
	if _, ok := b.Offset(); ok {
		t.Errorf("first heartbeat carries an offset before any was measured: %+v", b)
	}
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if off, ok := read().Offset(); !ok || off < 1300*time.Millisecond || off > 1700*time.Millisecond {
		t.Errorf("second heartbeat's offset %v (%v), want the 1.5 s the first measured", off, ok)
	}
}

// TestParseBeat: an older replica's plain number is a heartbeat without
// details, sent then; so is anything else; a document of the format gives
// its fields, unknown ones ignored.
func TestParseBeat(t *testing.T) {
	if b := engine.ParseBeat("1764140005000"); b.Details() || b.SentMS != 1764140005000 {
		t.Errorf("old value: %+v", b)
	}
	for _, v := range []string{"", "junk", `{"v":2,"id":"x","jobs":"y"}`, `{"v":1,"sent_ms":"x"}`} {
		if b := engine.ParseBeat(v); b.Details() || b.JobTable != "" {
			t.Errorf("ParseBeat(%q) = %+v, want no details", v, b)
		}
	}
	b := engine.ParseBeat(`{"v":1,"id":"a","ver":"v2","jobs":"d1","off_ms":-12,"start_ms":5,"sent_ms":9,"skips":[{"job":"j"}]}`)
	if off, ok := b.Offset(); !b.Details() || b.Instance != "a" || b.Version != "v2" || b.JobTable != "d1" ||
		!ok || off != -12*time.Millisecond || b.StartMS != 5 || b.SentMS != 9 {
		t.Errorf("document: %+v", b)
	}
	if again := engine.ParseBeat(b.String()); again.String() != b.String() {
		t.Errorf("round trip: %s, then %s", b, again)
	}
}

// TestWithReplicaInfo: an empty version or a nil function keeps what was
// set before; the default version is the build's; a long version is
// refused.
func TestWithReplicaInfo(t *testing.T) {
	c := redistest.Start(t, 1)
	_, s := pair(t, c, "x")
	if s.cfg.version != engine.MainVersion() || s.cfg.version == "" || s.cfg.jobTable != nil {
		t.Errorf("defaults: version %q, job table set %v", s.cfg.version, s.cfg.jobTable != nil)
	}
	_, s = pair(t, c, "x", WithReplicaInfo("", func() string { return "d" }), WithReplicaInfo("v9", nil))
	if s.cfg.version != "v9" || s.cfg.jobTable == nil || s.cfg.jobTable() != "d" {
		t.Errorf("after two options: version %q, job table set %v", s.cfg.version, s.cfg.jobTable != nil)
	}
	r, _ := pair(t, c, "")
	if _, err := New(r, "x", WithReplicaInfo(strings.Repeat("v", 101), nil)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "WithReplicaInfo") {
		t.Errorf("a 101-byte version: %v", err)
	}
}
