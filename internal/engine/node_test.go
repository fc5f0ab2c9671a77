package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

func setup(t *testing.T) (*engine.Node, *redistest.Server, engine.LockKeys) {
	t.Helper()
	c := redistest.Start(t, 1)
	s := c.Node(0)
	n, err := engine.NewNode(s.Addr(), s.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := engine.NewKeyspace("t")
	k, _ := ks.Lock("job")
	return n, s, k
}

func TestNodeLockScripts(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	a := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Occurrence: 1000}.String()
	b := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Occurrence: 1000}.String()

	rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: a, TTL: time.Minute, Occurrence: 1000, WantInfo: true})
	if err != nil || rep.Status != engine.Acquired || rep.Fence != 0 || rep.Info == nil || rep.Info.RunID == "" {
		t.Fatalf("first acquire: %+v, %v", rep, err)
	}
	rep, err = n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: a, TTL: time.Minute, Occurrence: 1000})
	if err != nil || rep.Status != engine.Acquired || rep.Info != nil {
		t.Fatalf("same value again: %+v, %v", rep, err)
	}
	rep, err = n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: b, TTL: time.Minute, Occurrence: 1000})
	if err != nil || rep.Status != engine.Held || rep.Holder != a {
		t.Fatalf("other value: %+v, %v", rep, err)
	}
	if ok, err := n.Commit(ctx, engine.CommitRequest{Keys: k, Value: b, Fence: 99, Occurrence: 5000}, time.Hour); ok || err != nil {
		t.Fatalf("commit by a non-holder: %v, %v", ok, err)
	}
	if ok, err := n.Commit(ctx, engine.CommitRequest{Keys: k, Value: a, Fence: 42, Occurrence: 1000}, time.Hour); !ok || err != nil {
		t.Fatalf("commit: %v, %v", ok, err)
	}
	if ok, err := n.Commit(ctx, engine.CommitRequest{Keys: k, Value: a, Fence: 41, Occurrence: 999}, time.Hour); !ok || err != nil {
		t.Fatalf("lower commit: %v, %v", ok, err)
	}
	st, _ := s.Client(t).HGetAll(ctx, k.State).Result()
	if st[k.FenceField()] != "42" || st[k.MarkField()] != "1000" {
		t.Fatalf("state after commits: %v, want fence 42 (never lowered) and mark 1000", st)
	}
	if ttl, _ := s.Client(t).PTTL(ctx, k.State).Result(); ttl <= 0 {
		t.Fatalf("state TTL %v", ttl)
	}
	if ok, err := n.Extend(ctx, k, b, time.Hour); ok || err != nil {
		t.Fatalf("extend by a non-holder: %v, %v", ok, err)
	}
	if ok, err := n.Extend(ctx, k, a, time.Hour); !ok || err != nil {
		t.Fatalf("extend: %v, %v", ok, err)
	}
	if ttl, _ := s.Client(t).PTTL(ctx, k.Lock).Result(); ttl < 59*time.Minute {
		t.Fatalf("TTL after extend: %v", ttl)
	}
	if ok, err := n.Release(ctx, k, b, 0, time.Hour, engine.LedgerWrite{}); ok || err != nil {
		t.Fatalf("release by a non-holder: %v, %v", ok, err)
	}
	if ok, err := n.Release(ctx, k, a, 2000, time.Hour, engine.LedgerWrite{}); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	rep, err = n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: b, TTL: time.Minute, Occurrence: 2000})
	if err != nil || rep.Status != engine.AlreadyRun || rep.Mark != 2000 || rep.Fence != 42 {
		t.Fatalf("occurrence at the mark: %+v, %v", rep, err)
	}
	rep, err = n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: b, TTL: time.Minute, Occurrence: 2001})
	if err != nil || rep.Status != engine.Acquired {
		t.Fatalf("occurrence past the mark: %+v, %v", rep, err)
	}
}

func TestNodeDeleteIfValue(t *testing.T) {
	n, s, _ := setup(t)
	ctx := context.Background()
	c := s.Client(t)
	c.Set(ctx, "t:leak", "v1", 0)
	if ok, err := n.DeleteIfValue(ctx, "t:leak", "v0"); ok || err != nil {
		t.Fatalf("wrong value: %v, %v", ok, err)
	}
	if ok, err := n.DeleteIfValue(ctx, "t:leak", "v1"); !ok || err != nil {
		t.Fatalf("right value: %v, %v", ok, err)
	}
	if n, err := c.Exists(ctx, "t:leak").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS t:leak after the delete: %d, %v; want 0, nil", n, err)
	}
}

func TestNodeWrongType(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	s.Client(t).Set(ctx, k.State, "not a hash", 0)
	_, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "v", TTL: time.Second})
	var se *engine.Error
	if !errors.As(err, &se) || se.Node != n.Name() || se.Op != "acquire" || !engine.ServerError(err) {
		t.Fatalf("got %v, want a *engine.Error with a server error", err)
	}
	if !strings.Contains(err.Error(), "WRONGTYPE") || !strings.Contains(err.Error(), n.Name()) {
		t.Errorf("message %q does not name the node and the problem", err)
	}
}

func TestNodeInfoAndErrors(t *testing.T) {
	n, s, _ := setup(t)
	ctx := context.Background()
	info, err := n.Info(ctx)
	if err != nil || len(info.RunID) != 40 {
		t.Fatalf("info: %+v, %v", info, err)
	}
	if at, err := n.Heartbeat(ctx, "t:hb:me", "1", time.Minute); err != nil || time.Since(at).Abs() > time.Second {
		t.Fatalf("heartbeat: server time %v, %v; want about now", at, err)
	}
	s.Kill()
	err = n.Ping(ctx)
	var se *engine.Error
	if !errors.As(err, &se) || engine.ServerError(err) {
		t.Fatalf("ping a dead node: %v, want a network *engine.Error", err)
	}
	if _, err := engine.NewNode("", s.Client(t)); err == nil {
		t.Error("NewNode accepted an empty name")
	}
	if _, err := engine.NewNode("x", nil); err == nil {
		t.Error("NewNode accepted a nil client")
	}
}

func TestNodeScan(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	c := s.Client(t)
	ks, _ := engine.NewKeyspace("t")
	v := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Owner: "me"}.String()
	c.Set(ctx, k.Lock, v, time.Minute)
	c.HSet(ctx, k.State, k.FenceField(), "7")
	c.Set(ctx, ks.Heartbeat("me"), "1", time.Minute)
	c.Set(ctx, "t:stray", "x", 0)
	c.Set(ctx, "other:{job}:lock", v, 0) // another prefix: not listed
	for i := range 600 {                 // more than one SCAN batch
		c.Set(ctx, fmt.Sprintf("t:{j%d}:lock", i), "x", 0)
	}
	seen := map[string]engine.KeyInfo{}
	if err := n.Scan(ctx, ks.Pattern(), func(ki engine.KeyInfo) error {
		seen[ki.Key] = ki
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 604 {
		t.Fatalf("scanned %d keys, want 604", len(seen))
	}
	if ki := seen[k.Lock]; ki.Type != "string" || ki.Value != v || ki.TTL <= 0 {
		t.Errorf("lock key: %+v", ki)
	}
	if ki := seen[k.State]; ki.Type != "hash" || ki.Fields[k.FenceField()] != "7" || ki.TTL != -1 {
		t.Errorf("state key: %+v", ki)
	}
	for key, want := range map[string]engine.KeyKind{k.Lock: engine.KindLock, k.State: engine.KindState, "t:hb:me": engine.KindHeartbeat, "t:stray": engine.KindForeign} {
		if kind, _ := ks.Parse(key); kind != want {
			t.Errorf("Parse(%q) = %v, want %v", key, kind, want)
		}
	}
	stop := errors.New("stop")
	if err := n.Scan(ctx, ks.Pattern(), func(engine.KeyInfo) error { return stop }); err != stop {
		t.Errorf("fn's error not returned: %v", err)
	}
}

// TestNodePipelining: concurrent calls on one node share round trips, and
// adjacent calls of one script share script calls; each still gets its
// own answer.
func TestNodePipelining(t *testing.T) {
	n, s, _ := setup(t)
	ctx := context.Background()
	ks, _ := engine.NewKeyspace("t")
	const calls = 400
	rc := s.Client(t)
	keys := make([]engine.LockKeys, calls)
	for i := range keys {
		keys[i], _ = ks.Lock(fmt.Sprintf("p%d", i))
		if i%3 == 0 {
			rc.Set(ctx, keys[i].Lock, "other", time.Minute)
		}
	}
	value := func(i int) string { return fmt.Sprintf("v%d", i) }
	run := func(op func(i int) error) {
		t.Helper()
		errs := make(chan error, calls)
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() { errs <- op(i) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	run(func(i int) error {
		rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: keys[i], Value: value(i), TTL: time.Minute})
		switch {
		case err != nil:
			return err
		case i%3 == 0 && (rep.Status != engine.Held || rep.Holder != "other"):
			return fmt.Errorf("lock %d, held by another value: %+v", i, rep)
		case i%3 != 0 && rep.Status != engine.Acquired:
			return fmt.Errorf("lock %d: %+v", i, rep)
		}
		return nil
	})
	st := n.Stats()
	if st.Calls >= calls/2 || st.Pipelines >= calls/2 {
		t.Errorf("stats %+v: %d concurrent calls should share round trips and script calls", st, calls)
	}
	run(func(i int) error {
		ok, err := n.Release(ctx, keys[i], value(i), 0, time.Hour, engine.LedgerWrite{})
		if err == nil && ok != (i%3 != 0) {
			err = fmt.Errorf("release of lock %d: %v", i, ok)
		}
		return err
	})
	for i := range keys {
		want := int64(0)
		if i%3 == 0 {
			want = 1 // another value's: not released
		}
		got, err := rc.Exists(ctx, keys[i].Lock).Result()
		if err != nil {
			t.Fatalf("EXISTS lock %d: %v", i, err)
		}
		if got != want {
			t.Fatalf("lock %d: exists %d after the releases, want %d", i, got, want)
		}
	}
}

// TestNodeBackoff: a dead node fails at once while backing off, instead of
// being dialled on every call, and is used again once it is back.
func TestNodeBackoff(t *testing.T) {
	n, s, k := setup(t)
	ctx := context.Background()
	s.Kill()
	_, err := n.Extend(ctx, k, "v", time.Second)
	if err == nil || errors.Is(err, engine.ErrNodeDown) {
		t.Fatalf("first call to a dead node: %v, want its network error", err)
	}
	if n.Up() {
		t.Error("node still up after a failure")
	}
	before := n.Stats()
	for range 50 {
		if _, err := n.Extend(ctx, k, "v", time.Second); !errors.Is(err, engine.ErrNodeDown) {
			t.Fatalf("call while backing off: %v, want ErrNodeDown", err)
		}
	}
	if st := n.Stats(); st.Pipelines != before.Pipelines || st.Skipped != before.Skipped+50 {
		t.Errorf("stats went from %+v to %+v: calls were sent to the dead node", before, st)
	}
	s.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := n.Extend(ctx, k, "v", time.Second)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not used again 10 s after it came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the back-off is at most 2 s
	}
	if !n.Up() {
		t.Error("node not up after a successful call")
	}
}
