package systemtest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestShards: three replicas run 30 one-second jobs; replica-c also runs
// a job the others lack (a deploy in progress). Once the replicas have
// shared out the shards, only the holder of a job's shard asks the nodes
// for its ticks: the lock attempts of a second are about one per job, not
// one per job and replica. Every tick runs once, on each replica a fair
// part of them, and replica-c's own job too; when replica-c shuts down,
// it hands its shards over to the other two without missing a tick.
func TestShards(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	const jobs = 30
	type key struct {
		job  string
		tick int64
	}
	var mu sync.Mutex
	ran := map[key][]string{} // the replicas that ran each job's tick
	var attempts atomic.Int64 // acquisition attempts sent to the nodes, all replicas
	ids := []string{"replica-a", "replica-b", "replica-c"}
	stops := make([]func(), len(ids))
	for i, id := range ids {
		s, err := redcron.New(c.Addrs(),
			redcron.WithLockOptions(mutex.WithTrustedNodes(), mutex.WithMaxTTL(2*time.Second), mutex.WithObserver(func(e mutex.Event) {
				if e.Op == "acquire" && !e.Occurrence.IsZero() {
					attempts.Add(1)
				}
			})),
			redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithInstanceID(id)))
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, jobs, jobs+1)
		for j := range jobs {
			names[j] = fmt.Sprintf("job-%02d", j)
		}
		if id == "replica-c" {
			names = append(names, "only-c")
		}
		for _, name := range names {
			err := s.Add(name, "* * * * * *", func(_ context.Context, run scheduler.RunInfo) error {
				mu.Lock()
				k := key{name, run.Tick.Unix()}
				ran[k] = append(ran[k], id)
				mu.Unlock()
				return nil
			}, scheduler.WithLockTTL(time.Second))
			if err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(context.Background()) }()
		stops[i] = func() { _ = s.Shutdown(context.Background()); <-done }
		t.Cleanup(stops[i])
	}
	// window waits for the ticks of [from, from+n s) to be handled, then
	// returns their runs by replica and the job-ticks run, failing the test
	// on a tick run twice.
	window := func(from time.Time, n int) (map[string]int, map[string]int) {
		<-time.After(time.Until(from.Add(time.Duration(n)*time.Second + 1500*time.Millisecond)))
		mu.Lock()
		defer mu.Unlock()
		by, count := map[string]int{}, map[string]int{}
		for k, reps := range ran {
			if len(reps) > 1 {
				t.Errorf("%s's tick %v ran %d times: %v", k.job, time.Unix(k.tick, 0).Format(time.TimeOnly), len(reps), reps)
			}
			if k.tick >= from.Unix() && k.tick < from.Unix()+int64(n) {
				by[reps[0]]++
				count[k.job]++
			}
		}
		return by, count
	}

	settled := time.Now().Truncate(time.Second).Add(5 * time.Second) // the shards shared out
	<-time.After(time.Until(settled))
	before := attempts.Load()
	by, count := window(settled, 5)
	perSecond := float64(attempts.Load()-before) / 5
	if perSecond > 1.5*(jobs+1) {
		t.Errorf("%.0f lock attempts a second for %d jobs: the replicas still all ask for every tick", perSecond, jobs+1)
	}
	total := 0
	for _, n := range by {
		total += n
	}
	if total < 5*(jobs+1)*9/10 {
		t.Errorf("%d of %d job-ticks ran", total, 5*(jobs+1))
	}
	for _, id := range ids {
		if by[id] < total/6 {
			t.Errorf("replica %s ran %d of %d job-ticks: %v", id, by[id], total, by)
		}
	}
	if count["only-c"] < 4 {
		t.Errorf("replica-c's own job ran %d of 5 ticks", count["only-c"])
	}

	// replica-c stops: it hands its shards over without a gap.
	after := time.Now().Truncate(time.Second).Add(time.Second)
	stops[2]()
	by, count = window(after, 4)
	for j := range jobs {
		if name := fmt.Sprintf("job-%02d", j); count[name] < 4 {
			t.Errorf("from replica-c's stop on, %s ran %d of 4 ticks (%v)", name, count[name], by)
		}
	}
}
