package systemtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/e2e"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestTriggerWithNodeHung: a trigger request on a majority of the nodes is
// taken and run while another node hangs (SIGSTOP): the replicas read the
// nodes' requests in parallel, each within its own time.
func TestTriggerWithNodeHung(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	s, err := redcron.New(c.Addrs(), redcron.WithLockOptions(mutex.WithTrustedNodes()))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan scheduler.RunInfo, 10)
	if err := s.Add("report", "0 0 1 1 *", func(_ context.Context, run scheduler.RunInfo) error { ran <- run; return nil }); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	defer func() { _ = s.Shutdown(context.Background()); <-done }()

	c.Node(0).Pause() // the first node every replica reads
	defer c.Node(0).Resume()
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("report")
	for _, n := range e2e.NodesOf(t, c)[1:] {
		if err := n.PlaceTrigger(context.Background(), keys, lk, "ops|1|test", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case run := <-ran:
		if !run.Tick.IsZero() {
			t.Errorf("the triggered run has tick %v, want none", run.Tick)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the request was not taken within 15 s while one node of three hung")
	}
}
