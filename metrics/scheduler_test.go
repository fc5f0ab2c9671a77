package metrics_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/metrics"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestRunsOnRedis runs two jobs every second on three real redis-servers
// and checks every series against what the jobs themselves counted.
func TestRunsOnRedis(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	m, reg := newCollector(t, metrics.WithNodes(c.names...))
	s := newScheduler(t, scheduler.NewRedlockLocker(c.redlock(t, m)), m)
	var okRuns, failRuns atomic.Int64
	if err := s.Add("ok", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
		okRuns.Add(1)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("fail", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
		failRuns.Add(1)
		return errors.New("boom")
	})); err != nil {
		t.Fatal(err)
	}
	// Before any run, every series of both jobs exists at 0.
	compare(t, m, `
		redcron_scheduler_runs_total{job_name="fail",result="abandoned"} 0
		redcron_scheduler_runs_total{job_name="fail",result="canceled"} 0
		redcron_scheduler_runs_total{job_name="fail",result="failure"} 0
		redcron_scheduler_runs_total{job_name="fail",result="lock_lost"} 0
		redcron_scheduler_runs_total{job_name="fail",result="panic"} 0
		redcron_scheduler_runs_total{job_name="fail",result="success"} 0
		redcron_scheduler_runs_total{job_name="fail",result="timeout"} 0
		redcron_scheduler_runs_total{job_name="ok",result="abandoned"} 0
		redcron_scheduler_runs_total{job_name="ok",result="canceled"} 0
		redcron_scheduler_runs_total{job_name="ok",result="failure"} 0
		redcron_scheduler_runs_total{job_name="ok",result="lock_lost"} 0
		redcron_scheduler_runs_total{job_name="ok",result="panic"} 0
		redcron_scheduler_runs_total{job_name="ok",result="success"} 0
		redcron_scheduler_runs_total{job_name="ok",result="timeout"} 0
		redcron_scheduler_last_success_timestamp_seconds{job_name="fail"} 0
		redcron_scheduler_last_success_timestamp_seconds{job_name="ok"} 0
	`, "redcron_scheduler_runs_total", "redcron_scheduler_last_success_timestamp_seconds")

	begin := float64(time.Now().UnixNano()) / 1e9
	stop := start(t, s)
	waitFor(t, "two successes and two failures", func() bool {
		return get(t, reg, "redcron_scheduler_runs_total", "job_name", "ok", "result", "success") >= 2 &&
			get(t, reg, "redcron_scheduler_runs_total", "job_name", "fail", "result", "failure") >= 2
	})
	stop() // waits for the runs in progress: the counts are final
	end := float64(time.Now().UnixNano()) / 1e9

	ok, fail := okRuns.Load(), failRuns.Load()
	total := ok + fail
	checks := []struct {
		name   string
		labels []string
		want   int64
	}{
		{"redcron_scheduler_runs_total", []string{"job_name", "ok", "result", "success"}, ok},
		{"redcron_scheduler_runs_total", []string{"job_name", "fail", "result", "failure"}, fail},
		{"redcron_scheduler_run_duration_seconds", []string{"job_name", "ok"}, ok},
		{"redcron_scheduler_run_duration_seconds", []string{"job_name", "fail"}, fail},
		{"redcron_scheduler_start_delay_seconds", []string{"job_name", "ok"}, ok},
		{"redcron_scheduler_start_delay_seconds", []string{"job_name", "fail"}, fail},
		{"redcron_scheduler_runs_in_progress", []string{"job_name", "ok"}, 0},
		{"redcron_scheduler_last_success_timestamp_seconds", []string{"job_name", "fail"}, 0},
		// One lease per run, released at its end; instant jobs need no
		// extension.
		{"redcron_lock_acquire_attempts_total", []string{"result", "acquired"}, total},
		{"redcron_lock_acquire_duration_seconds", nil, total},
		{"redcron_lock_releases_total", []string{"result", "released"}, total},
		{"redcron_lock_extensions_total", nil, 0},
		{"redcron_lock_leases_lost_total", nil, 0},
	}
	for _, ch := range checks {
		got := sum(t, reg, ch.name, ch.labels...)
		if strings.HasSuffix(ch.name, "_seconds") && !strings.HasSuffix(ch.name, "_timestamp_seconds") {
			got = get(t, reg, ch.name, ch.labels...) // a histogram: its count
		}
		if got != float64(ch.want) {
			t.Errorf("%s%q = %v, want %d", ch.name, ch.labels, got, ch.want)
		}
	}
	// Nothing else: one replica skips nothing, and every other result is 0.
	if got := sum(t, reg, "redcron_scheduler_runs_total"); got != float64(total) {
		t.Errorf("%v runs in all, the jobs ran %d times", got, total)
	}
	if got := sum(t, reg, "redcron_scheduler_skips_total"); got != 0 {
		t.Errorf("%v skips with a single replica", got)
	}
	if last := get(t, reg, "redcron_scheduler_last_success_timestamp_seconds", "job_name", "ok"); last < begin || last > end {
		t.Errorf("last success of ok at %v, outside the test's [%v, %v]", last, begin, end)
	}
	compare(t, m, nodeSeries(c.names, always(1), always(0), noErrors), nodeNames...)
	lint(t, m)
}

// TestCompetingReplicas runs a job every second on two replicas, each with
// its own Collector as in two processes: every tick runs once, on one of
// them, and the other reports a skip.
func TestCompetingReplicas(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	var (
		mu    sync.Mutex
		ticks = map[time.Time]int{}
	)
	job := scheduler.JobFunc(func(_ context.Context, run scheduler.RunInfo) error {
		mu.Lock()
		defer mu.Unlock()
		ticks[run.Tick]++
		return nil
	})
	var stops []func()
	var collectors []*metrics.Collector
	for _, id := range []string{"replica-a", "replica-b"} {
		m, _ := newCollector(t)
		s := newScheduler(t, scheduler.NewRedlockLocker(c.redlock(t, m)), m, scheduler.WithInstanceID(id))
		if err := s.Add("shared", "* * * * * *", job); err != nil {
			t.Fatal(err)
		}
		collectors = append(collectors, m)
		stops = append(stops, start(t, s))
	}
	total := func(name string, labels ...string) (n float64) {
		for _, m := range collectors {
			n += sum(t, m2g(m), name, labels...)
		}
		return n
	}
	waitFor(t, "three runs and a skip on the other replica", func() bool {
		return total("redcron_scheduler_runs_total", "result", "success") >= 3 &&
			total("redcron_scheduler_skips_total") >= 1
	})
	for _, stop := range stops {
		stop()
	}

	mu.Lock()
	defer mu.Unlock()
	for tick, n := range ticks {
		if n != 1 {
			t.Errorf("tick %v ran %d times", tick, n)
		}
	}
	if runs := total("redcron_scheduler_runs_total", "result", "success"); runs != float64(len(ticks)) {
		t.Errorf("the replicas count %v successful runs, the job ran %d ticks", runs, len(ticks))
	}
	// The loser of a tick sees the lock held or the tick already run.
	skips := total("redcron_scheduler_skips_total", "reason", "held") +
		total("redcron_scheduler_skips_total", "reason", "already_run")
	if all := total("redcron_scheduler_skips_total"); skips == 0 || skips != all {
		t.Errorf("%v held or already_run skips, %v in all", skips, all)
	}
	// Both replicas handle every tick, apart from the one in progress when
	// the first was stopped.
	var handled []float64
	for _, m := range collectors {
		handled = append(handled, sum(t, m2g(m), "redcron_scheduler_runs_total")+sum(t, m2g(m), "redcron_scheduler_skips_total"))
	}
	if d := handled[0] - handled[1]; d < -1 || d > 1 {
		t.Errorf("replicas handled %v ticks: more than one apart", handled)
	}
	refused := total("redcron_lock_acquire_attempts_total", "result", "held") +
		total("redcron_lock_acquire_attempts_total", "result", "already_run")
	if refused < skips {
		t.Errorf("%v refused acquisitions for %v skips", refused, skips)
	}
	for _, m := range collectors {
		lint(t, m)
	}
}

// TestLockLostRun: a run whose lock is taken away from every node is
// cancelled, and counted as lock_lost with a lost lease.
func TestLockLostRun(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	m, reg := newCollector(t)
	s := newScheduler(t, scheduler.NewRedlockLocker(c.redlock(t, m)), m)
	started := make(chan struct{})
	returned := make(chan error, 1)
	if err := s.Add("long", "@yearly", scheduler.JobFunc(func(ctx context.Context, _ scheduler.RunInfo) error {
		close(started)
		<-ctx.Done()
		returned <- context.Cause(ctx)
		return ctx.Err()
	}), scheduler.WithLockTTL(6*time.Second)); err != nil { // extended every 2s
		t.Fatal(err)
	}
	stop := start(t, s)
	if _, err := s.Trigger(context.Background(), "long"); err != nil {
		t.Fatal(err)
	}
	await(t, started, "the job to start")
	if got := get(t, reg, "redcron_scheduler_runs_in_progress", "job_name", "long"); got != 1 {
		t.Errorf("runs_in_progress %v during the run", got)
	}
	c.del(t, lockKey(t, "long")) // the next extension finds the lock gone
	if cause := await(t, returned, "the job to be cancelled after its lock was deleted"); !errors.Is(cause, mutex.ErrLost) {
		t.Fatalf("the job was cancelled with %v", cause)
	}
	stop() // waits for the run to be reported
	compare(t, m, `
		redcron_scheduler_runs_total{job_name="long",result="abandoned"} 0
		redcron_scheduler_runs_total{job_name="long",result="canceled"} 0
		redcron_scheduler_runs_total{job_name="long",result="failure"} 0
		redcron_scheduler_runs_total{job_name="long",result="lock_lost"} 1
		redcron_scheduler_runs_total{job_name="long",result="panic"} 0
		redcron_scheduler_runs_total{job_name="long",result="success"} 0
		redcron_scheduler_runs_total{job_name="long",result="timeout"} 0
		redcron_scheduler_runs_in_progress{job_name="long"} 0
		redcron_scheduler_last_success_timestamp_seconds{job_name="long"} 0
		redcron_lock_leases_lost_total 1
		redcron_lock_releases_total{result="lost"} 1
		redcron_lock_releases_total{result="no_quorum"} 0
		redcron_lock_releases_total{result="released"} 0
	`, "redcron_scheduler_runs_total", "redcron_scheduler_runs_in_progress",
		"redcron_scheduler_last_success_timestamp_seconds", "redcron_lock_leases_lost_total", "redcron_lock_releases_total")
	if got := get(t, reg, "redcron_lock_extensions_total", "result", "lost"); got != 1 {
		t.Errorf("extensions_total{result=lost} = %v, want 1", got)
	}
	// A triggered run has no tick, hence no start delay.
	if got := get(t, reg, "redcron_scheduler_start_delay_seconds", "job_name", "long"); got != 0 {
		t.Errorf("%v start delays observed for a triggered run", got)
	}
}

// TestResults runs jobs that panic, time out, fail and are cancelled by
// Shutdown, under the in-memory locker.
func TestResults(t *testing.T) {
	t.Parallel()
	m, _ := newCollector(t)
	s := newScheduler(t, schedulertest.NewLocker(), m)
	blocked, timedOut := make(chan struct{}), make(chan struct{})
	jobs := map[string]scheduler.JobFunc{
		"panics": func(context.Context, scheduler.RunInfo) error { panic("oops") },
		"fails":  func(context.Context, scheduler.RunInfo) error { return errors.New("boom") },
		"slow": func(ctx context.Context, _ scheduler.RunInfo) error {
			<-ctx.Done()
			close(timedOut)
			return ctx.Err()
		},
		"stuck": func(ctx context.Context, _ scheduler.RunInfo) error {
			close(blocked)
			<-ctx.Done()
			return ctx.Err()
		},
	}
	for name, job := range jobs {
		var opts []scheduler.JobOption
		if name == "slow" {
			opts = append(opts, scheduler.WithRunTimeout(10*time.Millisecond))
		}
		if err := s.Add(name, "@yearly", job, opts...); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	for name := range jobs {
		if _, err := s.Trigger(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	await(t, blocked, "the stuck job to start")
	await(t, timedOut, "the slow job to time out")
	// A second trigger of a job running here is refused before the lock;
	// it is not a tick, so it is not counted as a skip.
	if _, err := s.Trigger(context.Background(), "stuck"); !errors.Is(err, scheduler.ErrOverlap) {
		t.Errorf("second trigger: %v", err)
	}
	expired, cancel := context.WithCancel(context.Background())
	cancel() // Shutdown cancels the jobs still running at once
	_ = s.Shutdown(expired)
	if err := await(t, done, "Run to return after Shutdown"); !errors.Is(err, scheduler.ErrClosed) {
		t.Errorf("Run: %v", err)
	}
	compare(t, m, `
		redcron_scheduler_runs_total{job_name="panics",result="panic"} 1
		redcron_scheduler_runs_total{job_name="fails",result="failure"} 1
		redcron_scheduler_runs_total{job_name="slow",result="timeout"} 1
		redcron_scheduler_runs_total{job_name="stuck",result="canceled"} 1
	`+zeros("panics", "panic")+zeros("fails", "failure")+zeros("slow", "timeout")+zeros("stuck", "canceled"),
		"redcron_scheduler_runs_total")
	if got := sum(t, m2g(m), "redcron_scheduler_skips_total"); got != 0 {
		t.Errorf("%v skips", got)
	}
	if got := sum(t, m2g(m), "redcron_scheduler_runs_in_progress"); got != 0 {
		t.Errorf("%v runs in progress after Run returned", got)
	}
}

// zeros renders the runs_total series of job at 0, but for result.
func zeros(job, except string) string {
	var s string
	for _, r := range []string{"success", "failure", "panic", "lock_lost", "timeout", "canceled", "abandoned"} {
		if r != except {
			s += "redcron_scheduler_runs_total{job_name=\"" + job + "\",result=\"" + r + "\"} 0\n"
		}
	}
	return s
}
