package leakscan

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestLeakScan plants one leak of each class next to a live lock, scans,
// fixes, and checks that the leaks are gone and the live lock untouched.
func TestLeakScan(t *testing.T) {
	c := redistest.Start(t, 3)
	r, s := pair(t, c, "live")
	ctx := ctxTimeout(t, time.Minute)
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := r.TryLock(ctx, "live-job", time.Minute, mutex.Owner("live"))
	if err != nil {
		t.Fatal(err)
	}
	value := func(owner string, age time.Duration) string {
		return engine.Value{Token: engine.NewToken(), Acquired: time.Now().Add(-age), Owner: owner}.String()
	}
	plant := func(nodes []int, key, v string, ttl time.Duration) {
		for _, i := range nodes {
			if err := c.Node(i).Client(t).Set(ctx, key, v, ttl).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := []int{0, 1, 2}
	plant(all, lockKey(t, s, "forever").Lock, value("live", time.Minute), 0)
	plant(all, lockKey(t, s, "abandoned").Lock, value("dead-replica", time.Minute), time.Minute)
	plant([]int{1}, lockKey(t, s, "leftover").Lock, value("live", time.Minute), time.Minute)
	plant(all, lockKey(t, s, "ancient").Lock, value("live", 3*time.Hour), time.Minute)
	plant(all, lockKey(t, s, "junk").Lock, "not ours", time.Minute)
	plant([]int{2}, "redcron:stray", "x", time.Minute)
	plant([]int{0}, lockKey(t, s, "fresh").Lock, value("live", 0), time.Minute) // an acquisition in flight

	s.leaks.MaxAge = time.Hour
	rep, err := s.leaks.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]leaks.Class{
		"forever":       {leaks.NoExpiry},
		"abandoned":     {leaks.Orphaned},
		"leftover":      {leaks.Minority},
		"ancient":       {leaks.OverAge},
		"junk":          {leaks.Unparseable},
		"redcron:stray": {leaks.Unparseable},
		"live-job":      nil,
		"fresh":         nil,
	}
	found := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Kind == "state" {
			if len(f.Classes) > 0 {
				t.Errorf("state of %q reported as %v", f.Name, f.Classes)
			}
			continue
		}
		found[f.Name] = true
		w, ok := want[f.Name]
		if !ok {
			t.Errorf("unexpected finding %q %v", f.Name, f.Classes)
			continue
		}
		if !slices.Equal(f.Classes, w) {
			t.Errorf("%q: classes %v, want %v", f.Name, f.Classes, w)
		}
	}
	for name := range want {
		if !found[name] {
			t.Errorf("%q not found by the scan", name)
		}
	}
	if !slices.Equal(rep.Live, []string{"live"}) {
		t.Errorf("live owners %v", rep.Live)
	}
	for _, class := range leaks.AllClasses() {
		wantN := 1
		if class == leaks.Unparseable {
			wantN = 2
		}
		if rep.Counts[class.String()] != wantN {
			t.Errorf("count of %v: %d, want %d", class, rep.Counts[class.String()], wantN)
		}
	}

	// A lock that changes hands between the scan and the fix is left alone.
	plant(all, lockKey(t, s, "abandoned").Lock, value("new-owner", 0), time.Minute)
	for _, res := range s.leaks.Fix(ctx, rep) {
		if res.Err != nil {
			t.Errorf("fix %s on %s: %v", res.Key, res.Node, res.Err)
		}
		if res.Key == lockKey(t, s, "abandoned").Lock && res.Deleted {
			t.Errorf("fix deleted %s on %s, which changed hands after the scan", res.Key, res.Node)
		}
	}
	after, err := s.leaks.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range after.Leaks() {
		if f.Name != "abandoned" {
			t.Errorf("still leaked after the fix: %q %v", f.Name, f.Classes)
		}
	}
	if err := live.Extend(ctx); err != nil {
		t.Errorf("the live lock was touched by the fix: %v", err)
	}
}

// TestFixLeaksSparesLiveCopies checks that the leak scan judges each copy
// of a lock by its own value, and that FixLeaks deletes only the copies
// that are leaked: a dead owner's leftover, or a live owner's stale one,
// next to a live lock of the same name on a majority, goes; the live
// lock's copies stay.
func TestFixLeaksSparesLiveCopies(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner string        // the leftover's owner
		age   time.Duration // how long ago the leftover was acquired
		class leaks.Class
	}{
		{"dead owner's leftover", "dead", 0, leaks.Orphaned},
		{"live owner's stale leftover", "live", time.Minute, leaks.Minority},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redistest.Start(t, 3)
			r, s := pair(t, c, "live")
			ctx := ctxTimeout(t, time.Minute)
			if err := s.heartbeat(ctx); err != nil {
				t.Fatal(err)
			}
			k := lockKey(t, s, "job")
			leftover := engine.Value{Token: engine.NewToken(), Acquired: time.Now().Add(-tc.age), Owner: tc.owner}.String()
			if err := c.Node(0).Client(t).Set(ctx, k.Lock, leftover, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			live, err := r.TryLock(ctx, "job", time.Minute, mutex.Owner("live"))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := s.leaks.Scan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var f *leaks.Finding
			for i := range rep.Findings {
				if rep.Findings[i].Name == "job" && rep.Findings[i].Kind == "lock" {
					f = &rep.Findings[i]
				}
			}
			if f == nil {
				t.Fatal("no finding for job's lock")
			}
			if !slices.Equal(f.Classes, []leaks.Class{tc.class}) {
				t.Errorf("job's classes %v, want [%v]", f.Classes, tc.class)
			}
			for _, cp := range f.Copies {
				want := []leaks.Class(nil)
				if cp.Value == leftover {
					want = []leaks.Class{tc.class}
				}
				if !slices.Equal(cp.Classes, want) {
					t.Errorf("copy on %s (leftover: %v): classes %v, want %v", cp.Node, cp.Value == leftover, cp.Classes, want)
				}
			}

			results := s.leaks.Fix(ctx, rep, tc.class)
			if len(results) != 1 || !results[0].Deleted {
				t.Errorf("fix results %+v, want one: the leftover, deleted", results)
			}
			if got := c.KeyOn(t, k.Lock); !slices.Equal(got, []bool{false, true, true}) {
				t.Errorf("lock key on nodes after the fix: %v, want only the leftover's gone", got)
			}
			if err := live.Extend(ctx); err != nil {
				t.Errorf("the live lock was touched by the fix: %v", err)
			}
		})
	}
}

// TestLeakScanPartialSparesLiveLock checks that a node that could not be
// scanned is counted as if it held a live lock's copy and its owner's
// heartbeat: a lock held on a majority, one of whose copies, and one of
// whose owner's heartbeats, are on the node not scanned, is neither a
// minority nor orphaned, and FixLeaks leaves it alone.
func TestLeakScanPartialSparesLiveLock(t *testing.T) {
	c := redistest.Start(t, 3)
	r, s := pair(t, c, "live")
	ctx := ctxTimeout(t, time.Minute)
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := r.TryLock(ctx, "job", time.Minute, mutex.Owner("live"))
	if err != nil {
		t.Fatal(err)
	}
	// The lock and the heartbeat are on nodes 0 and 1 only (node 2 missed
	// them), and node 1 refuses SCAN. TryLock returns at a quorum: wait
	// for the copy that was still on its way.
	for _, key := range []string{lockKey(t, s, "job").Lock, s.keys.Heartbeat("live")} {
		for on := c.KeyOn(t, key); !on[0] || !on[1]; on = c.KeyOn(t, key) {
			if ctx.Err() != nil {
				t.Fatalf("%s is on nodes %v; want it on 0 and 1", key, on)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	third := c.Node(2).Client(t)
	if err := third.Del(ctx, lockKey(t, s, "job").Lock, s.keys.Heartbeat("live")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Node(1).Client(t).Do(ctx, "ACL", "SETUSER", "default", "-scan").Err(); err != nil {
		t.Fatal(err)
	}
	s.leaks.Settle = time.Nanosecond
	rep, err := s.leaks.Scan(ctx)
	if err != nil || len(rep.Errors) != 1 {
		t.Fatalf("scan with one node refusing SCAN: %v, node errors %v", err, rep.Errors)
	}
	if leaks := rep.Leaks(); len(leaks) != 0 {
		t.Errorf("leaks %+v, want none: the lock is live on a majority", leaks)
	}
	if got := s.leaks.Fix(ctx, rep); len(got) != 0 {
		t.Errorf("fix results %+v, want none", got)
	}
	if err := live.Extend(ctx); err != nil {
		t.Errorf("the live lock was touched by the fix: %v", err)
	}
}

// TestLeakScanNodeDown: a dead node is reported, the others are scanned.
func TestLeakScanNodeDown(t *testing.T) {
	c := redistest.Start(t, 3)
	_, s := pair(t, c, "")
	c.Node(0).Kill()
	rep, err := s.leaks.Scan(context.Background())
	if err != nil || len(rep.Errors) != 1 {
		t.Fatalf("scan with one node down: %v, node errors %v", err, rep.Errors)
	}
	c.Node(1).Kill()
	c.Node(2).Kill()
	if _, err := s.leaks.Scan(context.Background()); err == nil {
		t.Fatal("scan with every node down succeeded")
	}
}

// TestHeartbeat: a heartbeat reaches the nodes, with a TTL of the
// heartbeat TTL plus the max TTL, and reports each node's answer to the
// observer, so node health stays fresh between jobs.
func TestHeartbeat(t *testing.T) {
	c := redistest.Start(t, 3)
	var events []Event
	_, s := pair(t, c, "replica-1", WithObserver(func(e Event) { events = append(events, e) }))
	ctx := ctxTimeout(t, time.Minute)
	c.Node(2).Kill()
	if err := s.heartbeat(ctx); err != nil {
		t.Fatalf("heartbeat with 2 of 3 nodes: %v", err)
	}
	for i := range 2 {
		ttl, err := c.Node(i).Client(t).PTTL(ctx, "redcron:hb:replica-1").Result()
		if err != nil || ttl <= time.Minute || ttl > 75*time.Second {
			t.Errorf("node %d: heartbeat key TTL %v, %v; want 15s + the max TTL 1m", i, ttl, err)
		}
	}
	if len(events) != 1 || events[0].Scan || events[0].Nodes[c.Node(0).Addr()] != nil || events[0].Nodes[c.Node(2).Addr()] == nil {
		t.Fatalf("heartbeat events %+v", events)
	}
	c.Node(1).Kill()
	if err := s.heartbeat(ctx); err == nil {
		t.Fatal("heartbeat reaching 1 of 3 nodes succeeded")
	}
}

// TestCutOffOwnerNotOrphaned: an owner cut off from the nodes stops
// heartbeating and extending at once, but its lease stays valid for up to
// its TTL. Until then its lock is not orphaned, and a fix does not delete
// it: another replica could take the lock while the holder's job runs.
func TestCutOffOwnerNotOrphaned(t *testing.T) {
	c := redistest.Start(t, 3)
	const lockTTL = 3 * time.Second
	r, s := pair(t, c, "cut-off", mutex.WithMaxTTL(lockTTL))
	s.cfg.beatTTL = 500 * time.Millisecond
	ctx := ctxTimeout(t, time.Minute)
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := r.TryLock(ctx, "job", lockTTL, mutex.Owner("cut-off"))
	if err != nil {
		t.Fatal(err)
	}
	// Cut off now: no more heartbeats or extensions. Wait past the
	// heartbeat's TTL, well within the lease.
	<-time.After(2 * s.cfg.beatTTL)
	if !time.Now().Before(l.Until()) {
		t.Fatal("the lease ran out before the scan; the test's timing is off")
	}
	_, scanner := pair(t, c, "", mutex.WithMaxTTL(lockTTL))
	rep, err := scanner.leaks.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Name == "job" && slices.Contains(f.Classes, leaks.Orphaned) {
			t.Errorf("a lock whose lease is still valid reported orphaned (lease valid for %v more)", time.Until(l.Until()))
		}
	}
	for _, fix := range scanner.leaks.Fix(ctx, rep) {
		if fix.Deleted && fix.Key == lockKey(t, s, "job").Lock {
			t.Errorf("fix deleted a copy of a live lease on %s", fix.Node)
		}
	}
	if got := c.KeyOn(t, lockKey(t, s, "job").Lock); slices.Contains(got, false) {
		t.Errorf("live lease's copies after the fix: %v", got)
	}
}

// TestRestartedNodeKeepsOwnerLive: an owner's heartbeat reached two nodes
// of three; one of them restarts empty. Its heartbeat is now on one node,
// its lock on two: a majority, still valid. One heartbeat is enough to
// count as live, so the lock is not taken for an orphan, and a fix does not
// delete it, which would let another replica take it.
func TestRestartedNodeKeepsOwnerLive(t *testing.T) {
	c := redistest.Start(t, 3)
	r, s := pair(t, c, "owner", mutex.WithNodeTimeout(100*time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	c.Node(2).Pause()
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	c.Node(2).Resume()
	l, err := r.TryLock(ctx, "job", time.Minute, mutex.Owner("owner"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	c.Node(0).Restart()
	rep, err := s.leaks.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Name == "job" && slices.Contains(f.Classes, leaks.Orphaned) {
			t.Errorf("a lock held on a majority reported orphaned: its owner's heartbeat is on one node")
		}
	}
	for _, fix := range s.leaks.Fix(ctx, rep, leaks.Orphaned) {
		if fix.Deleted {
			t.Errorf("fix deleted %s on %s", fix.Key, fix.Node)
		}
	}
}

// TestStaleHeartbeatStopsLeases: while an owner's last successful
// heartbeat is older than its TTL, its leases are neither extended nor
// won, so that they end before its heartbeat key does.
func TestStaleHeartbeatStopsLeases(t *testing.T) {
	c := redistest.Start(t, 1)
	r, s := pair(t, c, "owner")
	s.cfg.beatTTL = 300 * time.Millisecond
	ctx := ctxTimeout(t, time.Minute)
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := r.TryLock(ctx, "job", 5*time.Second, mutex.Owner("owner"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	<-time.After(400 * time.Millisecond) // the heartbeat goes stale
	if err := l.Extend(ctx); err == nil || !strings.Contains(err.Error(), "heartbeat") {
		t.Errorf("extension with a stale heartbeat: %v, want refused", err)
	}
	if other, err := r.TryLock(ctx, "other", 5*time.Second, mutex.Owner("owner")); err == nil || !errors.Is(err, mutex.ErrNotAcquired) {
		if other != nil {
			_ = other.Release(ctx)
		}
		t.Errorf("acquisition with a stale heartbeat: %v, want refused", err)
	}
	if other, err := r.TryLock(ctx, "another owner's", 5*time.Second, mutex.Owner("someone-else")); err != nil {
		t.Errorf("acquisition for another owner: %v", err)
	} else {
		_ = other.Release(ctx)
	}
	if err := s.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx); err != nil {
		t.Errorf("extension after a fresh heartbeat: %v", err)
	}
}
