package mutex_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/parts"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// proxiedNodes returns a store.Node per server of c, each reached through
// a proxy of its own (returned too), as one replica's path to the nodes
// that a partition can cut without cutting the others'.
func proxiedNodes(t *testing.T, c *redistest.Cluster) ([]*store.Node, []*redistest.Proxy) {
	t.Helper()
	proxies := make([]*redistest.Proxy, len(c.Nodes()))
	nodes := nodesWith(t, c, func(i int, _ *redis.Client) *redis.Client {
		proxies[i] = c.Node(i).NewProxy(t)
		cl := redis.NewClient(&redis.Options{Addr: proxies[i].Addr(), DialTimeout: time.Second, ReadTimeout: time.Second,
			WriteTimeout: time.Second, ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	})
	return nodes, proxies
}

// gone waits until key is absent on the server behind client, or fails t.
func gone(t *testing.T, ctx context.Context, cl *redis.Client, key string) {
	t.Helper()
	for ctx.Err() == nil {
		if n, err := cl.Exists(ctx, key).Result(); err == nil && n == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s still on the node: %v", key, ctx.Err())
}

// holdOnAll acquires name on r and keeps it alive, held on every node of
// c: an acquisition decided at a quorum may leave the slowest node without
// it (its call dropped unsent), which these tests' cases must not have.
func holdOnAll(t *testing.T, ctx context.Context, c *redistest.Cluster, r *mutex.Redlock, name string, ttl time.Duration) *mutex.Lock {
	t.Helper()
	key := lockKey(t, r, name).Lock
	for range 20 {
		l, err := r.TryLock(ctx, name, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(c.KeyOn(t, key), false) {
			_, stop := l.KeepAlive(context.Background())
			t.Cleanup(stop)
			return l
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("%s not held on every node in 20 attempts", name)
	return nil
}

// TestPartLostWithItsAnchorOnItsNodes: a part counts as running on a node
// only while its anchor holds there, so it is held while its anchor holds
// on a majority of the nodes that claimed it, not of all the nodes. Here
// the part is claimed on nodes 1 and 2 (node 3 refuses it: another
// client's lock, a minority leftover, holds the job there), then its
// replica is cut off from node 1 until its anchor expires there, kept
// alive on nodes 2 and 3. The part then runs on node 2 alone: another
// replica wins the job's lock on nodes 1 and 3. The part's context must
// have been cancelled by then (ErrLost), as a lock's is when it can no
// longer be proven.
func TestPartLostWithItsAnchorOnItsNodes(t *testing.T) {
	c := redistest.Start(t, 3)
	nodesA, proxies := proxiedNodes(t, c)
	jobsA := newRedlockOn(t, nodesA, mutex.WithFencing(true))
	shardsA := newRedlockOn(t, nodesA, mutex.WithKeyPrefix("redcron~shards"))
	nodesB := nodesOf(t, c)
	jobsB := newRedlockOn(t, nodesB, mutex.WithFencing(true))
	ctx := ctxTimeout(t, 30*time.Second)

	anchor := holdOnAll(t, ctx, c, shardsA, "replica-a", time.Second)
	right := holdOnAll(t, ctx, c, shardsA, "shard-1", 10*time.Second)

	// Another client's lock of the job on node 3 alone.
	leftover, err := newRedlockOn(t, nodesB[2:3]).TryLock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Now().Truncate(time.Second)
	res := jobsA.TryLockAll(parts.With(ctx, func(string) (any, any) { return right, anchor }),
		[]mutex.Request{{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(tick), mutex.Owner("a")}}})
	if res[0].Err != nil {
		t.Fatalf("claim on nodes 1 and 2: %v", res[0].Err)
	}
	part := res[0].Lock
	pctx, pstop := part.KeepAlive(context.Background())
	defer pstop()
	if err := leftover.Release(ctx); err != nil {
		t.Fatal(err)
	}

	if l, err := jobsB.TryLock(ctx, "job", time.Minute, mutex.Owner("b")); err == nil {
		t.Fatalf("the other replica's lock while the part runs on nodes 1 and 2: won (%s)", l.Value())
	}

	proxies[0].Cut()
	gone(t, ctx, c.Node(0).Client(t), lockKey(t, shardsA, "replica-a").Lock)
	proxies[0].Heal()
	if anchor.Until().Before(time.Now()) {
		t.Fatal("the anchor itself was lost: the test needs it kept alive on nodes 2 and 3")
	}

	other, err := jobsB.TryLock(ctx, "job", time.Minute, mutex.Owner("b"))
	if err != nil {
		// The part still holds a majority: that is right too, but the
		// test did not make the case it is about.
		t.Fatalf("the other replica's lock: %v (the part should run on node 2 alone)", err)
	}
	defer func() { _ = other.Release(ctx) }()
	select {
	case <-pctx.Done():
		if cause := context.Cause(pctx); !errors.Is(cause, mutex.ErrLost) {
			t.Errorf("part's context cancelled with %v, want ErrLost", cause)
		}
	case <-time.After(time.Second):
		t.Fatal("another replica holds the job's lock while the part's context goes on: two runs at once")
	}
	if !part.Until().Before(time.Now()) {
		t.Errorf("part's validity %v is still ahead, its anchor gone from node 1", part.Until())
	}
}

// TestPartStateOutlivesItsHold: a part's running value is a field of its
// shard's state, which is all that keeps the job while the part runs (it
// has no lock key), so the claim keeps the state at least as long as the
// part may be held: the max hold (24 h by default) and its parent's TTL,
// even under a shorter state TTL (5 m here). Before, the state expired 5 m
// after the claim, and with it the running value and the mark, while the
// part ran on: the job's next tick was claimed and ran beside it.
func TestPartStateOutlivesItsHold(t *testing.T) {
	c := redistest.Start(t, 3)
	nodes := nodesOf(t, c)
	jobs := newRedlockOn(t, nodes, mutex.WithFencing(true), mutex.WithStateTTL(5*time.Minute))
	shards := newRedlockOn(t, nodes, mutex.WithKeyPrefix("redcron~shards"))
	ctx := ctxTimeout(t, 30*time.Second)
	parent, err := shards.TryLock(ctx, "replica-a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, stop := parent.KeepAlive(context.Background())
	defer stop()
	res := jobs.TryLockAll(underParent(ctx, parent), []mutex.Request{{Name: "job", TTL: time.Minute,
		Options: []mutex.LockOption{mutex.Occurrence(time.Now().Truncate(time.Second))}}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	state := lockKey(t, jobs, "job").State
	for i := range 3 {
		rc := c.Node(i).Client(t)
		if rc.HGet(ctx, state, "r|job").Val() == "" {
			continue // not claimed there
		}
		if left, hold := rc.PTTL(ctx, state).Val(), lockwire.Of(jobs).MaxHold; left < hold {
			t.Errorf("node %d: the state holding the part's running value expires in %v, before the part's max hold %v", i, left, hold)
		}
	}
}

// TestPartClaimRetriedAfterAMinority: with one node of three down, a
// claim that one node grants and the other refuses for a while (the job's
// lock held there by another client) fails; once the refusal is gone, the
// tick's retry is won on the two nodes up, as a lock's retry is. Before,
// the failed claim left the tick's mark on the node that granted it, which
// then answered "already run": the tick never ran, with a majority up.
func TestPartClaimRetriedAfterAMinority(t *testing.T) {
	c := redistest.Start(t, 3)
	nodes := nodesOf(t, c)
	jobs := newRedlockOn(t, nodes, mutex.WithFencing(true))
	shards := newRedlockOn(t, nodes, mutex.WithKeyPrefix("redcron~shards"))
	ctx := ctxTimeout(t, 30*time.Second)
	parent := holdOnAll(t, ctx, c, shards, "replica-a", 10*time.Second)
	c.Node(2).Kill()

	other, err := newRedlockOn(t, nodes[1:2]).TryLock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Now().Truncate(time.Second)
	req := []mutex.Request{{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(tick)}}}
	if res := jobs.TryLockAll(underParent(ctx, parent), req); res[0].Err == nil {
		t.Fatal("claim won while node 2 holds the job's lock and node 3 is down")
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Flush(ctx); err != nil { // the failed claim's frees
		t.Fatal(err)
	}
	res := jobs.TryLockAll(underParent(ctx, parent), req)
	if res[0].Err != nil {
		t.Fatalf("the tick's retry, nodes 1 and 2 up and free: %v", res[0].Err)
	}
	// The tick is run once: claimed again, it is already run.
	if err := res[0].Lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again := jobs.TryLockAll(underParent(ctx, parent), req)
	if !errors.Is(again[0].Err, mutex.ErrAlreadyRun) {
		t.Errorf("the tick claimed again after its run: %v, want ErrAlreadyRun", again[0].Err)
	}
}

// TestPartEndAfterItsRightMoved: a part released after its right (its
// shard's lease) went to another replica ends on the nodes at once, as a
// lock's release does, so that the new holder's claim of the job's next
// tick, made just after, finds it ended. Before, its end waited up to
// 200 ms for a claim of its shard by its own replica, which no longer
// claims the shard: the next tick found the run still going and was
// skipped as an overlap.
func TestPartEndAfterItsRightMoved(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := ctxTimeout(t, 30*time.Second)
	replica := func(name string) (*mutex.Redlock, *mutex.Redlock, *mutex.Lock) {
		nodes := nodesOf(t, c)
		jobs := newRedlockOn(t, nodes, mutex.WithFencing(true))
		shards := newRedlockOn(t, nodes, mutex.WithKeyPrefix("redcron~shards"))
		anchor, err := shards.TryLock(ctx, "replica-"+name, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, stop := anchor.KeepAlive(context.Background())
		t.Cleanup(stop)
		return jobs, shards, anchor
	}
	jobsA, shardsA, anchorA := replica("a")
	jobsB, shardsB, anchorB := replica("b")
	rightA, err := shardsA.TryLock(ctx, "shard-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Now().Truncate(time.Second)
	req := func(at time.Time) []mutex.Request {
		return []mutex.Request{{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(at)}}}
	}
	res := jobsA.TryLockAll(parts.With(ctx, func(string) (any, any) { return rightA, anchorA }), req(tick))
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if err := rightA.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rightB, err := shardsB.TryLock(ctx, "shard-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := res[0].Lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	next := jobsB.TryLockAll(parts.With(ctx, func(string) (any, any) { return rightB, anchorB }), req(tick.Add(time.Second)))
	if next[0].Err != nil {
		t.Errorf("the next tick, claimed by the right's new holder just after the run's release: %v", next[0].Err)
	}
}

// TestPartEndRetried: a part's end that fails on a node (its replica cut
// off from two of the three nodes for a moment) is sent again until the
// node answers it, while its anchor holds: a running value left behind
// keeps its job held for as long as its anchor lives. Before, the failed
// end was dropped, and no replica could claim the job again.
func TestPartEndRetried(t *testing.T) {
	c := redistest.Start(t, 3)
	nodesA, proxies := proxiedNodes(t, c)
	jobsA := newRedlockOn(t, nodesA, mutex.WithFencing(true))
	shardsA := newRedlockOn(t, nodesA, mutex.WithKeyPrefix("redcron~shards"))
	jobsB := newRedlockOn(t, nodesOf(t, c), mutex.WithFencing(true))
	ctx := ctxTimeout(t, 30*time.Second)
	anchor, err := shardsA.TryLock(ctx, "replica-a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, stop := anchor.KeepAlive(context.Background())
	defer stop()
	res := jobsA.TryLockAll(underParent(ctx, anchor), []mutex.Request{{Name: "job", TTL: time.Minute,
		Options: []mutex.LockOption{mutex.Occurrence(time.Now().Truncate(time.Second))}}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	proxies[0].Cut()
	proxies[1].Cut()
	if err := res[0].Lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = jobsA.Flush(fctx) // the end, sent and failed on nodes 1 and 2 (or given up)
	proxies[0].Heal()
	proxies[1].Heal()
	deadline := time.Now().Add(3 * time.Second)
	for {
		l, err := jobsB.TryLock(ctx, "job", time.Minute)
		if err == nil {
			_ = l.Release(ctx)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's lock 3 s after the nodes came back: %v: the ended part still holds it", err)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestHealedNodeLeavesOlderPartsOut: a node that lost a part's anchor (a
// restart: the anchor and the part's running value gone) counts no more
// for that part once the anchor is given back there, since the part does
// not run there. Two of three nodes restarted one after the other leave
// the part's running value on node 0 alone: its validity must have ended,
// though its anchor, healed on both, holds on every node again.
func TestHealedNodeLeavesOlderPartsOut(t *testing.T) {
	c := redistest.Start(t, 3)
	nodes := nodesOf(t, c)
	jobs := newRedlockOn(t, nodes, mutex.WithFencing(true))
	shards := newRedlockOn(t, nodes, mutex.WithKeyPrefix("redcron~shards"))
	ctx := ctxTimeout(t, 30*time.Second)
	onAll := func(name string) *mutex.Lock {
		key := lockKey(t, shards, name).Lock
		for range 20 {
			l, err := shards.TryLock(ctx, name, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(c.KeyOn(t, key), false) {
				return l
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("%s not held on every node in 20 attempts", name)
		return nil
	}
	anchor, right := onAll("replica-a"), onAll("shard-1")
	res := jobs.TryLockAll(parts.With(ctx, func(string) (any, any) { return right, anchor }),
		[]mutex.Request{{Name: "job", TTL: time.Minute, Options: []mutex.LockOption{mutex.Occurrence(time.Now().Truncate(time.Second)), mutex.Owner("a")}}})
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	part := res[0].Lock
	state := lockKey(t, jobs, "job").State
	for i := range 3 {
		if c.Node(i).Client(t).HGet(ctx, state, "r|job").Val() == "" {
			t.Fatalf("the part was not claimed on node %d", i)
		}
	}
	akey := lockKey(t, shards, "replica-a").Lock
	for _, i := range []int{2, 1} {
		c.Node(i).Restart()
		// Calls to a restarted server may meet dead connections first: the
		// anchor is extended until the restarted node answers and is healed.
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if err := anchor.Extend(ctx); err != nil {
				t.Fatalf("extending the anchor after node %d restarted: %v", i, err)
			}
			if err := shards.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if c.KeyOn(t, akey)[i] {
				break
			}
		}
		if !c.KeyOn(t, akey)[i] {
			t.Fatalf("the anchor was not given back to node %d", i)
		}
	}
	if until := part.Until(); until.After(time.Now()) {
		t.Errorf("the part is valid until %v with its running value on node 0 alone (r|job on nodes 1, 2: %q, %q)", until,
			c.Node(1).Client(t).HGet(ctx, state, "r|job").Val(), c.Node(2).Client(t).HGet(ctx, state, "r|job").Val())
	}
}
