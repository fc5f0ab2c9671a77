package mutex_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestReentrant acquires a lock again under its KeepAlive context, with
// Lock and TryLock, on real redis-servers: the handles share the hold and
// its fence; the watchdog keeps the lock alive past its TTL after the
// first handle's release, while the others hold; and the lock leaves the
// nodes only when the last handle is released.
func TestReentrant(t *testing.T) {
	const ttl = 900 * time.Millisecond
	c := redistest.Start(t, 3)
	extended := make(chan struct{}, 100)
	r := newRedlock(t, c, mutex.WithNodeTimeout(100*time.Millisecond), mutex.WithObserver(func(e mutex.Event) {
		if e.Op == "extend" && e.Err == nil {
			select {
			case extended <- struct{}{}:
			default: // not waited for
			}
		}
	}))
	other := newRedlock(t, c, mutex.WithNodeTimeout(100*time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	heldElsewhere := func(when string) {
		t.Helper()
		if l, err := other.TryLock(ctx, "migrate", ttl); !errors.Is(err, mutex.ErrHeld) {
			t.Fatalf("%s: another Redlock's TryLock: %v, %v; want ErrHeld", when, l, err)
		}
	}

	outer, err := r.Lock(ctx, "migrate", ttl)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := outer.KeepAlive(ctx)
	defer stop()
	inner, err := r.Lock(kctx, "migrate", ttl)
	if err != nil {
		t.Fatalf("Lock under the holder's context: %v", err)
	}
	again, err := r.TryLock(kctx, "migrate", ttl)
	if err != nil {
		t.Fatalf("TryLock under the holder's context: %v", err)
	}
	if inner == outer || inner.Fence() != outer.Fence() || again.Fence() != outer.Fence() || inner.Until() != outer.Until() {
		t.Errorf("reentrant handles: fences %d, %d, %d, want one hold's", outer.Fence(), inner.Fence(), again.Fence())
	}
	if _, err := r.TryLock(ctx, "migrate", ttl); !errors.Is(err, mutex.ErrHeld) {
		t.Errorf("TryLock of the same Redlock outside the holder's context: %v, want ErrHeld", err)
	}
	ictx, istop := inner.KeepAlive(context.WithoutCancel(ctx)) // not derived from kctx: it carries the lock all the same
	defer istop()
	third, err := r.TryLock(ictx, "migrate", ttl)
	if err != nil {
		t.Fatalf("TryLock under a reentrant handle's KeepAlive context: %v", err)
	}
	if err := third.Release(ctx); err != nil {
		t.Fatal(err)
	}

	if err := outer.Release(ctx); err != nil {
		t.Fatalf("first handle's release: %v", err)
	}
	for len(extended) > 0 {
		<-extended
	}
	for range 4 { // four extensions: past the TTL since the first handle's release
		select {
		case <-extended:
		case <-kctx.Done():
			t.Fatalf("watchdog stopped with handles left: %v", context.Cause(kctx))
		}
	}
	heldElsewhere("after the first handle's release, four extensions later")
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatalf("second release of a handle: %v", err)
	}
	if ictx.Err() == nil {
		t.Error("the released handle's keepalive context is not done")
	}
	heldElsewhere("with one handle left, one released twice")
	if kctx.Err() != nil {
		t.Fatalf("keepalive context done with a handle left: %v", context.Cause(kctx))
	}

	if err := again.Release(ctx); err != nil {
		t.Fatalf("last handle's release: %v", err)
	}
	if kctx.Err() == nil {
		t.Error("keepalive context not done after the last handle's release")
	}
	k := lockKey(t, r, "migrate")
	for i, s := range c.Nodes() {
		if n, err := s.Client(t).Exists(ctx, k.Lock).Result(); err != nil || n != 0 {
			t.Errorf("node %d: lock key after the last release: %d, %v", i, n, err)
		}
	}
	l, err := other.TryLock(ctx, "migrate", ttl)
	if err != nil {
		t.Fatalf("another Redlock after the last release: %v", err)
	}
	if l.Fence() <= outer.Fence() {
		t.Errorf("next holder's fence %d, not above %d", l.Fence(), outer.Fence())
	}
}

// TestReentrantRefused covers what does not reenter: a claim of an
// occurrence (it contends as any acquisition), another owner, and a lock
// the context carries that was lost since.
func TestReentrantRefused(t *testing.T) {
	const ttl = 900 * time.Millisecond
	c := redistest.Start(t, 3)
	r := newRedlock(t, c, mutex.WithNodeTimeout(100*time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	l, err := r.TryLock(ctx, "report", ttl)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := l.KeepAlive(ctx)
	defer stop()
	if _, err := r.TryLock(kctx, "report", ttl, mutex.Occurrence(time.Now())); !errors.Is(err, mutex.ErrHeld) {
		t.Errorf("claim of an occurrence under the holder's context: %v, want ErrHeld", err)
	}
	if _, err := r.TryLock(kctx, "report", ttl, mutex.Owner("someone-else")); !errors.Is(err, mutex.ErrHeld) {
		t.Errorf("another owner under the holder's context: %v, want ErrHeld", err)
	}
	inner, err := r.TryLock(kctx, "report", ttl)
	if err != nil {
		t.Fatal(err)
	}

	k := lockKey(t, r, "report")
	for i := range 2 {
		if err := c.Node(i).Client(t).Del(ctx, k.Lock).Err(); err != nil {
			t.Fatal(err)
		}
	}
	<-kctx.Done() // the next extension finds a majority lost
	_, err = r.TryLock(context.WithoutCancel(kctx), "report", ttl)
	if !errors.Is(err, mutex.ErrLost) {
		t.Errorf("reentry of a lost lock: %v, want ErrLost", err)
	}
	// Both handles' releases say it was lost: the first's, deferred to
	// the last, as much as the last's, sent to the nodes.
	if err := l.Release(ctx); !errors.Is(err, mutex.ErrLost) {
		t.Errorf("first handle's release of a lost lock: %v, want ErrLost", err)
	}
	if err := inner.Release(ctx); !errors.Is(err, mutex.ErrLost) {
		t.Errorf("last handle's release of a lost lock: %v, want ErrLost", err)
	}
}
