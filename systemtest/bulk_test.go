package systemtest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestBulkClaim: three replicas run 20 one-second jobs and "slow", whose
// runs take 2.5 s. The shards' holders claim the ticks in bulk: while
// "slow" runs, it has no lock key on the nodes, only its running value in
// its shard's state. The replica running it then shuts down: its shards
// go to the others, but the run goes on to its end, uncancelled, and no
// replica starts "slow" again before it ends. Every tick runs at most
// once, and each job's fences increase with its ticks.
func TestBulkClaim(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	const jobs = 20
	var mu sync.Mutex
	type run struct {
		tick  time.Time
		fence uint64
		by    string
	}
	ran := map[string][]run{}
	slowRunning, slowMax := 0, 0
	slowStarted := make(chan string, 100) // the replica that started a run of slow
	slowEnded := make(chan error, 100)    // its context's error at the end
	ids := []string{"replica-a", "replica-b", "replica-c"}
	stops := map[string]func(){}
	for _, id := range ids {
		s, err := redcron.New(c.Addrs(),
			redcron.WithLockOptions(mutex.WithTrustedNodes(), mutex.WithMaxTTL(2*time.Second)),
			redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithInstanceID(id)))
		if err != nil {
			t.Fatal(err)
		}
		add := func(name string, job func(ctx context.Context)) {
			err := s.Add(name, "* * * * * *", func(ctx context.Context, info scheduler.RunInfo) error {
				mu.Lock()
				ran[name] = append(ran[name], run{info.Tick, info.Fence, id})
				mu.Unlock()
				job(ctx)
				return nil
			}, scheduler.WithLockTTL(time.Second))
			if err != nil {
				t.Fatal(err)
			}
		}
		for j := range jobs {
			add(fmt.Sprintf("job-%02d", j), func(context.Context) {})
		}
		add("slow", func(ctx context.Context) {
			mu.Lock()
			slowRunning++
			slowMax = max(slowMax, slowRunning)
			mu.Unlock()
			slowStarted <- id
			select {
			case <-ctx.Done():
			case <-time.After(2500 * time.Millisecond):
			}
			mu.Lock()
			slowRunning--
			mu.Unlock()
			slowEnded <- ctx.Err()
		})
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(context.Background()) }()
		stops[id] = sync.OnceFunc(func() { _ = s.Shutdown(context.Background()); <-done })
		t.Cleanup(stops[id])
	}

	// Settled (shards shared out, anchors won): the next run of slow.
	<-time.After(4 * time.Second)
	drain(slowStarted, slowEnded)
	by := <-slowStarted
	ks, _ := engine.NewKeyspace("")
	k, _ := ks.Lock("slow")
	ctx := context.Background()
	on := 0 // nodes with slow's running value
	for i := range 3 {
		rc := c.Node(i).Client(t)
		if v := rc.Get(ctx, k.Lock).Val(); v != "" {
			t.Errorf("node %d: slow's lock key holds %q while it runs: not claimed in bulk", i, v)
		}
		if r := rc.HGet(ctx, k.State, "r|slow").Val(); r != "" {
			on++
		}
	}
	if on < 2 {
		t.Errorf("slow's running value in its shard's state on %d of 3 nodes while it runs, want a majority", on)
	}
	stops[by]() // waits for the run to end
	if err := <-slowEnded; err != nil {
		t.Errorf("slow's run on %s, which shut down mid-run: context ended with %v", by, err)
	}
	<-time.After(3 * time.Second)

	mu.Lock()
	defer mu.Unlock()
	if slowMax > 1 {
		t.Errorf("slow ran %d times at once", slowMax)
	}
	for name, runs := range ran {
		slices.SortFunc(runs, func(a, b run) int { return a.tick.Compare(b.tick) })
		for i := 1; i < len(runs); i++ {
			switch {
			case runs[i].tick.Equal(runs[i-1].tick):
				t.Errorf("%s's tick %v ran twice (%s, %s)", name, runs[i].tick.Format(time.TimeOnly), runs[i-1].by, runs[i].by)
			case runs[i].fence <= runs[i-1].fence:
				t.Errorf("%s's fence %d at %v (%s) not above %d at %v (%s)", name, runs[i].fence, runs[i].tick.Format(time.TimeOnly),
					runs[i].by, runs[i-1].fence, runs[i-1].tick.Format(time.TimeOnly), runs[i-1].by)
			}
		}
	}
	if len(ran["slow"]) < 2 {
		t.Errorf("slow ran %d times", len(ran["slow"]))
	}
}

// drain empties the channels of runs started and ended so far.
func drain(started chan string, ended chan error) {
	for {
		select {
		case <-started:
		case <-ended:
		default:
			return
		}
	}
}
