package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/leakscan"
)

// TestLeakScan plants one leak of every class on real servers and waits for
// a Scanner's scan to report them.
func TestLeakScan(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	m, reg := newCollector(t)
	lock := func(owner string, acquired time.Time) string {
		return engine.Value{Token: engine.NewToken(), Acquired: acquired, Owner: owner}.String()
	}
	now := time.Now()
	// Held by an owner without a heartbeat, on every node.
	c.set(t, 3, lockKey(t, "ghost"), lock("dead", now), time.Minute)
	// Without an owner, without expiry, on every node.
	c.set(t, 3, lockKey(t, "forever"), lock("", now), 0)
	// On one node of three, older than the settle time (10s).
	c.set(t, 1, lockKey(t, "stray"), lock("", now.Add(-time.Minute)), time.Minute)
	// Held for longer than the max hold (24h by default).
	c.set(t, 3, lockKey(t, "ancient"), lock("", now.Add(-25*time.Hour)), time.Minute)
	// Not written by the library.
	c.set(t, 3, "redcron:junk", "x", time.Minute)

	s, err := leakscan.New(c.redlock(t, m), "", leakscan.WithInterval(time.Second), leakscan.WithObserver(m.LeakObserver()))
	if err != nil {
		t.Fatal(err)
	}
	begin := float64(time.Now().UnixNano()) / 1e9
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	waitFor(t, "a leak scan", func() bool { return get(t, reg, "redcron_leak_scans_total", "result", "ok") >= 1 })
	cancel()
	<-done
	compare(t, m, `
		redcron_leaked_locks{class="minority"} 1
		redcron_leaked_locks{class="no_expiry"} 1
		redcron_leaked_locks{class="orphaned"} 1
		redcron_leaked_locks{class="over_age"} 1
		redcron_leaked_locks{class="unparseable"} 1
	`, "redcron_leaked_locks")
	if got := get(t, reg, "redcron_leak_scans_total", "result", "failed"); got != 0 {
		t.Errorf("%v failed scans", got)
	}
	if last := get(t, reg, "redcron_leak_last_scan_success_timestamp_seconds"); last < begin {
		t.Errorf("last successful scan at %v, before the scheduler started at %v", last, begin)
	}
	lint(t, m)
}

// TestReplicaJobTables: the job-tables gauge holds the number of distinct
// job tables in the live replicas' heartbeats, as the last scan found them;
// an older replica's heartbeat, without one, does not count.
func TestReplicaJobTables(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	m, reg := newCollector(t)
	beat := func(owner, table string) string {
		return engine.Beat{Format: engine.BeatFormat, Instance: owner, JobTable: table, SentMS: time.Now().UnixMilli()}.String()
	}
	c.set(t, 3, "redcron:hb:a", beat("a", "d-one"), time.Minute)
	c.set(t, 3, "redcron:hb:b", beat("b", "d-one"), time.Minute)
	c.set(t, 3, "redcron:hb:old", fmt.Sprint(time.Now().UnixMilli()), time.Minute)
	scans := make(chan leakscan.Event, 100)
	s, err := leakscan.New(c.redlock(t, m), "", leakscan.WithInterval(time.Second), leakscan.WithObserver(m.LeakObserver()),
		leakscan.WithObserver(func(e leakscan.Event) {
			select {
			case scans <- e:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if e := await(t, scans, "a scan"); e.Err != nil || e.JobTables != 1 {
		t.Fatalf("scan of two replicas with one job table and an old one: %+v", e)
	}
	if got := get(t, reg, "redcron_replica_job_tables"); got != 1 {
		t.Errorf("redcron_replica_job_tables %v, want 1", got)
	}
	c.set(t, 3, "redcron:hb:b", beat("b", "d-two"), time.Minute)
	for e := await(t, scans, "a scan"); e.JobTables != 2; e = await(t, scans, "a scan") {
		if e.Err != nil || e.JobTables != 1 {
			t.Fatalf("scan after a replica's table changed: %+v", e)
		}
	}
	if got := get(t, reg, "redcron_replica_job_tables"); got != 2 {
		t.Errorf("redcron_replica_job_tables %v, want 2", got)
	}
}
