package mutex_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
)

// TestOptionErrors: every bad option or argument is refused with an error
// matching ErrInvalidOption that names the option or the argument.
func TestOptionErrors(t *testing.T) {
	c := redistest.Start(t, 1)
	nodes := nodesOf(t, c)
	for _, tc := range []struct {
		name  string
		nodes []*store.Node
		opts  []mutex.Option
		want  string
	}{
		{"no nodes", nil, nil, "empty node list"},
		{"nil node", []*store.Node{nil}, nil, "node 0 is nil"},
		{"duplicate node", []*store.Node{nodes[0], nodes[0]}, nil, "appears twice"},
		{"prefix", nodes, []mutex.Option{mutex.WithKeyPrefix("a b")}, "WithKeyPrefix"},
		{"node timeout", nodes, []mutex.Option{mutex.WithNodeTimeout(0)}, "WithNodeTimeout"},
		{"retry", nodes, []mutex.Option{mutex.WithRetryDelay(0)}, "WithRetryDelay"},
		{"max ttl", nodes, []mutex.Option{mutex.WithMaxTTL(time.Millisecond)}, "WithMaxTTL"},
		{"max ttl vs node timeout", nodes, []mutex.Option{mutex.WithMaxTTL(100 * time.Millisecond)}, "WithMaxTTL"},
		{"max hold", nodes, []mutex.Option{mutex.WithMaxHold(0)}, "WithMaxHold"},
		{"state ttl", nodes, []mutex.Option{mutex.WithStateTTL(time.Second)}, "WithStateTTL"},
		{"logger", nodes, []mutex.Option{mutex.WithLogger(nil)}, "WithLogger"},
		{"nil option", nodes, []mutex.Option{nil}, "nil Option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mutex.New(tc.nodes, tc.opts...)
			if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalidOption naming %q", err, tc.want)
			}
		})
	}
}

// TestArgumentErrors: bad lock names and TTLs are refused before any I/O.
func TestArgumentErrors(t *testing.T) {
	c := redistest.Start(t, 1)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		want string
	}{
		{"", time.Second, "lock name is empty"},
		{"a{b}", time.Second, "not allowed"},
		{"short", time.Millisecond, "too short"},
		{"long", time.Hour, "max TTL"},
	} {
		_, err := r.TryLock(ctx, tc.name, tc.ttl)
		if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TryLock(%q, %v) = %v, want ErrInvalidOption with %q", tc.name, tc.ttl, err, tc.want)
		}
		_, err = r.Lock(ctx, tc.name, tc.ttl)
		if !errors.Is(err, mutex.ErrInvalidOption) {
			t.Errorf("Lock(%q, %v) = %v, want ErrInvalidOption", tc.name, tc.ttl, err)
		}
	}
	_, err := r.TryLock(ctx, "report", time.Second, mutex.Owner("a"), nil)
	if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), `lock "report": nil LockOption`) {
		t.Errorf("TryLock with a nil LockOption = %v, want ErrInvalidOption naming the lock and the nil option", err)
	}
}

// TestCanceledContext: a cancelled context ends an attempt with an error
// that matches both ErrNotAcquired and the context's error.
func TestCanceledContext(t *testing.T) {
	c := redistest.Start(t, 3)
	r := newRedlock(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.TryLock(ctx, "x", time.Second)
	if !errors.Is(err, mutex.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want ErrNotAcquired and context.Canceled", err)
	}
	l, err := r.TryLock(ctxTimeout(t, time.Minute), "y", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Release does not depend on the caller's context staying alive.
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release on a cancelled context: %v", err)
	}
	if err := l.Extend(ctx); !errors.Is(err, mutex.ErrLost) {
		t.Fatalf("extend after release: %v, want ErrLost", err)
	}
	kctx, stop := l.KeepAlive(ctxTimeout(t, time.Minute))
	defer stop()
	if cause := context.Cause(kctx); !errors.Is(cause, mutex.ErrLost) {
		t.Fatalf("keepalive after release: cause %v, want ErrLost", cause)
	}
}
