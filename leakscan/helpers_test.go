package leakscan

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
)

// pair returns a Redlock over c's servers (trusted: no restart quarantine)
// whose owner check is the Scanner's, and the Scanner for owner, with the
// Scanner options given (mutex options are given to the Redlock).
func pair(t testing.TB, c *redistest.Cluster, owner string, opts ...any) (*mutex.Redlock, *Scanner) {
	t.Helper()
	var nodes []*store.Node
	for _, s := range c.Nodes() {
		n, err := store.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	var s *Scanner
	lockOpts := []mutex.Option{mutex.WithTrustedNodes(), mutex.WithOwnerCheck(func(o string, extending bool) error { return s.Check(o, extending) })}
	var scanOpts []Option
	for _, o := range opts {
		switch o := o.(type) {
		case mutex.Option:
			lockOpts = append(lockOpts, o)
		case Option:
			scanOpts = append(scanOpts, o)
		default:
			t.Fatalf("pair: option of type %T", o)
		}
	}
	r, err := mutex.New(nodes, lockOpts...)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = New(r, owner, scanOpts...); err != nil {
		t.Fatal(err)
	}
	return r, s
}

func lockKey(t testing.TB, s *Scanner, name string) engine.LockKeys {
	t.Helper()
	k, err := s.keys.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
