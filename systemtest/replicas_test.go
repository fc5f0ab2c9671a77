package systemtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/e2e"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/scheduler"
)

// scanned is a scan event, with when its scan started.
type scanned struct {
	start  time.Time
	tables int
}

// jobTableReplica returns a front door over c as replica id, heartbeating
// and scanning every second; its heartbeats and scans are sent on beats
// and scans (dropped when they are full).
func jobTableReplica(t *testing.T, c *redistest.Cluster, id string, beats chan<- struct{}, scans chan<- scanned) *redcron.Scheduler {
	t.Helper()
	s, err := redcron.New(c.Addrs(),
		redcron.WithSchedulerOptions(scheduler.WithInstanceID(id)),
		redcron.WithLeakScanOptions(leakscan.WithHeartbeat(time.Second, 2*time.Second), leakscan.WithInterval(time.Second),
			leakscan.WithObserver(func(e leakscan.Event) {
				if e.Scan && e.Err == nil {
					select {
					case scans <- scanned{time.Now().Add(-e.Duration), e.JobTables}:
					default:
					}
				} else if !e.Scan {
					select {
					case beats <- struct{}{}:
					default:
					}
				}
			})))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplicaJobTables: the front door's heartbeat publishes the digest of
// its job table and the build's version. Two replicas with the same jobs,
// added in another order and with their specs spaced differently, agree,
// and the scans count one job table; a job added, a spec or an option
// changed on one of them makes two, until the tables agree again.
func TestReplicaJobTables(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	nop := scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })
	beats, scans := make(chan struct{}, 64), make(chan scanned, 64)
	a := jobTableReplica(t, c, "replica-a", make(chan struct{}, 1), scans)
	b := jobTableReplica(t, c, "replica-b", beats, scans)
	add := func(s *redcron.Scheduler, name, spec string, opts ...scheduler.JobOption) {
		t.Helper()
		if err := s.Add(name, spec, nop, opts...); err != nil {
			t.Fatal(err)
		}
	}
	add(a, "report", "0 3 * * *", scheduler.WithRetry(2, time.Second))
	add(a, "cleanup", "@hourly")
	add(b, "cleanup", "@hourly")
	add(b, "report", " 0  3 * * * ", scheduler.WithRetry(2, time.Second))
	e2e.Run(t, a)
	e2e.Run(t, b)

	beat := func(id string) engine.Beat {
		v, err := c.Node(0).Client(t).Get(context.Background(), "redcron:hb:"+id).Result()
		if err != nil {
			return engine.Beat{}
		}
		return engine.ParseBeat(v)
	}
	// until waits, at every heartbeat of b, for its table to agree with
	// a's or not, and then for a scan started after that to count tables.
	until := func(what string, agree bool, tables int) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			da, db := beat("replica-a").JobTable, beat("replica-b").JobTable
			if da != "" && db != "" && (da == db) == agree {
				break
			}
			select {
			case <-beats:
			case <-deadline:
				t.Fatalf("%s: job tables %q and %q in the heartbeats after 20 s", what, da, db)
			}
		}
		since := time.Now()
		for {
			select {
			case e := <-scans:
				if e.start.After(since) {
					if e.tables != tables {
						t.Fatalf("%s: a scan counted %d job tables, want %d", what, e.tables, tables)
					}
					return
				}
			case <-deadline:
				t.Fatalf("%s: no scan within 20 s", what)
			}
		}
	}
	until("same jobs in another order", true, 1)
	if v := beat("replica-a").Version; v == "" || v != engine.MainVersion() {
		t.Errorf("heartbeat version %q, want the build's, %q", v, engine.MainVersion())
	}
	same := beat("replica-a").JobTable

	add(b, "forgotten", "@daily")
	until("a job added on one replica", false, 2)
	if err := b.Remove("forgotten"); err != nil {
		t.Fatal(err)
	}
	until("the job removed", true, 1)
	if got := beat("replica-b").JobTable; got != same {
		t.Errorf("digest %q after the job came and went, want %q", got, same)
	}

	if err := b.Remove("report"); err != nil {
		t.Fatal(err)
	}
	add(b, "report", "0 4 * * *", scheduler.WithRetry(2, time.Second))
	until("a spec changed", false, 2)
	if err := b.Remove("report"); err != nil {
		t.Fatal(err)
	}
	add(b, "report", "0 3 * * *", scheduler.WithRetry(2, time.Second))
	until("the spec changed back", true, 1)

	if err := b.Remove("report"); err != nil {
		t.Fatal(err)
	}
	add(b, "report", "0 3 * * *", scheduler.WithRetry(3, time.Second))
	until("an option changed", false, 2)
}
