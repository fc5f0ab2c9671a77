package systemtest_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/e2e"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestMissedTicks: while every node is paused (SIGSTOP) no replica can
// claim a tick; once they are back (their servers did not restart), the missed-tick check of one replica
// finds the ticks that ran nowhere, records them in the job's ledger with
// the reason the replicas reported (no_quorum), counts each once in
// redcron_scheduler_missed_ticks_total and logs it; ticks that ran are not
// reported.
func TestMissedTicks(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	var logs e2e.SyncBuffer
	f := tickReplicas(t, c, redcron.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		redcron.WithLockOptions(mutex.WithTrustedNodes(), mutex.WithMaxTTL(2*time.Second)),
		redcron.WithLeakScanOptions(leakscan.WithInterval(time.Second)))
	mu, ran, regs, runs := &f.mu, f.ran, f.regs, f.runs
	// A node vouches for the ticks after its start, the max TTL and 5 s.
	waitFor(t, 30*time.Second, "runs before the outage", func() bool { return runs() >= 8 })

	for _, n := range c.Nodes() {
		n.Pause()
	}
	<-time.After(3 * time.Second) // the outage: ticks come and go, none can be claimed
	for _, n := range c.Nodes() {
		n.Resume()
	}
	missed := func(reason string) float64 {
		total := 0.0
		for _, reg := range regs {
			total += counterOf(t, reg, "redcron_scheduler_missed_ticks_total", "tick", reason)
		}
		return total
	}
	waitFor(t, 30*time.Second, "missed ticks counted", func() bool { return missed("no_quorum") >= 2 })

	keys, err := engine.NewKeyspace("")
	if err != nil {
		t.Fatal(err)
	}
	lk, _ := keys.Lock("tick")
	history, _ := ledger.Read(context.Background(), e2e.NodesOf(t, c), lk, 100)
	mu.Lock()
	defer mu.Unlock()
	byReason := map[string]int{}
	for _, r := range history {
		if r.State != ledger.StateMissed {
			continue
		}
		byReason[r.Result]++
		if ran[r.Tick] {
			t.Errorf("tick %v ran, but is recorded missed", time.UnixMilli(r.Tick))
		}
		// A tick may also be missed because the lease of a run from before
		// the outage was still held (overlap); the outage's are no_quorum,
		// reported by the replica whose shard the job is in (the other
		// does not ask for its ticks).
		if r.Result == "no_quorum" && !strings.Contains(r.Error, ": no_quorum") {
			t.Errorf("missed tick %v: reports %q; want no_quorum from the replica that asked", time.UnixMilli(r.Tick), r.Error)
		}
	}
	for reason, n := range byReason {
		if got := missed(reason); float64(n) != got {
			t.Errorf("%d ticks missed for %s in the ledger, %v counted: each must be counted once", n, reason, got)
		}
	}
	if !strings.Contains(logs.String(), "missed tick") {
		t.Error("no missed tick logged")
	}
}

// waitFor polls cond every 50 ms until it holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, d)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// counterOf returns the value of the counter name{job_name=job,reason=reason}
// in reg, 0 if absent.
func counterOf(t *testing.T, reg *prometheus.Registry, name, job, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["job_name"] == job && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestMissedTicksNoLedger: without a ledger (mutex.WithLedger(0, 0)) there
// is no missed-tick check: the ticks that ran are not taken for missed,
// and no ledger is written.
func TestMissedTicksNoLedger(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	reg := prometheus.NewRegistry()
	scans := make(chan leakscan.Event, 100)
	s, err := redcron.New(c.Addrs(), redcron.WithMetrics(reg),
		redcron.WithLockOptions(mutex.WithTrustedNodes(), mutex.WithLedger(0, time.Hour)),
		redcron.WithLeakScanOptions(leakscan.WithInterval(time.Second), leakscan.WithObserver(func(e leakscan.Event) {
			if e.Scan {
				select {
				case scans <- e:
				default:
				}
			}
		})),
		redcron.WithSchedulerOptions(scheduler.WithSeconds()))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 100)
	if err := s.Add("tick", "* * * * * *", func(context.Context, scheduler.RunInfo) error { ran <- struct{}{}; return nil },
		scheduler.WithLockTTL(time.Second), scheduler.WithMisfireGrace(time.Second)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	defer func() { _ = s.Shutdown(context.Background()); <-done }()
	for range 3 {
		<-ran
	}
	for range 3 { // scans after the ticks' graces ended
		if e := <-scans; len(e.Missed) > 0 {
			t.Fatalf("a scan found missed ticks without a ledger: %v", e.Missed)
		}
	}
	keys, _ := engine.NewKeyspace("")
	k, _ := keys.Lock("tick")
	for _, n := range c.Nodes() {
		if got := n.Client(t).Exists(context.Background(), k.Ledger).Val(); got != 0 {
			t.Errorf("a ledger was written on %s", n.Addr())
		}
	}
}

// TestMissedAfterNodeRestarts: nodes that restart empty forget the records
// of the ticks that ran before; the missed-tick check must not take those
// ticks for missed, whether every node is killed and restarted at once or
// the nodes restart one at a time (a rolling restart). Two replicas run a
// one-second job on three nodes that are not trusted (a restarted node
// waits out the max TTL, 2 s here); the check runs every second, and the
// test waits for scans well after the ticks before the restarts are due
// for judgement.
func TestMissedAfterNodeRestarts(t *testing.T) {
	t.Parallel()
	for _, rolling := range []bool{false, true} {
		t.Run(map[bool]string{false: "all at once", true: "rolling"}[rolling], func(t *testing.T) {
			t.Parallel()
			c := redistest.Start(t, 3)
			scans := make(chan time.Time, 1000) // when each scan ended
			f := tickReplicas(t, c, redcron.WithLockOptions(mutex.WithMaxTTL(2*time.Second)),
				redcron.WithLeakScanOptions(leakscan.WithInterval(time.Second), leakscan.WithObserver(func(e leakscan.Event) {
					if e.Scan && e.Err == nil {
						scans <- time.Now()
					}
				})))
			mu, ran, regs, runs := &f.mu, f.ran, f.regs, f.runs
			waitFor(t, 20*time.Second, "runs before the restarts", func() bool { return runs() >= 3 })
			if rolling {
				for _, n := range c.Nodes() {
					n.Restart()
					before := runs() // the other two keep the job running while it warms up
					waitFor(t, 20*time.Second, "runs after a node's restart", func() bool { return runs() >= before+3 })
				}
			} else {
				for _, n := range c.Nodes() {
					n.Kill()
				}
				for _, n := range c.Nodes() {
					n.Restart()
				}
			}
			restarted := time.Now()
			before := runs()
			waitFor(t, 30*time.Second, "runs after the restarts", func() bool { return runs() >= before+3 })
			// The ticks before the restarts are judged from their grace's end
			// plus 10 s: wait for a scan after that.
			for judged := restarted.Add(13 * time.Second); ; {
				if at := <-scans; at.After(judged) {
					break
				}
			}

			keys, err := engine.NewKeyspace("")
			if err != nil {
				t.Fatal(err)
			}
			lk, _ := keys.Lock("tick")
			history, _ := ledger.Read(context.Background(), e2e.NodesOf(t, c), lk, 1000)
			mu.Lock()
			defer mu.Unlock()
			recorded := 0
			for _, r := range history {
				if r.State != ledger.StateMissed {
					continue
				}
				recorded++
				if ran[r.Tick] {
					t.Errorf("tick %v ran, but is recorded missed (%s: %s)", time.UnixMilli(r.Tick).Format(time.TimeOnly), r.Result, r.Error)
				}
			}
			counted := 0.0
			for _, reg := range regs {
				for _, reason := range []string{ledger.NoReport, "no_quorum", "overlap", "paused"} {
					counted += counterOf(t, reg, "redcron_scheduler_missed_ticks_total", "tick", reason)
				}
			}
			if counted > float64(recorded) {
				t.Errorf("%v missed ticks counted, %d recorded in the ledger", counted, recorded)
			}
		})
	}
}

// tickFleet is two replicas, replica-a and replica-b, running the job tick
// every second (lock TTL and misfire grace 1 s), with the ticks they ran
// and their metrics.
type tickFleet struct {
	mu   sync.Mutex
	ran  map[int64]bool // ticks run, unix ms
	regs []*prometheus.Registry
}

// runs returns how many ticks ran.
func (f *tickFleet) runs() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.ran) }

// tickReplicas starts a tickFleet over c with opts; t's cleanup stops it.
func tickReplicas(t *testing.T, c *redistest.Cluster, opts ...redcron.Option) *tickFleet {
	t.Helper()
	f := &tickFleet{ran: map[int64]bool{}}
	for _, id := range []string{"replica-a", "replica-b"} {
		reg := prometheus.NewRegistry()
		f.regs = append(f.regs, reg)
		s, err := redcron.New(c.Addrs(), append([]redcron.Option{redcron.WithMetrics(reg),
			redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithInstanceID(id))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Add("tick", "* * * * * *", func(_ context.Context, run scheduler.RunInfo) error {
			f.mu.Lock()
			f.ran[run.Tick.UnixMilli()] = true
			f.mu.Unlock()
			return nil
		}, scheduler.WithLockTTL(time.Second), scheduler.WithMisfireGrace(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(context.Background()) }()
		t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
	}
	return f
}
