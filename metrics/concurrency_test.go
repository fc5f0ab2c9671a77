package metrics_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/metrics"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// lockEvents are an acquisition granted by three nodes and one refused
// because a node failed and another restarted.
func lockEvents() (ok, failed mutex.Event) {
	ok = mutex.Event{Op: "acquire", Name: "j", Duration: time.Millisecond, Nodes: []mutex.NodeResult{
		{Node: "n1", Vote: "yes"}, {Node: "n2", Vote: "yes"}, {Node: "n3", Vote: "yes"},
	}}
	nodes := []mutex.NodeResult{
		{Node: "n1", Vote: "yes"}, {Node: "n2", Vote: "unreachable", Err: errors.New("refused")},
		{Node: "n3", Vote: "warming_up", WarmingUp: true},
	}
	failed = mutex.Event{Op: "acquire", Name: "j", Duration: time.Millisecond, Nodes: nodes,
		Err: &mutex.QuorumError{Op: "acquire", Name: "j", Quorum: 2, Nodes: nodes, Reason: mutex.ErrNoQuorum}}
	return ok, failed
}

// TestConcurrentObservers hammers both hooks from many goroutines while
// other jobs are added and removed (run it with -race), then checks the
// counts of the job that stayed.
func TestConcurrentObservers(t *testing.T) {
	m, reg := newCollector(t)
	so, lo, leaks := m.SchedulerObserver(), m.LockObserver(), m.LeakObserver()
	so(scheduler.Event{Kind: "job_added", Job: "stays"})
	ok, failed := lockEvents()
	const workers, rounds = 8, 501 // rounds%3 == 0: each worker ends with a removal
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			churn := fmt.Sprintf("churn-%d", w)
			for i := range rounds {
				id := fmt.Sprintf("run-%d-%d", w, i) // a run's events carry its id
				so(scheduler.Event{Kind: "run_started", Job: "stays", RunID: id, Tick: time.Now(), StartDelay: time.Millisecond})
				so(scheduler.Event{Kind: "run_finished", Job: "stays", RunID: id, Result: "success", Duration: time.Millisecond})
				so(scheduler.Event{Kind: "skipped", Job: "stays", Skip: "held"})
				lo(ok)
				lo(failed)
				switch i % 3 {
				case 0:
					so(scheduler.Event{Kind: "job_added", Job: churn})
				case 1:
					so(scheduler.Event{Kind: "run_finished", Job: churn, Result: "failure"})
				case 2:
					so(scheduler.Event{Kind: "job_removed", Job: churn})
				}
				leaks(leakscan.Event{Scan: true, Leaks: map[string]int{"orphaned": i}})
			}
		})
	}
	wg.Wait()
	const n = workers * rounds
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"redcron_scheduler_runs_total", []string{"job_name", "stays", "result", "success"}, n},
		{"redcron_scheduler_skips_total", []string{"job_name", "stays", "reason", "held"}, n},
		{"redcron_scheduler_runs_in_progress", []string{"job_name", "stays"}, 0},
		{"redcron_scheduler_run_duration_seconds", []string{"job_name", "stays"}, n},
		{"redcron_lock_acquire_attempts_total", []string{"result", "acquired"}, n},
		{"redcron_lock_acquire_attempts_total", []string{"result", "no_quorum"}, n},
		{"redcron_lock_node_errors_total", []string{"node", "n2", "vote", "unreachable"}, n},
		{"redcron_lock_node_errors_total", []string{"node", "n1"}, 0},
		{"redcron_leak_scans_total", []string{"result", "ok"}, n},
	} {
		if got := get(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s%q = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := get(t, reg, "redcron_leaked_locks", "class", "orphaned"); got < 0 || got >= rounds {
		t.Errorf("orphaned locks %v: not one of the reported counts", got)
	}
	// Every churned job was removed last: none is left.
	for w := range workers {
		if _, ok := value(t, reg, "redcron_scheduler_runs_total", "job_name", fmt.Sprintf("churn-%d", w)); ok {
			t.Errorf("series of removed job churn-%d left", w)
		}
	}
}

// TestHooksDoNotAllocate: the hooks allocate nothing once a job's and the
// nodes' series exist.
func TestHooksDoNotAllocate(t *testing.T) {
	m, err := metrics.New(metrics.WithNodes("n1", "n2", "n3"))
	if err != nil {
		t.Fatal(err)
	}
	so, lo := m.SchedulerObserver(), m.LockObserver()
	so(scheduler.Event{Kind: "job_added", Job: "j"})
	ok, failed := lockEvents()
	started := scheduler.Event{Kind: "run_started", Job: "j", Tick: time.Now(), StartDelay: time.Millisecond}
	finished := scheduler.Event{Kind: "run_finished", Job: "j", Result: "success", Duration: time.Second}
	skipped := scheduler.Event{Kind: "skipped", Job: "j", Skip: "already_run"}
	for name, f := range map[string]func(){
		"run":      func() { so(started); so(finished) },
		"skip":     func() { so(skipped) },
		"acquired": func() { lo(ok) },
		"refused":  func() { lo(failed) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per event", name, n)
		}
	}
}

func BenchmarkSchedulerObserver(b *testing.B) {
	m, err := metrics.New()
	if err != nil {
		b.Fatal(err)
	}
	so := m.SchedulerObserver()
	so(scheduler.Event{Kind: "job_added", Job: "j"})
	var goroutines atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprint(goroutines.Add(1)) // one run at a time per goroutine
		started := scheduler.Event{Kind: "run_started", Job: "j", RunID: id, Tick: time.Now(), StartDelay: time.Millisecond}
		finished := scheduler.Event{Kind: "run_finished", Job: "j", RunID: id, Result: "success", Duration: time.Second}
		for pb.Next() {
			so(started)
			so(finished)
		}
	})
}

func BenchmarkLockObserver(b *testing.B) {
	m, err := metrics.New()
	if err != nil {
		b.Fatal(err)
	}
	lo := m.LockObserver()
	ok, _ := lockEvents()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			lo(ok)
		}
	})
}
