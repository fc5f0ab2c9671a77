package main

import (
	"context"
	"encoding/json"
	"os"
	"os/user"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// fleetRuns records the runs and paused skips of a job over replicas.
type fleetRuns struct {
	mu     sync.Mutex
	runs   []time.Time // the ticks run, any replica
	paused int         // ticks skipped as paused, all replicas
}

func (f *fleetRuns) ranAfter(t time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, tick := range f.runs {
		if tick.After(t) {
			n++
		}
	}
	return n
}

// startReplica starts one replica of the job "tick" (every second) over
// c, recording into f; stop shuts it down and waits for Run.
func startReplica(t *testing.T, c *redistest.Cluster, id string, f *fleetRuns) (stop func()) {
	t.Helper()
	observe := scheduler.WithObserver(func(e scheduler.Event) {
		if e.Kind == "skipped" && e.Skip == "paused" {
			f.mu.Lock()
			f.paused++
			f.mu.Unlock()
		}
	})
	return runJob(t, c, id, "tick", "* * * * * *", func(_ context.Context, run scheduler.RunInfo) error {
		f.mu.Lock()
		f.runs = append(f.runs, run.Tick)
		f.mu.Unlock()
		return nil
	}, observe)
}

// runJob starts a replica id over c (trusted nodes, six-field specs) with
// the one job name, 2 s lock TTL; stop shuts it down and waits for Run.
func runJob(t *testing.T, c *redistest.Cluster, id, name, spec string, job scheduler.JobFunc, opts ...scheduler.Option) (stop func()) {
	t.Helper()
	s, err := redcron.New(c.Addrs(), redcron.WithLockOptions(mutex.WithTrustedNodes()),
		redcron.WithSchedulerOptions(append([]scheduler.Option{scheduler.WithSeconds(), scheduler.WithInstanceID(id)}, opts...)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(name, spec, job, scheduler.WithLockTTL(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	stop = sync.OnceFunc(func() {
		_ = s.Shutdown(context.Background())
		<-done
	})
	t.Cleanup(stop)
	return stop
}

// TestPauseEndToEnd: a job paused with the command runs on no replica, each
// reporting its ticks skipped as paused, also after a replica restarts,
// until it is resumed.
func TestPauseEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	f := &fleetRuns{}
	stopA := startReplica(t, c, "replica-a", f)
	defer func() { stopA() }()
	stopB := startReplica(t, c, "replica-b", f)
	defer stopB()
	waitUntil(t, 10*time.Second, "runs before the pause", func() bool { return f.ranAfter(time.Time{}) >= 2 })

	if o := exe(t, bin, nil, "-addrs", addrs, "pause", "tick"); o.code != 0 || !strings.Contains(o.stdout, "paused tick on 3 of 3 nodes") {
		t.Fatalf("pause: %s", o)
	}
	pausedAt := time.Now()
	<-time.After(3 * time.Second)
	stopA() // a replica restarts: the pause is on the nodes, not in it
	stopA = startReplica(t, c, "replica-a", f)
	<-time.After(3 * time.Second)
	// A tick whose lease was won before the pause may still run.
	if n := f.ranAfter(pausedAt.Add(time.Second)); n != 0 {
		t.Fatalf("%d ticks ran while the job was paused", n)
	}
	f.mu.Lock()
	paused := f.paused
	f.mu.Unlock()
	if paused < 6 {
		t.Errorf("%d paused skips in 6 s of two replicas", paused)
	}
	if o := exe(t, bin, nil, "-addrs", addrs, "status"); o.code != 0 || !strings.Contains(o.stdout, "yes (3/3)") ||
		!strings.Contains(o.stdout, "live replicas: [replica-a replica-b]") {
		t.Errorf("status while paused: %s", o)
	}

	if o := exe(t, bin, nil, "-addrs", addrs, "resume", "tick"); o.code != 0 || !strings.Contains(o.stdout, "resumed tick on 3 of 3 nodes") {
		t.Fatalf("resume: %s", o)
	}
	resumedAt := time.Now()
	waitUntil(t, 10*time.Second, "runs after the resume", func() bool { return f.ranAfter(resumedAt) >= 2 })
	o := exe(t, bin, nil, "-addrs", addrs, "-json", "status")
	var doc struct {
		Jobs []struct {
			Name     string `json:"name"`
			PausedOn int    `json:"paused_on"`
		} `json:"jobs"`
		Replicas []string `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != 0 || len(doc.Jobs) != 1 ||
		doc.Jobs[0].Name != "tick" || doc.Jobs[0].PausedOn != 0 || len(doc.Replicas) != 2 {
		t.Errorf("status -json after the resume: %+v, %v: %s", doc, err, o)
	}

	for _, args := range [][]string{{"pause"}, {"pause", "a", "b"}, {"pause", "bad{name}"}, {"stop", "tick"}, {"status", "x"}} {
		if o := exe(t, bin, nil, append([]string{"-addrs", addrs}, args...)...); o.code != 2 || o.stderr == "" {
			t.Errorf("bad command %v: %s", args, o)
		}
	}
}

// waitUntil polls cond every 50 ms until it holds, or fails the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, d)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// TestPauseInHistory: a pause and a resume are in the job's history, as
// the operator's actions, by user@host, newest first (of a job no replica
// runs yet: with -force).
func TestPauseInHistory(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	for _, cmd := range []string{"pause", "resume"} {
		if o := exe(t, bin, nil, "-addrs", addrs, "-force", cmd, "nightly"); o.code != 0 {
			t.Fatalf("%s: %s", cmd, o)
		}
	}
	o := exe(t, bin, nil, "-addrs", addrs, "-json", "-force", "history", "nightly")
	var doc struct {
		Runs []historyRun `json:"runs"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != 0 || len(doc.Runs) != 2 {
		t.Fatalf("history -json: %v: %s", err, o)
	}
	for i, want := range []string{"resumed", "paused"} {
		if r := doc.Runs[i]; r.State != "operator" || r.Result != want || r.Replica != who() || r.Nodes != 3 || r.Start.IsZero() {
			t.Errorf("record %d: %+v; want the operator's %s, by %s, on 3 nodes", i, r, want, who())
		}
	}
	if o := exe(t, bin, nil, "-addrs", addrs, "-force", "history", "nightly"); o.code != 0 || !strings.Contains(o.stdout, "operator: paused") {
		t.Errorf("history table: %s", o)
	}
}

// who is the operator the command records by default: user@host.
func who() string {
	name := "?"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
