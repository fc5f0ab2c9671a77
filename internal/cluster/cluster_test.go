package cluster_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/ledger"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// newCluster returns a Cluster over c's servers, under the default prefix.
func newCluster(t *testing.T, c *redistest.Cluster) *cluster.Cluster {
	t.Helper()
	keys, _ := engine.NewKeyspace("")
	cl := &cluster.Cluster{Keys: keys}
	for _, s := range c.Nodes() {
		n, err := engine.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		cl.Nodes = append(cl.Nodes, n)
	}
	return cl
}

// operatorRecords returns the job's operators' actions, newest first.
func operatorRecords(t *testing.T, cl *cluster.Cluster, job string) []ledger.Run {
	t.Helper()
	runs, _, err := cl.History(context.Background(), job, 50)
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Run
	for _, r := range runs {
		if r.State == ledger.StateOperator {
			out = append(out, r)
		}
	}
	return out
}

// TestPause: a pause sets the key on every node and is recorded in the
// job's ledger, by who; a resume deletes it and is recorded; a pause that
// reaches a minority fails, is taken back, and is not recorded.
func TestPause(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	cl := newCluster(t, c)
	ctx := context.Background()
	lk, _ := cl.Keys.Lock("nightly")
	if errs, err := cl.Pause(ctx, "nightly", "ann@desk", true); err != nil || len(errs) != 3 {
		t.Fatalf("pause: %v %v", errs, err)
	}
	for i, on := range c.KeyOn(t, lk.Pause) {
		if !on {
			t.Errorf("node %d lacks the pause key", i)
		}
	}
	if _, err := cl.Pause(ctx, "nightly", "bob@desk", false); err != nil {
		t.Fatalf("resume: %v", err)
	}
	ops := operatorRecords(t, cl, "nightly")
	if len(ops) != 2 || ops[0].Result != ledger.ActionResumed || ops[0].Owner != "bob@desk" ||
		ops[1].Result != ledger.ActionPaused || ops[1].Owner != "ann@desk" || ops[1].Nodes != 3 {
		t.Fatalf("operator records %+v; want ann's pause then bob's resume, on 3 nodes", ops)
	}

	c.Node(1).Kill()
	c.Node(2).Kill()
	errs, err := cl.Pause(ctx, "nightly", "ann@desk", true)
	if !errors.Is(err, cluster.ErrNoMajority) || errs[0] != nil || errs[1] == nil || errs[2] == nil {
		t.Fatalf("pause on a minority: %v %v; want ErrNoMajority, node 0 changed", errs, err)
	}
	if c.Node(0).Client(t).Exists(ctx, lk.Pause).Val() != 0 {
		t.Error("a pause on a minority was not taken back")
	}
}

// TestTriggerAndStatus: a trigger is taken by one replica of two and
// recorded with the run that took it; status shows the job, its runs, the
// replicas and the nodes; a trigger of a job no replica has is withdrawn
// and recorded as not taken.
func TestTriggerAndStatus(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	cl := newCluster(t, c)
	var mu sync.Mutex
	var ran []scheduler.RunInfo
	for _, id := range []string{"replica-a", "replica-b"} {
		startReplica(t, c, id, func(_ context.Context, run scheduler.RunInfo) error {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, run)
			return nil
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr, err := cl.Trigger(ctx, "report", "ann@desk", 20*time.Second)
	if err != nil || !strings.HasPrefix(tr.Run.Owner, "replica-") || tr.Run.Fence == 0 {
		t.Fatalf("trigger: %+v, %v", tr, err)
	}
	mu.Lock()
	if len(ran) != 1 || ran[0].Fence != tr.Run.Fence {
		t.Errorf("runs %+v; want the one that took the trigger, fence %d", ran, tr.Run.Fence)
	}
	mu.Unlock()
	ops := operatorRecords(t, cl, "report")
	if len(ops) != 1 || ops[0].Result != ledger.ActionTriggered || ops[0].Run != tr.Run.Run || ops[0].Error != "" {
		t.Errorf("operator records %+v; want the trigger, with run %s", ops, tr.Run.Run)
	}

	st, err := cl.Status(ctx, 3, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].Name != "report" || len(st.Jobs[0].Runs) != 1 || st.Jobs[0].Runs[0].Fence != tr.Run.Fence {
		t.Errorf("status jobs %+v; want report with its triggered run", st.Jobs)
	}
	if len(st.Replicas) != 2 || st.Replicas[0].Instance != "replica-a" || st.Replicas[1].Sent.IsZero() || st.Tables != 1 {
		t.Errorf("status replicas %+v (%d tables)", st.Replicas, st.Tables)
	}
	for _, n := range st.Nodes {
		if n.State() != cluster.NodeWarming || n.Latency <= 0 || n.RunID == "" {
			t.Errorf("node %+v: want warming up (started within the hour), with a latency", n)
		}
	}

	short, cancel2 := context.WithTimeout(ctx, 4*time.Second)
	defer cancel2()
	if _, err := cl.Trigger(short, "nobody-has-it", "ann@desk", 4*time.Second); !errors.Is(err, cluster.ErrNotTaken) {
		t.Fatalf("trigger of a job no replica has: %v", err)
	}
	if ops := operatorRecords(t, cl, "nobody-has-it"); len(ops) != 1 || ops[0].Error == "" {
		t.Errorf("operator records %+v; want the trigger, not taken", ops)
	}
}

// startReplica runs a front-door replica id over c with the job "report",
// on a schedule that never comes, until the test ends.
func startReplica(t *testing.T, c *redistest.Cluster, id string, job scheduler.JobFunc) {
	t.Helper()
	s, err := redcron.New(c.Addrs(), redcron.WithLockOptions(mutex.WithTrustedNodes()),
		redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithInstanceID(id)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add("report", "0 0 0 1 1 *", job, scheduler.WithLockTTL(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
}

// TestNodesAndFix: a node killed is down, one that refuses our password is
// refused; a leaked lock fixed is recorded in its job's ledger.
func TestNodesAndFix(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	locked := redistest.Start(t, 1).Node(0)
	cl := newCluster(t, c)
	ctx := context.Background()
	orphan := engine.Value{Token: engine.NewToken(), Acquired: time.Now().Add(-time.Hour), Owner: "gone"}.String()
	lk, _ := cl.Keys.Lock("sweep")
	for _, s := range c.Nodes() {
		s.Client(t).Set(ctx, lk.Lock, orphan, 0)
	}
	rep, err := cl.Scanner().Scan(ctx)
	if err != nil || rep.Counts[leaks.Orphaned.String()] != 1 {
		t.Fatalf("scan: %+v, %v", rep, err)
	}
	res := cl.Fix(ctx, rep, "ann@desk")
	if len(res) != 3 || !res[0].Deleted {
		t.Fatalf("fix: %+v", res)
	}
	ops := operatorRecords(t, cl, "sweep")
	if len(ops) != 1 || ops[0].Result != ledger.ActionLeaksFixed || !strings.Contains(ops[0].Error, "orphaned") {
		t.Errorf("operator records %+v; want the leak fix, orphaned", ops)
	}

	c.Node(2).Kill()
	noPassword := locked.Client(t)
	if err := locked.Client(t).ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	refused, _ := engine.NewNode(locked.Addr(), noPassword)
	cl.Nodes = append(cl.Nodes, refused)
	nodes := cl.NodeStatuses(ctx, 0)
	want := []string{cluster.NodeUp, cluster.NodeUp, cluster.NodeDown, cluster.NodeRefused}
	for i, n := range nodes {
		if n.State() != want[i] {
			t.Errorf("node %d: %s (%v); want %s", i, n.State(), n.Err, want[i])
		}
	}

	c.Node(0).Kill()
	c.Node(1).Kill()
	cl.Nodes = cl.Nodes[:3]
	st, err := cl.Status(ctx, 1, 0)
	if err == nil || len(st.Nodes) != 3 || st.Nodes[0].State() != cluster.NodeDown || len(st.Report.Errors) != 3 {
		t.Errorf("status with every node down: %+v, %v; want the error, and the nodes down", st, err)
	}
}
