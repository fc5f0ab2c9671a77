package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/scheduler"
)

// TestPublishedAndMissed: the jobs a live replica publishes are its job
// table's, with their next ticks; a name known only from a pause key or a
// ledger is not among them (a phantom, without spec). The missed ticks of the last hour are counted
// once each, however many nodes hold them, and older ones and runs not at
// all.
func TestPublishedAndMissed(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	cl := newCluster(t, c)
	ctx := context.Background()
	startReplica(t, c, "replica-a", func(context.Context, scheduler.RunInfo) error { return nil })
	ghost, _ := cl.Keys.Lock("ghost")
	tick, _ := cl.Keys.Lock("report")
	now := time.Now()
	for i, n := range cl.Nodes {
		if err := n.Client().Set(ctx, ghost.Pause, "1|ann", 0).Err(); err != nil {
			t.Fatal(err)
		}
		recent := engine.Record{Tick: now.Add(-10 * time.Minute).UnixMilli(), Result: "no_quorum"}
		old := engine.Record{Tick: now.Add(-2 * time.Hour).UnixMilli(), Result: "no_quorum"}
		for _, r := range []engine.Record{recent, old} {
			if err := n.AddMissed(ctx, tick, r, 100, 24*time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 { // a second missed tick, on one node alone
			r := engine.Record{Tick: now.Add(-5 * time.Minute).UnixMilli(), Result: "paused"}
			if err := n.AddMissed(ctx, tick, r, 100, 24*time.Hour); err != nil {
				t.Fatal(err)
			}
		}
	}
	var st *cluster.Status
	for deadline := time.Now().Add(10 * time.Second); st == nil || len(st.Published.Names()) == 0; <-time.After(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no job table of replica-a within 10s")
		}
		var err error
		if st, err = cl.Status(ctx, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if names := st.Published.Names(); !slices.Equal(names, []string{"report"}) || len(st.Published.Unread()) != 0 {
		t.Errorf("published %v, unread tables %v; want report alone, every table read", names, st.Published.Unread())
	}
	for _, j := range st.Jobs {
		switch j.Name {
		case "report":
			if j.Spec != "0 0 0 1 1 *" || j.Next.Month() != time.January || j.Next.Day() != 1 || j.Publishers != 1 || j.Phantom {
				t.Errorf("report: %+v; want its spec, next on January 1, published by replica-a", j)
			}
		case "ghost":
			if j.Spec != "" || !j.Next.IsZero() || j.Publishers != 0 || !j.Phantom {
				t.Errorf("ghost: %+v; want no spec, no publisher, phantom", j)
			}
		default:
			t.Errorf("job %s: want report and ghost alone", j.Name)
		}
	}
	rep := st.Report
	missed := cl.MissedSince(ctx, rep.Readable(cl.Nodes), []string{"report", "ghost"}, now.Add(-time.Hour))
	if len(missed) != 1 || missed["report"] != 2 {
		t.Errorf("missed in the last hour: %v; want report's 2", missed)
	}
}
