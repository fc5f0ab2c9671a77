package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/metrics"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestMetricSet pins the exported families, their types, label names and
// help (the package documentation's table), with every series a job, a
// node and a Collector have before any traffic.
func TestMetricSet(t *testing.T) {
	m, reg := newCollector(t, metrics.WithNodes("n1"))
	m.SchedulerObserver()(scheduler.Event{Kind: "job_added", Job: "j"})
	// A missed tick's series is made when one is found.
	m.LeakObserver()(leakscan.Event{Missed: map[string]map[string]int{"j": {"no_quorum": 1}}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		var labels []string
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, lp.GetName())
		}
		got = append(got, fmt.Sprintf("%s %s %s", mf.GetName(), strings.ToLower(mf.GetType().String()), strings.Join(labels, ",")))
	}
	want := []string{
		"redcron_leak_last_scan_success_timestamp_seconds gauge ",
		"redcron_leak_scans_total counter result",
		"redcron_leaked_locks gauge class",
		"redcron_lock_acquire_attempts_total counter result",
		"redcron_lock_acquire_duration_seconds histogram ",
		"redcron_lock_extensions_total counter result",
		"redcron_lock_leases_lost_total counter ",
		"redcron_lock_node_errors_total counter node,vote",
		"redcron_lock_node_up gauge node",
		"redcron_lock_node_warming_up gauge node",
		"redcron_lock_releases_total counter result",
		"redcron_replica_clock_offset_seconds gauge ",
		"redcron_replica_job_tables gauge ",
		"redcron_scheduler_last_success_timestamp_seconds gauge job_name",
		"redcron_scheduler_lock_retries_total counter job_name",
		"redcron_scheduler_missed_ticks_total counter job_name,reason",
		"redcron_scheduler_run_duration_seconds histogram job_name",
		"redcron_scheduler_runs_in_progress gauge job_name",
		"redcron_scheduler_runs_total counter job_name,result",
		"redcron_scheduler_skips_total counter job_name,reason",
		"redcron_scheduler_start_delay_seconds histogram job_name",
	}
	if !slices.Equal(got, want) {
		t.Errorf("families:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Every described metric is exposed once a job and a node exist.
	descs := make(chan *prometheus.Desc, 100)
	m.Describe(descs)
	close(descs)
	if len(descs) != len(want) {
		t.Errorf("Describe sends %d descriptors, Collect exposes %d families", len(descs), len(want))
	}
	lint(t, m)

	// The series that exist before any traffic, at 0 (node up at 1).
	err = testutil.CollectAndCompare(m, strings.NewReader(`
# HELP redcron_scheduler_missed_ticks_total Ticks of each job that ran on no replica, as this replica's missed-tick check found them, by the reason the replicas reported (paused, overlap, no_quorum, ..., no_report); each tick is counted once, fleet-wide.
# TYPE redcron_scheduler_missed_ticks_total counter
redcron_scheduler_missed_ticks_total{job_name="j",reason="no_quorum"} 1
# HELP redcron_leak_last_scan_success_timestamp_seconds Unix time of the last successful leak scan of this replica; 0 if none.
# TYPE redcron_leak_last_scan_success_timestamp_seconds gauge
redcron_leak_last_scan_success_timestamp_seconds 0
# HELP redcron_leak_scans_total Leak scans made by this replica, by result (ok, failed).
# TYPE redcron_leak_scans_total counter
redcron_leak_scans_total{result="failed"} 0
redcron_leak_scans_total{result="ok"} 0
# HELP redcron_leaked_locks Leaked locks found by the last successful leak scan of this replica, by class.
# TYPE redcron_leaked_locks gauge
redcron_leaked_locks{class="minority"} 0
redcron_leaked_locks{class="no_expiry"} 0
redcron_leaked_locks{class="orphaned"} 0
redcron_leaked_locks{class="over_age"} 0
redcron_leaked_locks{class="unparseable"} 0
# HELP redcron_lock_acquire_attempts_total Lock acquisition attempts, by result.
# TYPE redcron_lock_acquire_attempts_total counter
redcron_lock_acquire_attempts_total{result="acquired"} 0
redcron_lock_acquire_attempts_total{result="already_run"} 0
redcron_lock_acquire_attempts_total{result="held"} 0
redcron_lock_acquire_attempts_total{result="no_quorum"} 0
redcron_lock_acquire_attempts_total{result="paused"} 0
# HELP redcron_lock_extensions_total Lease extensions, by result (lost: a majority no longer holds the lock or the validity ran out).
# TYPE redcron_lock_extensions_total counter
redcron_lock_extensions_total{result="extended"} 0
redcron_lock_extensions_total{result="lost"} 0
redcron_lock_extensions_total{result="no_quorum"} 0
# HELP redcron_lock_leases_lost_total Kept-alive leases that could no longer be proven; the job holding one was cancelled.
# TYPE redcron_lock_leases_lost_total counter
redcron_lock_leases_lost_total 0
# HELP redcron_lock_node_errors_total Failed answers of each node to lock operations, by vote (timeout, unreachable, error).
# TYPE redcron_lock_node_errors_total counter
redcron_lock_node_errors_total{node="n1",vote="error"} 0
redcron_lock_node_errors_total{node="n1",vote="timeout"} 0
redcron_lock_node_errors_total{node="n1",vote="unreachable"} 0
# HELP redcron_lock_node_up 1 if the last answer of the node to a lock operation was not a failure (timeout, unreachable, error), else 0.
# TYPE redcron_lock_node_up gauge
redcron_lock_node_up{node="n1"} 1
# HELP redcron_lock_node_warming_up 1 if the node's last answer to an acquisition showed it warming up (its server, new or restarted, started too recently to vote), so that its grants do not count, else 0.
# TYPE redcron_lock_node_warming_up gauge
redcron_lock_node_warming_up{node="n1"} 0
# HELP redcron_lock_releases_total Lock releases, by result.
# TYPE redcron_lock_releases_total counter
redcron_lock_releases_total{result="lost"} 0
redcron_lock_releases_total{result="no_quorum"} 0
redcron_lock_releases_total{result="released"} 0
# HELP redcron_replica_clock_offset_seconds This replica's clock minus the nodes' (median of their TIME), measured by its last heartbeat; past 2 s in either direction it claims no tick.
# TYPE redcron_replica_clock_offset_seconds gauge
redcron_replica_clock_offset_seconds 0
# HELP redcron_replica_job_tables Distinct job tables among the live replicas' heartbeats, as the last successful leak scan of this replica found them: 1 when every replica runs the same jobs; 0 if none publishes its table.
# TYPE redcron_replica_job_tables gauge
redcron_replica_job_tables 0
# HELP redcron_scheduler_last_success_timestamp_seconds Unix time of the last successful run of each job on this replica; 0 if none since the job was added. Take the max over replicas.
# TYPE redcron_scheduler_last_success_timestamp_seconds gauge
redcron_scheduler_last_success_timestamp_seconds{job_name="j"} 0
# HELP redcron_scheduler_lock_retries_total Lock attempts of each job that reached no decision and were retried.
# TYPE redcron_scheduler_lock_retries_total counter
redcron_scheduler_lock_retries_total{job_name="j"} 0
# HELP redcron_scheduler_runs_in_progress Runs of each job in progress on this replica.
# TYPE redcron_scheduler_runs_in_progress gauge
redcron_scheduler_runs_in_progress{job_name="j"} 0
# HELP redcron_scheduler_runs_total Runs of each job on this replica, by how they ended.
# TYPE redcron_scheduler_runs_total counter
redcron_scheduler_runs_total{job_name="j",result="abandoned"} 0
redcron_scheduler_runs_total{job_name="j",result="canceled"} 0
redcron_scheduler_runs_total{job_name="j",result="failure"} 0
redcron_scheduler_runs_total{job_name="j",result="lock_lost"} 0
redcron_scheduler_runs_total{job_name="j",result="panic"} 0
redcron_scheduler_runs_total{job_name="j",result="success"} 0
redcron_scheduler_runs_total{job_name="j",result="timeout"} 0
# HELP redcron_scheduler_skips_total Ticks of each job that this replica did not run, by reason (held and already_run are normal: another replica ran them).
# TYPE redcron_scheduler_skips_total counter
redcron_scheduler_skips_total{job_name="j",reason="already_run"} 0
redcron_scheduler_skips_total{job_name="j",reason="cluster_limit"} 0
redcron_scheduler_skips_total{job_name="j",reason="held"} 0
redcron_scheduler_skips_total{job_name="j",reason="lease_lost"} 0
redcron_scheduler_skips_total{job_name="j",reason="max_runs"} 0
redcron_scheduler_skips_total{job_name="j",reason="misfire"} 0
redcron_scheduler_skips_total{job_name="j",reason="no_quorum"} 0
redcron_scheduler_skips_total{job_name="j",reason="overlap"} 0
redcron_scheduler_skips_total{job_name="j",reason="overload"} 0
redcron_scheduler_skips_total{job_name="j",reason="paused"} 0
`), nonHistograms(want)...)
	if err != nil {
		t.Error(err)
	}
}

// nonHistograms returns the names of TestMetricSet's lines that are not
// histograms.
func nonHistograms(lines []string) []string {
	var names []string
	for _, l := range lines {
		if f := strings.Fields(l); f[1] != "histogram" {
			names = append(names, f[0])
		}
	}
	return names
}

// TestDefaultBuckets pins the documented default buckets.
func TestDefaultBuckets(t *testing.T) {
	m, reg := newCollector(t)
	m.SchedulerObserver()(scheduler.Event{Kind: "job_added", Job: "j"})
	for name, want := range map[string][]float64{
		"redcron_scheduler_run_duration_seconds": {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
		"redcron_scheduler_start_delay_seconds":  {.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		"redcron_lock_acquire_duration_seconds":  {.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	} {
		if got := buckets(t, reg, name); !slices.Equal(got, want) {
			t.Errorf("%s buckets %v, want %v", name, got, want)
		}
	}
}

// buckets returns the upper bounds of the first series of a histogram.
func buckets(t *testing.T, g prometheus.Gatherer, name string) []float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var bs []float64
			for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
				bs = append(bs, b.GetUpperBound())
			}
			return bs
		}
	}
	t.Fatalf("no family %s", name)
	return nil
}

func TestOptions(t *testing.T) {
	m, reg := newCollector(t,
		metrics.WithNamespace("acme_cron"),
		metrics.WithConstLabels(prometheus.Labels{"service": "billing"}),
		metrics.WithConstLabels(prometheus.Labels{"region": "eu"}),
		metrics.WithBuckets("run_duration", 1, 10, math.Inf(1)),
		metrics.WithBuckets("start_delay", 0.5),
		metrics.WithBuckets("acquire_duration", 0.01, 0.1),
		metrics.WithNodes("a", "b"), metrics.WithNodes("c"))
	m.SchedulerObserver()(scheduler.Event{Kind: "job_added", Job: "j"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "acme_cron_") {
			t.Errorf("family %s without the namespace", mf.GetName())
		}
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range s.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["service"] != "billing" || labels["region"] != "eu" {
				t.Errorf("series of %s without the const labels: %v", mf.GetName(), labels)
			}
		}
	}
	for name, want := range map[string][]float64{
		"acme_cron_scheduler_run_duration_seconds": {1, 10},
		"acme_cron_scheduler_start_delay_seconds":  {0.5},
		"acme_cron_lock_acquire_duration_seconds":  {0.01, 0.1},
	} {
		if got := buckets(t, reg, name); !slices.Equal(got, want) {
			t.Errorf("%s buckets %v, want %v", name, got, want)
		}
	}
	if n := testutil.CollectAndCount(m, "acme_cron_lock_node_up"); n != 3 {
		t.Errorf("%d node_up series for 3 declared nodes", n)
	}
	lint(t, m)

	for _, tc := range []struct {
		opt  metrics.Option
		name string // the option the error must name
	}{
		{metrics.WithNamespace(""), "WithNamespace"},
		{metrics.WithNamespace("red-cron"), "WithNamespace"},
		{metrics.WithNamespace("9lives"), "WithNamespace"},
		{metrics.WithConstLabels(prometheus.Labels{"job_name": "x"}), "WithConstLabels"},
		{metrics.WithConstLabels(prometheus.Labels{"node": "x"}), "WithConstLabels"},
		{metrics.WithConstLabels(prometheus.Labels{"le": "x"}), "WithConstLabels"},
		{metrics.WithConstLabels(prometheus.Labels{"__name__": "x"}), "WithConstLabels"},
		{metrics.WithConstLabels(prometheus.Labels{"a-b": "x"}), "WithConstLabels"},
		{metrics.WithConstLabels(prometheus.Labels{"ok": "\xff"}), "WithConstLabels"},
		{metrics.WithBuckets("run_duration"), "WithBuckets(run_duration)"},
		{metrics.WithBuckets("run_duration", 1, 1), "WithBuckets(run_duration)"},
		{metrics.WithBuckets("start_delay", 2, 1), "WithBuckets(start_delay)"},
		{metrics.WithBuckets("acquire_duration", math.NaN()), "WithBuckets(acquire_duration)"},
		{metrics.WithBuckets("acquire_duration", math.Inf(1), 2), "WithBuckets(acquire_duration)"},
		{metrics.WithBuckets("run_time", 1), "run_duration, start_delay or acquire_duration"},
		{metrics.WithNodes("a", ""), "WithNodes"},
		{nil, "nil Option"},
	} {
		m, err := metrics.New(tc.opt)
		if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), tc.name) || m != nil {
			t.Errorf("%s: New returned %v, %v; want an mutex.ErrInvalidOption naming it", tc.name, m, err)
		}
	}

	// The buckets given are copied.
	b := []float64{1, 2}
	m, reg = newCollector(t, metrics.WithBuckets("run_duration", b...))
	b[0] = 5
	m.SchedulerObserver()(scheduler.Event{Kind: "job_added", Job: "j"})
	if got := buckets(t, reg, "redcron_scheduler_run_duration_seconds"); !slices.Equal(got, []float64{1, 2}) {
		t.Errorf("buckets changed with the caller's slice: %v", got)
	}
}

// TestJobSeriesLifecycle: a job's series exist at 0 from Add to Remove,
// shared between Schedulers that have the same job; events for a job that
// is not registered are not counted.
func TestJobSeriesLifecycle(t *testing.T) {
	m, reg := newCollector(t)
	l := schedulertest.NewLocker()
	s1 := newScheduler(t, l, m)
	s2 := newScheduler(t, l, m)
	noop := scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })
	for _, add := range []struct {
		s    *scheduler.Scheduler
		name string
	}{{s1, "a"}, {s1, "b"}, {s2, "b"}} {
		if err := add.s.Add(add.name, "@hourly", noop); err != nil {
			t.Fatal(err)
		}
	}
	jobs := func() []string {
		var names []string
		for _, fam := range []string{"redcron_scheduler_runs_total", "redcron_scheduler_skips_total",
			"redcron_scheduler_lock_retries_total", "redcron_scheduler_run_duration_seconds",
			"redcron_scheduler_start_delay_seconds", "redcron_scheduler_last_success_timestamp_seconds",
			"redcron_scheduler_runs_in_progress"} {
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var in []string
			for _, mf := range mfs {
				if mf.GetName() != fam {
					continue
				}
				for _, s := range mf.GetMetric() {
					for _, lp := range s.GetLabel() {
						if lp.GetName() == "job_name" && !slices.Contains(in, lp.GetValue()) {
							in = append(in, lp.GetValue())
						}
					}
				}
			}
			slices.Sort(in)
			if names == nil {
				names = in
			} else if !slices.Equal(in, names) {
				t.Errorf("%s has jobs %v, other families %v", fam, in, names)
			}
		}
		return names
	}
	if got := jobs(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("jobs %v after adding a and b", got)
	}
	if n := testutil.CollectAndCount(m, "redcron_scheduler_runs_total"); n != 14 {
		t.Errorf("%d runs_total series for 2 jobs, want 2×7", n)
	}
	if n := testutil.CollectAndCount(m, "redcron_scheduler_skips_total"); n != 20 {
		t.Errorf("%d skips_total series for 2 jobs, want 2×10", n)
	}

	if err := s1.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := s1.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if got := jobs(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("jobs %v after removing a, and b from one of two schedulers", got)
	}
	// A run of a that ends after its removal is not counted.
	m.SchedulerObserver()(scheduler.Event{Kind: "run_finished", Job: "a", Result: "success"})
	if got := jobs(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("an event of removed job a recreated its series: %v", got)
	}
	if err := s2.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if got := jobs(); len(got) != 0 {
		t.Fatalf("jobs %v after removing every job", got)
	}
	// Re-adding starts again from 0.
	if err := s1.Add("a", "@hourly", noop); err != nil {
		t.Fatal(err)
	}
	compare(t, m, `
		redcron_scheduler_runs_total{job_name="a",result="abandoned"} 0
		redcron_scheduler_runs_total{job_name="a",result="canceled"} 0
		redcron_scheduler_runs_total{job_name="a",result="failure"} 0
		redcron_scheduler_runs_total{job_name="a",result="lock_lost"} 0
		redcron_scheduler_runs_total{job_name="a",result="panic"} 0
		redcron_scheduler_runs_total{job_name="a",result="success"} 0
		redcron_scheduler_runs_total{job_name="a",result="timeout"} 0
	`, "redcron_scheduler_runs_total")
}

// TestEventMapping feeds every result and skip reason through the hook and
// checks where each lands; the real-run tests check that the scheduler
// sends them.
func TestEventMapping(t *testing.T) {
	m, _ := newCollector(t)
	o := m.SchedulerObserver()
	o(scheduler.Event{Kind: "job_added", Job: "j"})
	for i, r := range []string{"success", "failure", "panic",
		"lock_lost", "timeout", "canceled", "abandoned"} {
		for range i + 1 {
			o(scheduler.Event{Kind: "run_started", Job: "j"})
			o(scheduler.Event{Kind: "run_finished", Job: "j", Result: r})
		}
	}
	for i, r := range []string{"held", "already_run", "overlap",
		"misfire", "no_quorum", "max_runs", "overload", "cluster_limit"} {
		for range i + 1 {
			o(scheduler.Event{Kind: "skipped", Job: "j", Skip: r})
		}
	}
	o(scheduler.Event{Kind: "lock_retry", Job: "j"})
	o(scheduler.Event{Kind: "run_started", Job: "j"}) // still running
	compare(t, m, `
		redcron_scheduler_runs_total{job_name="j",result="success"} 1
		redcron_scheduler_runs_total{job_name="j",result="failure"} 2
		redcron_scheduler_runs_total{job_name="j",result="panic"} 3
		redcron_scheduler_runs_total{job_name="j",result="lock_lost"} 4
		redcron_scheduler_runs_total{job_name="j",result="timeout"} 5
		redcron_scheduler_runs_total{job_name="j",result="canceled"} 6
		redcron_scheduler_runs_total{job_name="j",result="abandoned"} 7
		redcron_scheduler_skips_total{job_name="j",reason="held"} 1
		redcron_scheduler_skips_total{job_name="j",reason="lease_lost"} 0
		redcron_scheduler_skips_total{job_name="j",reason="already_run"} 2
		redcron_scheduler_skips_total{job_name="j",reason="overlap"} 3
		redcron_scheduler_skips_total{job_name="j",reason="misfire"} 4
		redcron_scheduler_skips_total{job_name="j",reason="no_quorum"} 5
		redcron_scheduler_skips_total{job_name="j",reason="paused"} 0
		redcron_scheduler_skips_total{job_name="j",reason="max_runs"} 6
		redcron_scheduler_skips_total{job_name="j",reason="overload"} 7
		redcron_scheduler_skips_total{job_name="j",reason="cluster_limit"} 8
		redcron_scheduler_lock_retries_total{job_name="j"} 1
		redcron_scheduler_runs_in_progress{job_name="j"} 1
	`, "redcron_scheduler_runs_total", "redcron_scheduler_skips_total", "redcron_scheduler_lock_retries_total",
		"redcron_scheduler_runs_in_progress")
	lint(t, m)
}

// TestRunOfRemovedJob checks that a run still going when its job is
// removed and added again is not counted under the job added again: its
// start was counted under the series Remove deleted.
func TestRunOfRemovedJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reg := newCollector(t)
		s := newScheduler(t, schedulertest.NewLocker(), m)
		release := make(chan struct{})
		if err := s.Add("j", "@daily", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
			<-release
			return nil
		})); err != nil {
			t.Fatal(err)
		}
		stop := start(t, s)
		if _, err := s.Trigger(context.Background(), "j"); err != nil {
			t.Fatal(err)
		}
		series := func(name string, labels ...string) float64 {
			v, ok := value(t, reg, name, append([]string{"job_name", "j"}, labels...)...)
			if !ok {
				t.Fatalf("no %s series for j", name)
			}
			return v
		}
		if got := series("redcron_scheduler_runs_in_progress"); got != 1 {
			t.Fatalf("runs in progress %v, want 1", got)
		}
		if err := s.Remove("j"); err != nil {
			t.Fatal(err)
		}
		if err := s.Add("j", "@daily", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })); err != nil {
			t.Fatal(err)
		}
		close(release)
		synctest.Wait() // the old run has finished, and its lease is released
		if got := series("redcron_scheduler_runs_in_progress"); got != 0 {
			t.Errorf("runs in progress of the job added again %v after the old job's run ended, want 0", got)
		}
		if got := series("redcron_scheduler_runs_total", "result", "success"); got != 0 {
			t.Errorf("runs_total of the job added again %v after the old job's run ended, want 0", got)
		}

		// Its own runs count as usual.
		if _, err := s.Trigger(context.Background(), "j"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := series("redcron_scheduler_runs_total", "result", "success"); got != 1 {
			t.Errorf("runs_total after a run of the job added again: %v, want 1", got)
		}
		if got := series("redcron_scheduler_runs_in_progress"); got != 0 {
			t.Errorf("runs in progress after it ended: %v, want 0", got)
		}
		stop()
	})
}
