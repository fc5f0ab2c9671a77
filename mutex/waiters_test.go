package mutex

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/store"
)

// inLine waits until the Redlock's line for name holds n waiters.
func inLine(t *testing.T, ctx context.Context, r *Redlock, name string, n int) {
	t.Helper()
	for {
		r.waits.mu.Lock()
		got := len(r.waits.lines[name])
		r.waits.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d waiters in line for %q, want %d: %v", got, name, n, ctx.Err())
		case <-time.After(time.Millisecond): // Lock has no event to wait on before it joins
		}
	}
}

// TestWaitersFirstComeFirstServed: the waiters of one Redlock get the lock
// in the order they began to wait, however the retries fall (1 ms apart),
// and the line and the subscriptions are gone once they are served.
func TestWaitersFirstComeFirstServed(t *testing.T) {
	c := redistest.Start(t, 1)
	n, err := store.NewNode(c.Node(0).Addr(), c.Node(0).Client(t))
	if err != nil {
		t.Fatal(err)
	}
	r, err := New([]*store.Node{n}, WithTrustedNodes(), WithRetryDelay(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	held, err := r.TryLock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 5
	order := make(chan int, waiters)
	errs := make(chan error, waiters)
	for i := range waiters {
		go func() {
			l, err := r.Lock(ctx, "job", 10*time.Second)
			if err != nil {
				errs <- err
				return
			}
			order <- i
			errs <- l.Release(ctx)
		}()
		inLine(t, ctx, r, "job", i+1)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	if fmt.Sprint(got) != "[0 1 2 3 4]" {
		t.Errorf("served in the order %v, want the order they began to wait", got)
	}
	inLine(t, ctx, r, "job", 0)
	r.waits.mu.Lock()
	subscribed := len(r.waits.names)
	r.waits.mu.Unlock()
	if subscribed != 0 {
		t.Errorf("%d channels still subscribed with no waiter", subscribed)
	}
	if err := r.Flush(ctx); err != nil { // the turns taken back
		t.Fatal(err)
	}
	ks, _ := engine.NewKeyspace("")
	k, _ := ks.Lock("job")
	if v, err := c.Node(0).Client(t).Exists(ctx, k.Turn).Result(); err != nil || v != 0 {
		t.Errorf("the turn left behind: %v, %v", v, err)
	}
}
