package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/scheduler"
)

// TestHistoryEndToEnd: the runs of a job over two replicas, each tick on
// one of them, are in history as they ran: replica, run id, fence, tick,
// result and error, every record on every node.
func TestHistoryEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	var mu sync.Mutex
	ran := map[string]scheduler.RunInfo{} // by run id
	var stops []func()
	for _, id := range []string{"replica-a", "replica-b"} {
		stops = append(stops, runJob(t, c, id, "flaky", "* * * * * *", func(_ context.Context, run scheduler.RunInfo) error {
			mu.Lock()
			ran[run.RunID] = run
			mu.Unlock()
			if run.Tick.Unix()%2 == 1 {
				return errors.New("odd second")
			}
			return nil
		}))
	}
	waitUntil(t, 15*time.Second, "4 runs", func() bool { mu.Lock(); defer mu.Unlock(); return len(ran) >= 4 })
	// The spec and next tick come from the job table the live replicas
	// publish (a stopped replica removes its heartbeat).
	o := exe(t, bin, nil, "-addrs", addrs, "-json", "status")
	var live struct {
		Jobs []jobStatus `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &live); err != nil || len(live.Jobs) != 1 {
		t.Fatalf("status -json: %v: %s", err, o)
	}
	if j := live.Jobs[0]; j.Spec != "* * * * * *" || j.Zone != "UTC" || j.Next.IsZero() || time.Until(j.Next) > time.Second {
		t.Errorf("status of %s: spec %q, zone %q, next %v; want the replicas' spec, UTC and a tick within a second",
			j.Name, j.Spec, j.Zone, j.Next)
	}
	for _, stop := range stops {
		stop() // releases flushed: every record is final
	}

	// No replica runs the job any more: -force.
	o = exe(t, bin, nil, "-addrs", addrs, "-json", "-force", "-last", "100", "history", "flaky")
	var doc struct {
		Job  string       `json:"job"`
		Runs []historyRun `json:"runs"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != 0 || doc.Job != "flaky" {
		t.Fatalf("history -json: %v: %s", err, o)
	}
	if len(doc.Runs) != len(ran) {
		t.Errorf("history has %d runs; %d ran", len(doc.Runs), len(ran))
	}
	for i, r := range doc.Runs {
		want, ok := ran[r.RunID]
		switch {
		case !ok:
			t.Errorf("history has run %+v, which did not run", r)
			continue
		case r.State != "released" || r.Nodes != 3:
			t.Errorf("run %s: state %q on %d nodes; want released on 3", r.RunID, r.State, r.Nodes)
		case r.Replica != want.Instance || r.Fence != want.Fence || !r.Tick.Equal(want.Tick):
			t.Errorf("run %s: replica %q fence %d tick %v; ran on %q with %d at %v", r.RunID, r.Replica, r.Fence, r.Tick,
				want.Instance, want.Fence, want.Tick)
		}
		odd := want.Tick.Unix()%2 == 1
		if odd && (r.Result != "failure" || r.Error != "odd second") || !odd && (r.Result != "success" || r.Error != "") {
			t.Errorf("run of tick %v: result %q, error %q", want.Tick, r.Result, r.Error)
		}
		if i > 0 && !r.Tick.Before(doc.Runs[i-1].Tick) {
			t.Errorf("runs not newest first: %v after %v", r.Tick, doc.Runs[i-1].Tick)
		}
	}

	if o := exe(t, bin, nil, "-addrs", addrs, "-force", "history", "flaky"); o.code != 0 ||
		!strings.Contains(o.stdout, "TICK") || !strings.Contains(o.stdout, "odd second") || !strings.Contains(o.stdout, "replica-") {
		t.Errorf("history table: %s", o)
	}
	newest := doc.Runs[0]
	if o := exe(t, bin, nil, "-addrs", addrs, "status"); o.code != 0 || !strings.Contains(o.stdout, "LAST RUN") ||
		!strings.Contains(o.stdout, newest.Tick.UTC().Format(time.RFC3339)+" "+newest.Result+" on "+newest.Replica) {
		t.Errorf("status does not show the last run %+v: %s", newest, o)
	}
	o = exe(t, bin, nil, "-addrs", addrs, "-json", "status")
	var st struct {
		Jobs  []jobStatus  `json:"jobs"`
		Nodes []nodeStatus `json:"node_list"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &st); err != nil || len(st.Nodes) != 3 || len(st.Jobs) != 1 {
		t.Fatalf("status -json: %v: %s", err, o)
	}
	for _, n := range st.Nodes {
		if !n.Up || n.LatencyMS <= 0 || !n.WarmingUp { // servers just started
			t.Errorf("node %+v: want up, with a latency, warming up", n)
		}
	}
	if o := exe(t, bin, nil, "-addrs", addrs, "history"); o.code != 2 {
		t.Errorf("history without a job: %s", o)
	}
}
