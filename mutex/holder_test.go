package mutex_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestHeldUntil: a refusal says who holds the lock and until when, as the
// nodes answered, on each of the acquisition's paths: plain commands
// (TryLock), the one-lock script (a claim of an occurrence, a waiting
// Lock) and the script of many locks (TryLockAll).
func TestHeldUntil(t *testing.T) {
	const ttl = 5 * time.Second
	c := redistest.Start(t, 3)
	holder, other := newRedlock(t, c), newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	before := time.Now()
	l, err := holder.TryLock(ctx, "report", ttl, mutex.Owner("replica-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	// The holder's value expires between before+ttl and now+ttl, read by
	// the nodes to the millisecond.
	lo, hi := before.Add(ttl-5*time.Millisecond), time.Now().Add(ttl+5*time.Millisecond)
	check := func(path string, err error) {
		t.Helper()
		var qe *mutex.QuorumError
		if !errors.Is(err, mutex.ErrHeld) || !errors.As(err, &qe) {
			t.Fatalf("%s: %v, want ErrHeld", path, err)
		}
		if qe.HolderUntil.Before(lo) || qe.HolderUntil.After(hi) {
			t.Errorf("%s: HolderUntil %v, want within [%v, %v]", path, qe.HolderUntil, lo, hi)
		}
		for _, res := range qe.Nodes {
			if res.Vote == "held" && (res.HolderUntil.Before(lo) || res.HolderUntil.After(hi)) {
				t.Errorf("%s: node %s: HolderUntil %v, want within [%v, %v]", path, res.Node, res.HolderUntil, lo, hi)
			}
		}
		if want := qe.HolderUntil.UTC().Format("15:04:05.000"); !strings.Contains(err.Error(), `"replica-a" until `) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not name the owner and until when (%s)", path, err, want)
		}
	}
	_, err = other.TryLock(ctx, "report", ttl)
	check("TryLock", err)
	_, err = other.TryLock(ctx, "report", ttl, mutex.Occurrence(time.Now()))
	check("TryLock of an occurrence", err)
	res := other.TryLockAll(ctx, []mutex.Request{{Name: "report", TTL: ttl}, {Name: "another", TTL: ttl}})
	check("TryLockAll", res[0].Err)
	if res[1].Err != nil {
		t.Errorf("TryLockAll's other lock: %v", res[1].Err)
	}
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err = other.Lock(short, "report", ttl)
	check("Lock", err)

	// Extended, the holder holds longer, and the next refusal says so.
	if err := l.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	lo, hi = time.Now().Add(ttl-200*time.Millisecond), time.Now().Add(ttl+5*time.Millisecond)
	_, err = other.TryLock(ctx, "report", ttl)
	check("TryLock after an extension", err)
}
