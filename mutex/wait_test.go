package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
)

// lockResult is what a Lock call returned.
type lockResult struct {
	l   *mutex.Lock
	err error
}

// lockAsync calls r.Lock(ctx, name, 10s) in a goroutine and returns where
// its result comes.
func lockAsync(ctx context.Context, r *mutex.Redlock, name string) <-chan lockResult {
	got := make(chan lockResult, 1)
	go func() {
		l, err := r.Lock(ctx, name, 10*time.Second)
		got <- lockResult{l, err}
	}()
	return got
}

// waitTurn waits until every client sees a waiter's turn set on the lock
// called name (the waiter was refused as a waiter, after its subscription
// was confirmed), and returns the turn.
func waitTurn(t *testing.T, ctx context.Context, r *mutex.Redlock, clients []*redis.Client, name string) string {
	t.Helper()
	k := lockKey(t, r, name)
	for {
		var turn string
		all := true
		for _, c := range clients {
			v, err := c.Get(ctx, k.Turn).Result()
			all = all && err == nil
			turn = v
		}
		if all {
			return turn
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no waiter's turn on the lock %q: %v", name, ctx.Err())
		case <-time.After(5 * time.Millisecond): // polling the servers: no event to wait on
		}
	}
}

// clientsOf returns a client of every server of c, dialled directly.
func clientsOf(t *testing.T, c *redistest.Cluster) []*redis.Client {
	var out []*redis.Client
	for _, s := range c.Nodes() {
		cl := redis.NewClient(&redis.Options{Addr: s.ServerAddr()})
		t.Cleanup(func() { _ = cl.Close() })
		out = append(out, cl)
	}
	return out
}

// TestLockWokenByRelease: a waiter whose retry delay is 5 s gets the lock
// as soon as its holder releases it: before its retry timer could fire.
func TestLockWokenByRelease(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			c := redistest.Start(t, n)
			holder := newRedlock(t, c)
			waiter := newRedlock(t, c, mutex.WithRetryDelay(5*time.Second))
			ctx := ctxTimeout(t, time.Minute)
			held, err := holder.TryLock(ctx, "job", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			got := lockAsync(wctx, waiter, "job")
			waitTurn(t, ctx, waiter, clientsOf(t, c), "job")
			// Its last try was at most a few ms ago: its timer fires 2.5 s
			// after it at the earliest.
			stop := time.AfterFunc(2*time.Second, cancel)
			defer stop.Stop()
			if err := held.Release(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("the waiter was not woken by the release before its retry timer: %v", r.err)
			}
			if err := r.l.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLockWokenAfterLostNotification: a release published while the
// waiter's subscription is cut reaches nobody; the waiter still gets the
// lock, once its subscription is back, before its retry timer could fire.
func TestLockWokenAfterLostNotification(t *testing.T) {
	c := redistest.Start(t, 1, redistest.WithProxy())
	s := c.Node(0)
	waiter := newRedlock(t, c, mutex.WithRetryDelay(5*time.Second)) // through the proxy
	direct := clientsOf(t, c)
	node, err := store.NewNode("direct", direct[0])
	if err != nil {
		t.Fatal(err)
	}
	holder := newRedlockOn(t, []*store.Node{node})
	ctx := ctxTimeout(t, time.Minute)
	held, err := holder.TryLock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := lockAsync(wctx, waiter, "job")
	waitTurn(t, ctx, waiter, direct, "job")
	s.Cut() // the waiter's connections closed, its subscription with them
	channel := lockKey(t, waiter, "job").Lock
	for { // until the server has seen the subscription go
		n, err := direct[0].PubSubNumSub(ctx, channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n[channel] == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the waiter's subscription outlived the cut: %v", ctx.Err())
		case <-time.After(5 * time.Millisecond): // polling the server: no event to wait on
		}
	}
	if err := held.Release(ctx); err != nil { // published to nobody
		t.Fatal(err)
	}
	s.Heal()
	stop := time.AfterFunc(2*time.Second, cancel)
	defer stop.Stop()
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter whose notification was lost was not woken before its retry timer: %v", r.err)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Error(err)
	}
}

// TestLockTurnAcrossRedlocks: while a waiter of one Redlock has the turn,
// the lock released and its waiter slow to take it, another Redlock's
// TryLock is refused, and its Lock waits behind: the waiter that began
// first gets the lock first.
func TestLockTurnAcrossRedlocks(t *testing.T) {
	c := redistest.Start(t, 1, redistest.WithProxy())
	s := c.Node(0)
	first := newRedlock(t, c, mutex.WithRetryDelay(time.Second), mutex.WithNodeTimeout(2*time.Second)) // through the proxy
	direct := clientsOf(t, c)
	node, err := store.NewNode("direct", direct[0])
	if err != nil {
		t.Fatal(err)
	}
	other := newRedlockOn(t, []*store.Node{node}, mutex.WithRetryDelay(time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	held, err := other.TryLock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	firstGot := lockAsync(ctx, first, "job")
	turn := waitTurn(t, ctx, first, direct, "job")
	s.SetLatency(100 * time.Millisecond) // the first waiter takes the lock late
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := other.TryLock(ctx, "job", 10*time.Second); err == nil {
		_ = l.Release(ctx)
		t.Fatal("a TryLock won the lock while a waiter had the turn")
	} else if qe := (*mutex.QuorumError)(nil); !errors.Is(err, mutex.ErrHeld) || !errors.As(err, &qe) || qe.Holder != "turn "+turn {
		t.Errorf("TryLock during a waiter's turn: %v; want held by the turn %s", err, turn)
	}
	otherGot := lockAsync(ctx, other, "job")
	r := <-firstGot
	if r.err != nil {
		t.Fatalf("the first waiter: %v", r.err)
	}
	select {
	case o := <-otherGot:
		t.Fatalf("the later waiter got the lock (%v) while the first held it", o.err)
	default:
	}
	s.SetLatency(0)
	if err := r.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if o := <-otherGot; o.err != nil {
		t.Fatalf("the later waiter, after the first released: %v", o.err)
	} else {
		_ = o.l.Release(ctx)
	}
}
