package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

// TestNodeAcquireAll: many locks go to a node in one round trip, split into
// script calls of at most 256 locks; each answer is in its request's
// place, and one lock's bad key fails that lock alone.
func TestNodeAcquireAll(t *testing.T) {
	n, s, _ := setup(t)
	ctx := context.Background()
	rc := s.Client(t)
	ks, _ := engine.NewKeyspace("t")
	const count = 600 // three script calls
	keys := make([]engine.LockKeys, count)
	for i := range keys {
		keys[i], _ = ks.Lock(fmt.Sprintf("job%d", i))
	}
	// Lock 1 is held by another value, lock 2 has its occurrence marked as
	// run, the state of lock 3's shard is not a hash (which fails the
	// locks of that shard, and only those), lock 4 already holds our value.
	for slices.Contains([]string{keys[1].State, keys[2].State, keys[4].State, keys[7].State}, keys[3].State) {
		keys[3], _ = ks.Lock(keys[3].Name + "x")
	}
	badShard := func(i int) bool { return keys[i].State == keys[3].State }
	rc.Set(ctx, keys[1].Lock, "other", time.Minute)
	rc.HSet(ctx, keys[2].State, keys[2].MarkField(), 5000, keys[2].FenceField(), 7)
	rc.Set(ctx, keys[3].State, "not a hash", 0)
	rc.Set(ctx, keys[4].Lock, "v4", time.Second)
	// The scripts are loaded, so that the batch is sent in one round trip.
	if _, err := n.Acquire(ctx, engine.AcquireRequest{Keys: keys[0], Value: "warm", TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	rc.Del(ctx, keys[0].Lock)

	reqs := make([]engine.AcquireRequest, count)
	for i := range reqs {
		reqs[i] = engine.AcquireRequest{Keys: keys[i], Value: fmt.Sprintf("v%d", i), TTL: time.Minute,
			Occurrence: 5000, WantInfo: i == 7}
	}
	before := n.Stats()
	rs := n.AcquireAll(ctx, reqs)
	after := n.Stats()
	if len(rs) != count {
		t.Fatalf("%d results for %d requests", len(rs), count)
	}
	if calls, pipes := after.Calls-before.Calls, after.Pipelines-before.Pipelines; calls != 3 || pipes != 1 {
		t.Errorf("%d locks took %d script calls in %d round trips, want 3 in 1", count, calls, pipes)
	}
	for i, r := range rs {
		switch {
		case i == 1:
			if r.Err != nil || r.Reply.Status != engine.Held || r.Reply.Holder != "other" {
				t.Errorf("lock 1 (held elsewhere): %+v", r)
			}
		case i == 2:
			if r.Err != nil || r.Reply.Status != engine.AlreadyRun || r.Reply.Mark != 5000 || r.Reply.Fence != 7 {
				t.Errorf("lock 2 (marked as run): %+v", r)
			}
		case badShard(i):
			if !engine.ServerError(r.Err) || !strings.Contains(r.Err.Error(), "WRONGTYPE") || !strings.Contains(r.Err.Error(), keys[i].Lock) {
				t.Errorf("lock %d (its shard's state not a hash): %v, want a WRONGTYPE server error naming the key", i, r.Err)
			}
		default:
			if r.Err != nil || r.Reply.Status != engine.Acquired {
				t.Errorf("lock %d: %+v", i, r)
			}
			if got := rc.Get(ctx, keys[i].Lock).Val(); got != fmt.Sprintf("v%d", i) {
				t.Errorf("lock %d holds %q", i, got)
			}
		}
		if want := i == 7; (r.Reply.Info != nil) != want && r.Err == nil {
			t.Errorf("lock %d: info %v, asked for: %v", i, r.Reply.Info, want)
		}
	}
	if ttl := rc.PTTL(ctx, keys[4].Lock).Val(); ttl < 59*time.Second {
		t.Errorf("lock 4, already ours, keeps a TTL of %v, want it renewed to a minute", ttl)
	}

	for i := range keys {
		if badShard(i) {
			rc.Set(ctx, keys[i].Lock, fmt.Sprintf("v%d", i), time.Minute) // ours, so that the commit reads the bad state
		}
	}
	commits := make([]engine.CommitRequest, count)
	for i := range commits {
		commits[i] = engine.CommitRequest{Keys: keys[i], Value: fmt.Sprintf("v%d", i), Fence: 100, Occurrence: 6000}
	}
	ch := make(chan []engine.CommitResult, 1)
	n.CommitAllAsync(ctx, commits, time.Hour, func(rs []engine.CommitResult) { ch <- rs })
	for i, r := range <-ch {
		switch {
		case i == 1, i == 2: // the lock does not hold our value
			if r.Err != nil || r.Held {
				t.Errorf("commit %d: %+v, want not held", i, r)
			}
		case badShard(i):
			if !engine.ServerError(r.Err) {
				t.Errorf("commit %d: %v, want a server error", i, r.Err)
			}
		default:
			if r.Err != nil || !r.Held {
				t.Errorf("commit %d: %+v", i, r)
			}
			if st := rc.HGetAll(ctx, keys[i].State).Val(); st[keys[i].FenceField()] != "100" || st[keys[i].MarkField()] != "6000" {
				t.Errorf("state %d after commit: %v", i, st)
			}
		}
	}
	if st := rc.HGetAll(ctx, keys[2].State).Val(); st[keys[2].FenceField()] != "7" || st[keys[2].MarkField()] != "5000" {
		t.Errorf("state 2, not ours, changed to %v", st)
	}
}

// TestNodeAcquireAllCluster: on a client that may spread keys over
// servers, every lock gets a script call of its own (a script's keys must
// share a server), still in one round trip.
func TestNodeAcquireAllCluster(t *testing.T) {
	c := redistest.Start(t, 1)
	s := c.Node(0)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": s.Addr()}})
	t.Cleanup(func() { ring.Close() })
	n, err := engine.NewNode(s.Addr(), ring)
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := engine.NewKeyspace("t")
	reqs := make([]engine.AcquireRequest, 10)
	for i := range reqs {
		k, _ := ks.Lock(fmt.Sprintf("job%d", i))
		reqs[i] = engine.AcquireRequest{Keys: k, Value: "v", TTL: time.Minute}
	}
	for i, r := range n.AcquireAll(context.Background(), reqs) {
		if r.Err != nil || r.Reply.Status != engine.Acquired {
			t.Errorf("lock %d: %+v", i, r)
		}
	}
	if st := n.Stats(); st.Calls < 10 || st.Pipelines > 2 {
		t.Errorf("stats %+v: want a script call per lock, in one round trip (two if the scripts were loaded)", st)
	}
}
