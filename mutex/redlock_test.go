package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redis/go-redis/v9"
)

// TestMutualExclusion races many goroutines for one name and fails on any
// two overlapping holds, and on any fencing token that does not increase.
func TestMutualExclusion(t *testing.T) {
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			c := redistest.Start(t, n)
			r := newRedlock(t, c, mutex.WithRetryDelay(time.Millisecond))
			const workers, each = 8, 150
			var (
				holders   atomic.Int32
				overlaps  atomic.Int32
				lastFence atomic.Uint64
				badFences atomic.Int32
				errs      = make(chan error, workers)
				wg        sync.WaitGroup
			)
			ctx := ctxTimeout(t, 2*time.Minute)
			for range workers {
				wg.Go(func() {
					for range each {
						l, err := r.Lock(ctx, "contended", time.Second)
						if err != nil {
							errs <- err
							return
						}
						if holders.Add(1) != 1 {
							overlaps.Add(1)
						}
						if prev := lastFence.Swap(l.Fence()); l.Fence() <= prev {
							badFences.Add(1)
						}
						holders.Add(-1)
						if err := l.Release(ctx); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("acquire/release: %v", err)
			}
			if o := overlaps.Load(); o != 0 {
				t.Errorf("%d overlapping holds out of %d acquisitions", o, workers*each)
			}
			if b := badFences.Load(); b != 0 {
				t.Errorf("%d fencing tokens did not increase", b)
			}
		})
	}
}

// TestFenceSurvivesRestart checks that tokens keep increasing after a
// majority, and then all, of the nodes restarted empty.
func TestFenceSurvivesRestart(t *testing.T) {
	c := redistest.Start(t, 5)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	var last uint64
	acquire := func(stage string) {
		t.Helper()
		for range 5 {
			l, err := r.Lock(ctx, "fenced", time.Second)
			if err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			if l.Fence() <= last {
				t.Fatalf("%s: fence %d after %d: not increasing", stage, l.Fence(), last)
			}
			last = l.Fence()
			if err := l.Release(ctx); err != nil {
				t.Fatalf("%s: release: %v", stage, err)
			}
		}
	}
	acquire("before restarts")
	for i := range 3 {
		c.Node(i).Restart()
	}
	acquire("after 3 of 5 restarted empty")
	for _, s := range c.Nodes() {
		s.Restart()
	}
	acquire("after all 5 restarted empty")
}

// TestNodeLoss kills 2 of 5 nodes, then a third.
func TestNodeLoss(t *testing.T) {
	c := redistest.Start(t, 5)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	c.Node(0).Kill()
	c.Node(3).Kill()
	for i := range 20 {
		l, err := r.TryLock(ctx, fmt.Sprintf("job-%d", i), time.Second)
		if err != nil {
			t.Fatalf("with 2 of 5 down: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release with 2 of 5 down: %v", err)
		}
	}
	c.Node(4).Kill()
	_, err := r.TryLock(ctx, "job-x", time.Second)
	if !errors.Is(err, mutex.ErrNoQuorum) || !errors.Is(err, mutex.ErrNotAcquired) {
		t.Fatalf("with 3 of 5 down: got %v, want ErrNoQuorum", err)
	}
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) {
		t.Fatalf("error %T is not a *QuorumError", err)
	}
	for i, res := range qe.Nodes {
		dead := i == 0 || i == 3 || i == 4
		if dead && !failedVote(res.Vote) || !dead && res.Vote != "yes" {
			t.Errorf("node %d (%s): vote %v, want a failure for a dead node, yes for a live one", i, res.Node, res.Vote)
		}
	}
	if !strings.Contains(err.Error(), "2/5 yes, quorum 3") {
		t.Errorf("error does not read like a tally: %v", err)
	}
	// The two nodes that voted yes were released: nothing is left behind.
	k := lockKey(t, r, "job-x")
	for _, i := range []int{1, 2} {
		n, err := c.Node(i).Client(t).Exists(ctx, k.Lock).Result()
		if err != nil {
			t.Fatalf("EXISTS on node %d: %v", i, err)
		}
		if n != 0 {
			t.Errorf("node %d still holds the failed attempt's key", i)
		}
	}
}

// TestPausedNode pauses one node: acquisitions are decided by the others
// without its answer; when its vote is needed, the per-node timeout bounds
// the wait.
func TestPausedNode(t *testing.T) {
	c := redistest.Start(t, 3)
	rec := &recorder{}
	r := newRedlock(t, c, mutex.WithNodeTimeout(300*time.Millisecond), mutex.WithObserver(rec.ObserveLock))
	ctx := ctxTimeout(t, time.Minute)
	c.Node(1).Pause()
	t.Cleanup(c.Node(1).Resume)
	for i := range 10 {
		l, err := r.TryLock(ctx, fmt.Sprintf("p%d", i), 2*time.Second)
		if err != nil {
			t.Fatalf("one node paused: %v", err)
		}
		// Decided without the paused node: it had not answered, or it was
		// backing off after an earlier timeout and failed at once.
		ev, _ := rec.last("acquire")
		if res := ev.Nodes[1]; res.Vote != "" && !errors.Is(res.Err, engine.ErrNodeDown) {
			t.Fatalf("acquisition waited for the paused node (its vote: %v)", res)
		}
		if err := l.Release(ctx); err != nil && !errors.Is(err, mutex.ErrNoQuorum) {
			t.Fatalf("release: %v", err)
		}
	}
	c.Node(2).Kill()
	start := time.Now()
	_, err := r.TryLock(ctx, "needs-paused", 2*time.Second)
	took := time.Since(start)
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) || !failedVote(qe.Nodes[1].Vote) || !failedVote(qe.Nodes[2].Vote) {
		t.Fatalf("got %v, want a tally with nodes 1 and 2 failed", err)
	}
	// One node timeout for the vote, one for releasing where we may hold.
	if took > 2*300*time.Millisecond+500*time.Millisecond {
		t.Errorf("decision took %v, want about two node timeouts (300ms each)", took)
	}
}

// TestRestartQuarantine restarts a majority empty while a lease is held:
// their votes do not count until they have been up for the max TTL, so no
// second holder gets the lock while the first could still believe it holds
// it; after the max TTL the lock can be taken again.
func TestRestartQuarantine(t *testing.T) {
	const maxTTL = 2 * time.Second
	c := redistest.Start(t, 3)
	guarded := func() *mutex.Redlock {
		r, err := mutex.New(nodesOf(t, c), mutex.WithMaxTTL(maxTTL), mutex.WithNodeTimeout(200*time.Millisecond), mutex.WithRetryDelay(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := guarded(), guarded()
	ctx := ctxTimeout(t, time.Minute)

	// A brand-new cluster: the nodes' uptime is below the max TTL.
	_, err := a.TryLock(ctx, "job", maxTTL)
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) || count(qe.Nodes, "warming_up") == 0 {
		t.Fatalf("fresh nodes: got %v, want votes not counted as restarted", err)
	}
	held, err := a.Lock(ctx, "job", maxTTL) // succeeds once the nodes are old enough
	if err != nil {
		t.Fatalf("after the bootstrap wait: %v", err)
	}
	kept, stop := held.KeepAlive(ctx)
	defer stop()

	c.Node(0).Restart()
	c.Node(1).Restart()
	_, err = b.TryLock(ctx, "job", maxTTL)
	qe = nil
	if !errors.As(err, &qe) || !errors.Is(err, mutex.ErrNoQuorum) || count(qe.Nodes, "warming_up") == 0 {
		for _, n := range qe.Nodes {
			t.Logf("%s %v holder %q", n.Node, n.Vote, n.Holder)
		}
		t.Logf("held value %q", held.Value())
		t.Fatalf("majority restarted: got %v, want no quorum with restarted votes", err)
	}
	// The unguarded view shows the danger: the restarted nodes grant it.
	unguarded := newRedlock(t, c)
	if l, err := unguarded.TryLock(ctx, "other", maxTTL); err != nil {
		t.Fatalf("trusted nodes: %v", err)
	} else {
		_ = l.Release(ctx)
	}

	second, err := b.Lock(ctx, "job", maxTTL)
	if err != nil {
		t.Fatalf("after the max TTL: %v", err)
	}
	gotAt := time.Now()
	defer second.Release(ctx)
	select {
	case <-kept.Done():
	default:
		t.Fatal("a second holder got the lock while the first's keepalive context was live")
	}
	if cause := context.Cause(kept); !errors.Is(cause, mutex.ErrLost) {
		t.Errorf("first holder's cause: %v, want ErrLost", cause)
	}
	if until := held.Until(); !until.Before(gotAt) {
		t.Errorf("second holder acquired at %v, before the first's validity ended (%v)", gotAt, until)
	}
}

func count(rs []mutex.NodeResult, v string) int {
	n := 0
	for _, r := range rs {
		if r.Vote == v {
			n++
		}
	}
	return n
}

// TestKeepAlive keeps a lease past several TTLs, then deletes its keys on a
// majority: the keepalive context is cancelled within one extension
// interval, with ErrLost.
func TestKeepAlive(t *testing.T) {
	const ttl = 900 * time.Millisecond
	c := redistest.Start(t, 3)
	r := newRedlock(t, c, mutex.WithNodeTimeout(100*time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	l, err := r.TryLock(ctx, "long", ttl)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := l.KeepAlive(ctx)
	defer stop()
	select {
	case <-kctx.Done():
		t.Fatalf("lease lost while kept alive: %v", context.Cause(kctx))
	case <-time.After(4 * ttl):
	}
	if !time.Now().Before(l.Until()) {
		t.Fatal("validity not extended")
	}
	k := lockKey(t, r, "long")
	for i := range 2 {
		if err := c.Node(i).Client(t).Del(ctx, k.Lock).Err(); err != nil {
			t.Fatal(err)
		}
	}
	deleted := time.Now()
	select {
	case <-kctx.Done():
	case <-time.After(ttl):
		t.Fatal("keepalive context not cancelled one TTL after the keys were deleted")
	}
	if took, bound := time.Since(deleted), ttl/3+100*time.Millisecond+150*time.Millisecond; took > bound {
		t.Errorf("loss noticed after %v, want within one extension interval plus the node timeout (%v)", took, bound)
	}
	if cause := context.Cause(kctx); !errors.Is(cause, mutex.ErrLost) {
		t.Errorf("cause %v, want ErrLost", cause)
	}
	if err := l.Release(ctx); !errors.Is(err, mutex.ErrLost) {
		t.Errorf("release after loss: %v, want ErrLost", err)
	}
}

// TestKeepAliveExpires makes extensions impossible (a majority paused): the
// context is cancelled when the validity runs out, not later.
func TestKeepAliveExpires(t *testing.T) {
	const ttl = 900 * time.Millisecond
	c := redistest.Start(t, 3)
	r := newRedlock(t, c, mutex.WithNodeTimeout(100*time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	l, err := r.TryLock(ctx, "stalls", ttl)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := l.KeepAlive(ctx)
	defer stop()
	c.Node(0).Pause()
	c.Node(1).Pause()
	t.Cleanup(c.Node(0).Resume)
	t.Cleanup(c.Node(1).Resume)
	select {
	case <-kctx.Done():
	case <-time.After(3 * ttl):
		t.Fatal("keepalive context not cancelled after the validity ran out")
	}
	if late := time.Since(l.Until()); late < 0 || late > 100*time.Millisecond {
		t.Errorf("cancelled %v after the validity deadline, want at it", late)
	}
	cause := context.Cause(kctx)
	if !errors.Is(cause, mutex.ErrLost) || !strings.Contains(cause.Error(), "validity ran out") {
		t.Errorf("cause %v, want ErrLost for the validity", cause)
	}
	// The last failed extension's tally stays reachable.
	var qe *mutex.QuorumError
	if !errors.As(cause, &qe) {
		t.Errorf("cause %v: no *QuorumError of the last extension in its chain", cause)
	}
}

// TestMaxHold stops extending after the maximum hold time.
func TestMaxHold(t *testing.T) {
	c := redistest.Start(t, 1)
	r := newRedlock(t, c, mutex.WithMaxHold(time.Second), mutex.WithNodeTimeout(50*time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	start := time.Now()
	l, err := r.TryLock(ctx, "bounded", 600*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := l.KeepAlive(ctx)
	defer stop()
	<-kctx.Done()
	if cause := context.Cause(kctx); !errors.Is(cause, mutex.ErrMaxHold) || !errors.Is(cause, mutex.ErrLost) {
		t.Fatalf("cause %v, want ErrMaxHold and ErrLost", cause)
	}
	if held := time.Since(start); held < time.Second {
		t.Errorf("gave up after %v, before the max hold", held)
	}
}

// TestReleaseAfterTakeover: a lease that expired and was taken by another
// owner is never deleted by its former holder.
func TestReleaseAfterTakeover(t *testing.T) {
	c := redistest.Start(t, 3)
	r := newRedlock(t, c, mutex.WithNodeTimeout(50*time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	old, err := r.TryLock(ctx, "handover", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	next, err := r.Lock(ctx, "handover", time.Second) // waits for the TTL
	if err != nil {
		t.Fatal(err)
	}
	// The nodes the new holder's key is on: a quorum at least (a call to
	// the last node may have been dropped once a quorum answered).
	k := lockKey(t, r, "handover")
	before := c.KeyOn(t, k.Lock)
	if err := old.Release(ctx); !errors.Is(err, mutex.ErrLost) {
		t.Fatalf("releasing the expired lease: %v, want ErrLost", err)
	}
	for i, ok := range c.KeyOn(t, k.Lock) {
		if before[i] && !ok {
			t.Errorf("node %d: the new holder's key was deleted", i)
		}
	}
	if err := next.Extend(ctx); err != nil {
		t.Errorf("new holder cannot extend: %v", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Errorf("new holder's release: %v", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Errorf("second release: %v, want nil (a second Release does nothing)", err)
	}
}

// TestOccurrence checks the occurrence mark: an occurrence is won once,
// earlier ones are refused, and a failed (split) attempt writes no mark.
func TestOccurrence(t *testing.T) {
	c := redistest.Start(t, 3)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	tick := time.Now().Truncate(time.Hour)

	l, err := r.TryLock(ctx, "cron", time.Second, mutex.Occurrence(tick))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{tick, tick.Add(-time.Second)} {
		if _, err := r.TryLock(ctx, "cron", time.Second, mutex.Occurrence(at)); !errors.Is(err, mutex.ErrAlreadyRun) {
			t.Errorf("occurrence %v after %v ran: %v, want ErrAlreadyRun", at, tick, err)
		}
	}
	// A split vote: node 0 held by a foreign owner, node 1 down.
	next := tick.Add(time.Second)
	k := lockKey(t, r, "cron")
	if err := c.Node(0).Client(t).Set(ctx, k.Lock, "someone else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	c.Node(1).Kill()
	if _, err := r.TryLock(ctx, "cron", time.Second, mutex.Occurrence(next)); !errors.Is(err, mutex.ErrNoQuorum) {
		t.Fatalf("split vote: %v, want ErrNoQuorum", err)
	}
	c.Node(1).Restart()
	if err := c.Node(0).Client(t).Del(ctx, k.Lock).Err(); err != nil {
		t.Fatal(err)
	}
	l, err = r.TryLock(ctx, "cron", time.Second, mutex.Occurrence(next))
	if err != nil {
		t.Fatalf("retry after the split vote: %v (the failed attempt must not mark the occurrence)", err)
	}
	_ = l.Release(ctx)
}

// TestHeld: a lock held by another owner is reported as such.
func TestHeld(t *testing.T) {
	c := redistest.Start(t, 3)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	l, err := r.TryLock(ctx, "busy", time.Second, mutex.Owner("replica-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	_, err = r.TryLock(ctx, "busy", time.Second)
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrHeld) || !errors.As(err, &qe) {
		t.Fatalf("got %v, want ErrHeld", err)
	}
	for _, res := range qe.Nodes {
		if res.Vote != "" && (res.Vote != "held" || res.Holder != l.Value()) {
			t.Errorf("node %s: %v holder %q, want held by %q", res.Node, res.Vote, res.Holder, l.Value())
		}
	}
	// Lock gives up with the context, and says why.
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err = r.Lock(short, "busy", time.Second)
	if !errors.Is(err, mutex.ErrHeld) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock until deadline: %v, want ErrHeld joined with DeadlineExceeded", err)
	}
}

// TestRestartedHoldsSurvived: on nodes that restarted recently but kept
// their data, a value set before the restart still counts toward its
// holder's quorum (ErrHeld); one set since does not (ErrNoQuorum).
func TestRestartedHoldsSurvived(t *testing.T) {
	c := redistest.Start(t, 3, redistest.WithAppendOnly())
	ctx := ctxTimeout(t, time.Minute)
	guarded, err := mutex.New(nodesOf(t, c), mutex.WithMaxTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	k := lockKey(t, guarded, "job")
	holder := func(acquired time.Time) string {
		return engine.Value{Token: engine.NewToken(), Acquired: acquired.Truncate(time.Millisecond), Owner: "other"}.String()
	}
	plant := func(value string) {
		t.Helper()
		for _, s := range c.Nodes() {
			if err := s.Client(t).Set(ctx, k.Lock, value, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	kept := holder(time.Now().Add(-10 * time.Second)) // kept alive since, say
	plant(kept)
	for _, s := range c.Nodes() {
		s.Restart() // with its data
	}
	_, err = guarded.TryLock(ctx, "job", 10*time.Second)
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrHeld) || !errors.As(err, &qe) || qe.Holder != kept {
		t.Fatalf("held since before the restart: got %v, want ErrHeld by %q", err, kept)
	}
	for _, res := range qe.Nodes {
		if res.Vote != "" && !res.WarmingUp {
			t.Errorf("node %s not reported as restarted: %v", res.Node, res)
		}
	}

	plant(holder(time.Now())) // set since the restart
	if _, err := guarded.TryLock(ctx, "job", 10*time.Second); !errors.Is(err, mutex.ErrNoQuorum) {
		t.Fatalf("held since the restart only: got %v, want ErrNoQuorum", err)
	}
}

// TestRestartedHoldsProveNothing: on nodes that restarted less than the
// max TTL ago, another owner's value does not make ErrHeld for a Redlock
// that does not trust them, since its holder cannot count those nodes
// either: nobody is known to hold the lock (ErrNoQuorum), and the votes
// still say who holds what. A Redlock that trusts the nodes sees the
// holder's quorum.
func TestRestartedHoldsProveNothing(t *testing.T) {
	c := redistest.Start(t, 3) // brand new: every node's uptime is below the max TTL
	ctx := ctxTimeout(t, time.Minute)
	held, err := newRedlock(t, c).TryLock(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)

	guarded, err := mutex.New(nodesOf(t, c), mutex.WithMaxTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	_, err = guarded.TryLock(ctx, "job", 10*time.Second)
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrNoQuorum) || !errors.As(err, &qe) {
		t.Fatalf("untrusted, held on restarted nodes: got %v, want ErrNoQuorum", err)
	}
	for _, res := range qe.Nodes {
		if res.Vote != "held" || res.Holder != held.Value() || !res.WarmingUp {
			t.Errorf("node %s: %v holder %q restarted %v, want held by %q on a restarted node", res.Node, res.Vote, res.Holder, res.WarmingUp, held.Value())
		}
	}

	_, err = newRedlock(t, c).TryLock(ctx, "job", 10*time.Second)
	qe = nil
	if !errors.Is(err, mutex.ErrHeld) || !errors.As(err, &qe) || qe.Holder != held.Value() {
		t.Fatalf("trusted: got %v, want ErrHeld by %q", err, held.Value())
	}
	for _, res := range qe.Nodes {
		if res.WarmingUp {
			t.Errorf("trusted: node %s reported as restarted", res.Node)
		}
	}
}

// TestWrongType puts values of the wrong type at the keys: a clear error
// that names the key, not a panic or a false success.
func TestWrongType(t *testing.T) {
	c := redistest.Start(t, 3)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	k := lockKey(t, r, "typed")
	for _, s := range c.Nodes() {
		if err := s.Client(t).HSet(ctx, k.Lock, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := r.TryLock(ctx, "typed", time.Second)
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) || count(qe.Nodes, "error") < 2 {
		t.Fatalf("got %v, want server errors in the tally", err)
	}
	if !strings.Contains(err.Error(), "WRONGTYPE") || !strings.Contains(err.Error(), k.Lock) {
		t.Errorf("error does not name the key and the problem: %v", err)
	}
}

// TestSplitVote: refusals from different holders are not final, marks on a
// minority are not final; a quorum of one holder, or of marks, is.
func TestSplitVote(t *testing.T) {
	c := redistest.Start(t, 5)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, time.Minute)
	k := lockKey(t, r, "split")
	x := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Owner: "x"}.String()
	y := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Owner: "y"}.String()
	set := func(i int, key, v string) {
		if err := c.Node(i).Client(t).Set(ctx, key, v, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set(0, k.Lock, x)
	set(1, k.Lock, x)
	set(2, k.Lock, y)
	set(3, k.Lock, y)
	_, err := r.TryLock(ctx, "split", time.Second)
	if !errors.Is(err, mutex.ErrNoQuorum) || errors.Is(err, mutex.ErrHeld) {
		t.Fatalf("2 nodes held by x, 2 by y: %v, want ErrNoQuorum (undecided)", err)
	}
	set(4, k.Lock, x)
	_, err = r.TryLock(ctx, "split", time.Second)
	var qe *mutex.QuorumError
	if !errors.Is(err, mutex.ErrHeld) || !errors.As(err, &qe) || qe.Holder != x {
		t.Fatalf("3 of 5 nodes held by x: %v, want ErrHeld with holder x", err)
	}

	tick := time.Now().Truncate(time.Second)
	marked := lockKey(t, r, "marked")
	for i := range 2 { // a winner's commit that reached a minority
		if err := c.Node(i).Client(t).HSet(ctx, marked.State, marked.MarkField(), tick.UnixMilli()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	l, err := r.TryLock(ctx, "marked", time.Second, mutex.Occurrence(tick))
	if err != nil {
		t.Fatalf("marks on 2 of 5 nodes: %v, want the lock from the other 3", err)
	}
	_ = l.Release(ctx)
	if _, err := r.TryLock(ctx, "marked", time.Second, mutex.Occurrence(tick)); !errors.Is(err, mutex.ErrAlreadyRun) {
		t.Fatalf("after the run: %v, want ErrAlreadyRun", err)
	}
}

// TestRaceForOccurrences: three contenders with their own clients race for
// each of many occurrences, retrying undecided outcomes as the scheduler
// does; every occurrence is won exactly once.
func TestRaceForOccurrences(t *testing.T) {
	c := redistest.Start(t, 5)
	contenders := contendersOn(t, c, 3)
	ctx := ctxTimeout(t, 2*time.Minute)
	const occurrences = 150
	base := time.Now().Truncate(time.Second).Add(-occurrences * time.Second) // past: a claim may be made at most the max TTL ahead
	for o := range occurrences {
		at := base.Add(time.Duration(o) * time.Second)
		wins := make(chan int, len(contenders))
		errs := make(chan error, len(contenders))
		var wg sync.WaitGroup
		gate := make(chan struct{}) // start together, as replicas do at a tick
		for i, r := range contenders {
			wg.Go(func() {
				<-gate
				for attempt := 0; attempt < 50; attempt++ {
					l, err := r.TryLock(ctx, "race", time.Second, mutex.Occurrence(at))
					switch {
					case err == nil:
						wins <- i
						_ = l.Release(ctx)
						return
					case errors.Is(err, mutex.ErrHeld), errors.Is(err, mutex.ErrAlreadyRun):
						return
					case !errors.Is(err, mutex.ErrNoQuorum):
						errs <- err
						return
					}
					time.Sleep(time.Duration(1+attempt+i) * time.Millisecond) // jitter stand-in: contenders retry at different times
				}
				errs <- fmt.Errorf("contender %d: undecided after 50 attempts", i)
			})
		}
		close(gate)
		wg.Wait()
		close(wins)
		close(errs)
		for err := range errs {
			t.Fatalf("occurrence %d: %v", o, err)
		}
		if n := len(wins); n != 1 {
			t.Fatalf("occurrence %d won %d times", o, n)
		}
	}
}

// TestExtendHeals: an extension granted by a quorum gives the lock back to
// the nodes that lost it (its key deleted there), but not where another
// value holds it; an extension refused (the lock deleted on a majority)
// gives nothing back, and the loss stands.
func TestExtendHeals(t *testing.T) {
	c := redistest.Start(t, 5)
	r := newRedlock(t, c)
	ctx := ctxTimeout(t, 30*time.Second)
	l, err := r.TryLock(ctx, "healed", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	key := lockKey(t, r, "healed").Lock
	clients := make([]*redis.Client, 5)
	for i, s := range c.Nodes() {
		clients[i] = s.Client(t)
	}
	clients[0].Del(ctx, key)
	clients[1].Set(ctx, key, "another value", time.Minute)
	// A node that answers after the quorum decided is not healed by that
	// extension: extend until node 0 answered one (a loaded machine).
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := l.Extend(ctx); err != nil {
			t.Fatalf("extend with 3 of 5 holding: %v", err)
		}
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := clients[0].Get(ctx, key).Result(); got == l.Value() || time.Now().After(deadline) {
			break
		}
	}
	for i, want := range []string{l.Value(), "another value", l.Value(), l.Value(), l.Value()} {
		if got, _ := clients[i].Get(ctx, key).Result(); got != want {
			t.Errorf("node %d holds %q; want %q", i, got, want)
		}
	}

	for _, cl := range clients[:3] {
		cl.Del(ctx, key)
	}
	if err := l.Extend(ctx); err == nil {
		t.Fatal("extend with the lock deleted on 3 of 5: granted; want ErrLost (or ErrNoQuorum, nodes answering late)")
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cl := range clients[:3] {
		if n, _ := cl.Exists(ctx, key).Result(); n != 0 {
			t.Errorf("node %d: the lost lock was written back", i)
		}
	}
}
