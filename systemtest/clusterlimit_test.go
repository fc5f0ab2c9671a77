package systemtest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/store"
)

// limitedFleet starts three replica processes (the nemesis' replica,
// with the front door) over three real servers, running the limited jobs
// besides the nemesis' own.
func limitedFleet(t *testing.T) *nemesis {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n := &nemesis{t: t, dir: t.TempDir(), exe: exe, world: world{procs: map[string]proc{}}, front: true, limited: true}
	n.cluster = redistest.Start(t, 3)
	n.storeSrv = redistest.Start(t, 1).Node(0)
	n.startReplicas()
	return n
}

// TestClusterLimitProcesses: five 3-s jobs due together every 10 s under
// one cluster-wide limit of two permits (scheduler.WithClusterLimit), on
// three replica processes over three real servers. By the runs' own
// records (a killed process's run ends when it was killed), never more
// than two run at once, and two at once is reached; a replica SIGKILLed
// while it runs one of them holds its permit only until the permit's TTL:
// a later round runs two at once again.
func TestClusterLimitProcesses(t *testing.T) {
	t.Parallel()
	n := limitedFleet(t)

	// runs returns the limited jobs' runs, by real time: a run without an
	// end ends when its process stopped, or now.
	type span struct {
		replica    string
		start, end int64
	}
	runs := func() []span {
		var out []span
		for name, rs := range n.histories() {
			stop := n.world.procs[name].stop
			open := map[string]int{} // a run's start, by job and tick: its index in out
			for _, r := range rs {
				if !strings.HasPrefix(r.Job, "limited-") {
					continue
				}
				key := fmt.Sprint(r.Job, r.Tick)
				switch r.Ev {
				case "start":
					end := time.Now().UnixNano()
					if !stop.IsZero() {
						end = stop.UnixNano()
					}
					open[key] = len(out)
					out = append(out, span{r.Replica, r.T, end})
				case "end":
					if i, ok := open[key]; ok {
						out[i].end = r.T
					}
				}
			}
		}
		return out
	}
	// most returns the most runs of ss under way at once.
	most := func(ss []span) int {
		type edge struct {
			t int64
			d int
		}
		var es []edge
		for _, s := range ss {
			es = append(es, edge{s.start, 1}, edge{s.end, -1})
		}
		slices.SortFunc(es, func(a, b edge) int { // an end before a start at the same instant
			if a.t != b.t {
				return int(a.t - b.t)
			}
			return a.d - b.d
		})
		at, top := 0, 0
		for _, e := range es {
			at += e.d
			top = max(top, at)
		}
		return top
	}
	// waitFor polls the histories, files written by other processes.
	waitFor := func(what string, within time.Duration, cond func([]span) bool) []span {
		t.Helper()
		for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
			if ss := runs(); cond(ss) {
				return ss
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v; runs %+v", what, within, ss)
			}
		}
	}

	first := waitFor("a limited run", 30*time.Second, func(ss []span) bool { return len(ss) > 0 })[0]
	var victim *replicaProc
	for _, p := range n.replicas {
		if fmt.Sprint("replica-", p.idx) == first.replica {
			victim = p
		}
	}
	if victim == nil {
		t.Fatalf("no replica process %s", first.replica)
	}
	n.stopReplica(victim, syscall.SIGKILL) // while its run, and its permit, are under way
	killed := time.Now()
	again := killed.Add(nemesisLockTTL).UnixNano() // its permit has expired by then
	ss := waitFor("two limited runs at once after the killed replica's permit expired", 30*time.Second, func(ss []span) bool {
		var later []span
		for _, s := range ss {
			if s.start > again {
				later = append(later, s)
			}
		}
		return most(later) >= limitedPermits
	})
	if m := most(ss); m > limitedPermits {
		t.Errorf("%d limited runs at once, more than the limit's %d permits: %+v", m, limitedPermits, ss)
	}
}

// TestPauseTagProcesses: on three replica processes over three real
// servers, pausing the tag "reports" (admin.Client.Tagged, then Pause)
// stops exactly the tagged jobs: no replica starts one of their ticks
// after it (each is skipped paused) while an untagged job still runs on
// them; resumed, they run again. Their own listeners got each of their
// events once, on the replica where it happened (checkListeners).
func TestPauseTagProcesses(t *testing.T) {
	t.Parallel()
	n := limitedFleet(t)
	var nodes []*store.Node
	for _, s := range n.cluster.Nodes() {
		node, err := store.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, node)
	}
	a, err := admin.New(nodes, admin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// waitFor polls the histories, files written by other processes, for a
	// record of a job with the prefix, event and reason (any for "") of a
	// tick after from.
	waitFor := func(prefix, ev, reason string, from time.Time) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			for _, rs := range n.histories() {
				for _, r := range rs {
					if strings.HasPrefix(r.Job, prefix) && r.Ev == ev && (reason == "" || r.Reason == reason) && r.Tick > from.UnixMilli() {
						return
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s %s %s of a tick after %v within 30 s", prefix, ev, reason, from.Format(time.TimeOnly))
			}
		}
	}
	waitFor("limited-", "start", "", time.Time{}) // the tables are published, the jobs run
	tagged, err := a.Tagged(ctx, "reports")
	if err != nil || len(tagged) != limitedJobs {
		t.Fatalf("jobs tagged reports: %v, %v; want the %d limited jobs", tagged, err, limitedJobs)
	}
	for _, job := range tagged {
		if _, err := a.Pause(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	paused := time.Now()
	waitFor("limited-", "skip", "paused", paused)
	waitFor("short", "start", "", paused.Add(time.Second))
	for name, rs := range n.histories() {
		for _, r := range rs {
			if strings.HasPrefix(r.Job, "limited-") && r.Ev == "start" && r.Tick > paused.UnixMilli() {
				t.Errorf("%s started %s's tick %v after the tag was paused", name, r.Job, time.UnixMilli(r.Tick).Format(time.TimeOnly))
			}
		}
	}
	for _, job := range tagged {
		if _, err := a.Resume(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("limited-", "start", "", time.Now())
	checkListeners(t, n.histories(), paused)
}

// checkListeners checks, in each process's history, that the limited
// jobs' own listeners (WithJobObserver) got each event of theirs once, on
// the replica where it happened, for the ticks up to until (their runs
// long over): a run_started per run the job itself recorded starting, a
// run_finished per end, a skipped per skip the scheduler-wide observer
// recorded, with its reason.
func checkListeners(t *testing.T, h historyOf, until time.Time) {
	t.Helper()
	pairs := map[string]string{"start": "job-run_started", "end": "job-run_finished", "skip": "job-skipped"}
	for name, rs := range h {
		count := map[string]int{} // by event, job, tick and reason: the job's or observer's records, less the listener's
		for _, r := range rs {
			if !strings.HasPrefix(r.Job, "limited-") || r.Tick > until.UnixMilli() {
				continue
			}
			key := func(ev string) string { return fmt.Sprint(ev, " ", r.Job, " ", r.Tick, " ", r.Reason) }
			if ev, ok := pairs[r.Ev]; ok {
				if r.Ev != "skip" {
					r.Reason = ""
				}
				count[key(ev)]++
			} else if r.Ev == "job-run_started" || r.Ev == "job-run_finished" || r.Ev == "job-skipped" {
				if r.Ev != "job-skipped" {
					r.Reason = ""
				}
				count[key(r.Ev)]--
			}
		}
		seen := 0
		for k, c := range count {
			if c != 0 {
				t.Errorf("%s: %s: %d more events than listener calls", name, k, c)
			}
			seen++
		}
		if seen == 0 {
			t.Errorf("%s: no event of the limited jobs up to %v", name, until.Format(time.TimeOnly))
		}
	}
}
