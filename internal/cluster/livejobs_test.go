package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/scheduler"
)

// TestLiveJobsAndMissed: the jobs a live replica publishes are its job
// table's, with their next ticks; a name known only from a pause key or a
// ledger is not among them. The missed ticks of the last hour are counted
// once each, however many nodes hold them, and older ones and runs not at
// all.
func TestLiveJobsAndMissed(t *testing.T) {
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
	var pub cluster.LiveJobs
	for deadline := time.Now().Add(10 * time.Second); len(pub.Jobs) == 0; <-time.After(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no job table of replica-a within 10s")
		}
		rep, err := cl.Scanner().Scan(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pub = cl.LiveJobs(ctx, rep, now)
	}
	j, ok := pub.Jobs["report"]
	if len(pub.Jobs) != 1 || !ok || j.Spec != "0 0 0 1 1 *" || j.Next.Month() != time.January || j.Next.Day() != 1 ||
		len(pub.Unknown) != 0 {
		t.Errorf("published %+v; want report alone, next on January 1", pub)
	}
	rep, _ := cl.Scanner().Scan(ctx)
	missed := cl.MissedSince(ctx, rep, []string{"report", "ghost"}, now.Add(-time.Hour))
	if len(missed) != 1 || missed["report"] != 2 {
		t.Errorf("missed in the last hour: %v; want report's 2", missed)
	}
}
