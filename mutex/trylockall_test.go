package mutex_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestTryLockAllRoundTrips: a batch of locks costs each node one round
// trip for the votes and one for the commits, whatever its size, and a bad
// request fails alone.
func TestTryLockAllRoundTrips(t *testing.T) {
	c := redistest.Start(t, 5)
	// A node timeout long enough that a loaded machine does not make the
	// commit time out and ask again.
	r := newRedlock(t, c, mutex.WithNodeTimeout(5*time.Second), mutex.WithMaxTTL(time.Minute))
	ctx := ctxTimeout(t, time.Minute)
	// Every node loads the scripts first (a lock decided at quorum may
	// leave the last node without a call), so that no call below is sent
	// twice for NOSCRIPT.
	warm := lockKey(t, r, "warm")
	for _, sn := range storeNodes(r) {
		n := (*engine.Node)(sn)
		if _, err := n.Acquire(ctx, engine.AcquireRequest{Keys: warm, Value: "w", TTL: time.Second}); err != nil {
			t.Fatal(err)
		}
		if _, err := n.Commit(ctx, engine.CommitRequest{Keys: warm, Value: "w", Fence: 1}, time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := n.Release(ctx, warm, "w", 0, time.Second, engine.LedgerWrite{}); err != nil {
			t.Fatal(err)
		}
	}

	const count = 600
	reqs := make([]mutex.Request, count)
	for j := range reqs {
		reqs[j] = mutex.Request{Name: fmt.Sprintf("job%d", j), TTL: 30 * time.Second,
			Options: []mutex.LockOption{mutex.Occurrence(time.Now())}}
	}
	reqs[5].TTL = 0
	before := make([]engine.Stats, len(storeNodes(r)))
	for i, sn := range storeNodes(r) {
		n := (*engine.Node)(sn)
		before[i] = n.Stats()
	}
	res := r.TryLockAll(ctx, reqs)
	probe := lockKey(t, r, "probe")
	for i, sn := range storeNodes(r) {
		n := (*engine.Node)(sn)
		// Calls to a node are answered in order: once this one is, the
		// batch's commit (which waited for a quorum, not this node) is too.
		// (A release: a script call of its own, never merged with the commits.)
		if _, err := n.Release(ctx, probe, "v", 0, time.Second, engine.LedgerWrite{}); err != nil {
			t.Fatal(err)
		}
		st := n.Stats()
		// 599 locks are 3 script calls of each script, and the probe one.
		// Calls still queued when a quorum has answered are dropped unsent.
		calls := st.Calls + st.Skipped - before[i].Calls - before[i].Skipped
		if pipes := st.Pipelines - before[i].Pipelines; calls != 7 || pipes > 3 {
			t.Errorf("node %s: %d locks took %d script calls in %d round trips, want 3 for the votes and 3 for the commits, in one round trip each, then the probe's", n.Name(), count-1, calls-1, pipes)
		}
	}
	if len(res) != count {
		t.Fatalf("%d results for %d requests", len(res), count)
	}
	for j, rs := range res {
		if j == 5 {
			if !errors.Is(rs.Err, mutex.ErrInvalidOption) || rs.Lock != nil {
				t.Errorf("request 5 (ttl 0): %v, want ErrInvalidOption", rs.Err)
			}
			continue
		}
		if rs.Err != nil || rs.Lock == nil || rs.Lock.Name() != reqs[j].Name || rs.Lock.Fence() == 0 {
			t.Fatalf("request %d: %+v", j, rs)
		}
		// (Calls still queued when a quorum answered are dropped unsent.)
		held := c.KeyOn(t, lockKey(t, r, reqs[j].Name).Lock)
		if on := len(held) - len(slices.DeleteFunc(held, func(b bool) bool { return b })); on < len(storeNodes(r))/2+1 {
			t.Fatalf("lock %d is on %v, want a quorum", j, held)
		}
	}
	var wg sync.WaitGroup
	for _, rs := range res {
		if rs.Lock != nil {
			wg.Go(func() {
				if err := rs.Lock.Release(ctx); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
}

// TestTryLockAllRace: replicas that claim the same ticks of many jobs at
// the same instant, each in one batch, win each job's tick exactly once,
// even when their batches split the nodes between them; fences increase
// from tick to tick.
func TestTryLockAllRace(t *testing.T) {
	c := redistest.Start(t, 5)
	contenders := contendersOn(t, c, 3)
	ctx := ctxTimeout(t, 2*time.Minute)
	const jobs, ticks = 200, 15
	base := time.Now().Truncate(time.Second).Add(-ticks * time.Second) // past ticks: a claim may be made at most the max TTL ahead
	lastFence := make([]uint64, jobs)
	for o := range ticks {
		at := base.Add(time.Duration(o) * time.Second)
		var (
			mu     sync.Mutex
			wins   = make([][]int, jobs) // contenders that won each job's tick
			fences = make([]uint64, jobs)
			errs   []error
			wg     sync.WaitGroup
		)
		gate := make(chan struct{}) // start together, as replicas do at a tick
		for i, r := range contenders {
			wg.Go(func() {
				<-gate
				open := make([]int, jobs)
				for j := range open {
					open[j] = j
				}
				for attempt := 0; len(open) > 0; attempt++ {
					if attempt == 50 {
						mu.Lock()
						errs = append(errs, fmt.Errorf("contender %d: %d jobs undecided after 50 attempts", i, len(open)))
						mu.Unlock()
						return
					}
					reqs := make([]mutex.Request, len(open))
					for k, j := range open {
						reqs[k] = mutex.Request{Name: fmt.Sprintf("job%d", j), TTL: 2 * time.Second,
							Options: []mutex.LockOption{mutex.Occurrence(at)}}
					}
					var next []int
					for k, res := range r.TryLockAll(ctx, reqs) {
						j := open[k]
						switch {
						case res.Err == nil:
							mu.Lock()
							wins[j] = append(wins[j], i)
							fences[j] = res.Lock.Fence()
							mu.Unlock()
							defer res.Lock.Release(ctx)
						case errors.Is(res.Err, mutex.ErrHeld), errors.Is(res.Err, mutex.ErrAlreadyRun):
						case errors.Is(res.Err, mutex.ErrNoQuorum):
							next = append(next, j)
						default:
							mu.Lock()
							errs = append(errs, res.Err)
							mu.Unlock()
							return
						}
					}
					open = next
					time.Sleep(time.Duration(1+attempt+i) * time.Millisecond) // jitter stand-in: contenders retry at different times
				}
			})
		}
		close(gate)
		wg.Wait()
		for _, err := range errs {
			t.Fatalf("tick %d: %v", o, err)
		}
		for j := range jobs {
			if len(wins[j]) != 1 {
				t.Fatalf("tick %d of job %d won by contenders %v, want exactly one", o, j, wins[j])
			}
			if fences[j] <= lastFence[j] {
				t.Fatalf("tick %d of job %d: fence %d after %d", o, j, fences[j], lastFence[j])
			}
			lastFence[j] = fences[j]
		}
	}
}

// TestTryLockAllNodeFaults: a batch is decided without a paused node, and
// with a second node killed, every lock of it fails with a tally that
// names both, in about a node timeout, leaving no key behind.
func TestTryLockAllNodeFaults(t *testing.T) {
	c := redistest.Start(t, 3)
	r := newRedlock(t, c, mutex.WithNodeTimeout(300*time.Millisecond))
	ctx := ctxTimeout(t, time.Minute)
	c.Node(1).Pause()
	t.Cleanup(c.Node(1).Resume)
	reqs := make([]mutex.Request, 300)
	for j := range reqs {
		reqs[j] = mutex.Request{Name: fmt.Sprintf("job%d", j), TTL: 2 * time.Second}
	}
	var wg sync.WaitGroup
	for j, res := range r.TryLockAll(ctx, reqs) {
		if res.Err != nil {
			t.Fatalf("lock %d, one node of 3 paused: %v", j, res.Err)
		}
		wg.Go(func() {
			if err := res.Lock.Release(ctx); err != nil {
				t.Errorf("release %d: %v", j, err)
			}
		})
	}
	wg.Wait()

	c.Node(2).Kill()
	start := time.Now()
	results := r.TryLockAll(ctx, reqs)
	took := time.Since(start)
	live := c.Node(0).Client(t)
	for j, res := range results {
		var qe *mutex.QuorumError
		if !errors.As(res.Err, &qe) || !errors.Is(res.Err, mutex.ErrNoQuorum) || !failedVote(qe.Nodes[1].Vote) || !failedVote(qe.Nodes[2].Vote) {
			t.Fatalf("lock %d, two nodes of 3 down: %v, want ErrNoQuorum with nodes 1 and 2 failed", j, res.Err)
		}
		n, err := live.Exists(ctx, lockKey(t, r, reqs[j].Name).Lock).Result()
		if err != nil {
			t.Fatalf("EXISTS lock %d on the live node: %v", j, err)
		}
		if n != 0 {
			t.Fatalf("lock %d left on the live node", j)
		}
	}
	// One node timeout for the votes, one for releasing where we may hold.
	if took > 2*300*time.Millisecond+500*time.Millisecond {
		t.Errorf("a failed batch took %v, want about two node timeouts (300ms each)", took)
	}
}
