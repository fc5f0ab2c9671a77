package systemtest_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/e2e"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestWarmUpFirstTick: on three freshly started servers, the front door
// logs one state per node (warming up, with when it votes and the first
// tick it vouches for, then up), and when the first tick can run; a job
// due every second first runs at that very tick, not a second later or
// earlier.
func TestWarmUpFirstTick(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	var logs e2e.SyncBuffer
	s, err := redcron.New(c.Addrs(), redcron.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		redcron.WithLockOptions(mutex.WithMaxTTL(3*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan time.Time, 100)
	err = s.Add("tick", "@every 1s", scheduler.JobFunc(func(_ context.Context, run scheduler.RunInfo) error {
		ran <- run.Tick
		return nil
	}), scheduler.WithLockTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var first time.Time
	select {
	case first = <-ran:
	case <-time.After(30 * time.Second):
		t.Fatalf("no tick ran in 30 s:\n%s", logs.String())
	}
	// A few ticks more, for the nodes' states after the warm-up.
	for range 3 {
		<-ran
	}
	cancel()
	<-done

	var firstTicks []time.Time
	states := map[string][]string{} // node → the states logged, in order
	for line := range strings.Lines(logs.String()) {
		var rec struct {
			Msg       string    `json:"msg"`
			Node      string    `json:"node"`
			State     string    `json:"state"`
			FirstTick time.Time `json:"first_tick"`
			TicksFrom time.Time `json:"ticks_from"`
			Unlogged  int       `json:"changes_not_logged"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch {
		case rec.Msg == "first tick can run":
			firstTicks = append(firstTicks, rec.FirstTick)
		case strings.HasPrefix(rec.Msg, "redis node "):
			states[rec.Node] = append(states[rec.Node], rec.State)
			if rec.State == "warming_up" && rec.TicksFrom.IsZero() || rec.Unlogged != 0 {
				t.Errorf("node line %s", line)
			}
		}
	}
	if len(firstTicks) != 1 || !firstTicks[0].Equal(first) {
		t.Errorf("logged that the first tick can run at %v; the first tick that ran was %v:\n%s", firstTicks, first, logs.String())
	}
	for _, a := range c.Addrs() {
		if got := strings.Join(states[a], ","); got != "warming_up,up" && got != "warming_up" {
			t.Errorf("node %s: states logged %s, want warming_up and then up", a, got)
		}
	}
}
