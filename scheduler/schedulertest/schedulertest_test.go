package schedulertest_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/scheduler/schedulertest"
)

// TestTwoReplicasInFakeTime: two schedulers over one Locker, as two
// replicas over the nodes, run each tick of a job due every minute once
// between them, with fences that grow, in testing/synctest's fake time.
func TestTwoReplicasInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := schedulertest.NewLocker()
		var mu sync.Mutex
		runs := map[time.Time]int{}
		var fences []uint64
		job := scheduler.JobFunc(func(_ context.Context, run scheduler.RunInfo) error {
			mu.Lock()
			defer mu.Unlock()
			runs[run.Tick]++
			fences = append(fences, run.Fence)
			return nil
		})
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for _, id := range []string{"a", "b"} {
			s, err := scheduler.New(l, scheduler.WithInstanceID(id))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Add("sync", "* * * * *", job); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { _ = s.Run(ctx) })
		}
		start := time.Now()
		time.Sleep(time.Until(start.Truncate(time.Minute).Add(3*time.Minute + 30*time.Second)))
		cancel()
		wg.Wait()
		if len(runs) != 3 {
			t.Errorf("%d ticks ran in three minutes, want 3: %v", len(runs), runs)
		}
		for tick, n := range runs {
			if n != 1 {
				t.Errorf("tick %v ran %d times", tick, n)
			}
		}
		for i := 1; i < len(fences); i++ {
			if fences[i] <= fences[i-1] {
				t.Errorf("fences %v do not grow", fences)
			}
		}
	})
}
