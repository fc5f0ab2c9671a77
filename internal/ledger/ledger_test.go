package ledger

import (
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

func entry(state engine.RecordState, r engine.Record) engine.Entry {
	score := r.Tick
	if score == 0 {
		score = r.Start
	}
	return engine.Entry{State: state, Record: r, Score: score}
}

// TestMerge: a record's copies on several nodes are one run, in its most
// final state; a release that found the lock gone on more nodes than held
// it is lost; runs are newest first.
func TestMerge(t *testing.T) {
	started := engine.Record{Owner: "a", Tick: 1000, Fence: 7, Start: 990}
	done := started
	done.End, done.Result = 1500, "success"
	lost := engine.Record{Owner: "b", Tick: 2000, Fence: 8, Start: 1990, End: 2500, Result: "success"}
	manual := engine.Record{Owner: "c", Fence: 9, Start: 3000}
	missed := engine.Record{Tick: 4000, Result: "no_quorum"}
	runs := Merge([][]engine.Entry{
		{entry('s', started), entry('l', lost), entry('m', missed)},
		{entry('r', done), entry('l', lost), entry('s', manual), entry('m', missed)},
		{entry('s', started), entry('r', lost)},
	})
	want := []struct {
		tick  int64
		state string
		nodes int
	}{{4000, StateMissed, 2}, {0, StateStarted, 1}, {2000, StateLost, 3}, {1000, StateReleased, 3}}
	if len(runs) != len(want) {
		t.Fatalf("merged %d runs: %+v; want %d", len(runs), runs, len(want))
	}
	for i, w := range want {
		if r := runs[i]; r.Tick != w.tick || r.State != w.state || r.Nodes != w.nodes {
			t.Errorf("run %d: tick %d %s on %d nodes; want tick %d %s on %d", i, r.Tick, r.State, r.Nodes, w.tick, w.state, w.nodes)
		}
	}
	if runs[3].Result != "success" || runs[3].End != 1500 {
		t.Errorf("a released run shows %+v; want its final record", runs[3].Record)
	}
}

// TestMergeOperator: an operator's action is one record over the nodes that
// hold it, by who, when and what; two actions at the same time by two
// operators are two; a missed-tick check ignores them.
func TestMergeOperator(t *testing.T) {
	pause := engine.Record{Owner: "ann@a", Start: 5000, Result: ActionPaused}
	other := engine.Record{Owner: "bob@b", Start: 5000, Result: ActionPaused}
	resume := engine.Record{Owner: "ann@a", Start: 5000, Result: ActionResumed}
	run := engine.Record{Owner: "r1", Tick: 4000, Fence: 3, Start: 4000, End: 4100, Run: "run-1", Result: "success"}
	runs := Merge([][]engine.Entry{
		{entry('o', pause), entry('o', other), entry('r', run)},
		{entry('o', pause), entry('o', resume), entry('r', run)},
	})
	if len(runs) != 4 {
		t.Fatalf("merged %d records: %+v; want 4", len(runs), runs)
	}
	nodes := map[string]int{}
	for _, r := range runs[:3] {
		if r.State != StateOperator || r.Start != 5000 {
			t.Errorf("record %+v; want an operator's action at 5000", r)
		}
		nodes[r.Owner+" "+r.Result] = r.Nodes
	}
	if nodes["ann@a paused"] != 2 || nodes["bob@b paused"] != 1 || nodes["ann@a resumed"] != 1 {
		t.Errorf("actions by who and what, on how many nodes: %v", nodes)
	}
	if runs[3].State != StateReleased || runs[3].Tick != 4000 {
		t.Errorf("oldest record %+v; want the run of tick 4000", runs[3])
	}
	due := []time.Time{time.UnixMilli(4000), time.UnixMilli(5000)}
	if m := Missed(due, runs, 0, 2, nil, ""); len(m) != 1 || m[0].Tick != 5000 {
		t.Errorf("missed %+v; want tick 5000 alone: an action is no run", m)
	}
}

// TestMissed: a due tick no run covers is missed, with the reason most
// replicas gave (or the fallback); a tick with a run, a committed start or
// a missed record is not; a lease no run used, or a start on a minority,
// does not cover its tick; ticks at or before the horizon are not judged.
func TestMissed(t *testing.T) {
	at := func(s float64) time.Time { return time.UnixMilli(int64(s * 1000)) }
	runs := []Run{
		{Record: engine.Record{Tick: 7000}, State: StateStarted, Nodes: 1},             // a failed commit's leftover
		{Record: engine.Record{Tick: 5000, Run: "r5"}, State: StateReleased, Nodes: 3}, // ran
		{Record: engine.Record{Tick: 4500}, State: StateReleased, Nodes: 3},            // a lease no run used
		{Record: engine.Record{Tick: 3000}, State: StateMissed, Nodes: 3},
		{Record: engine.Record{Tick: 2000}, State: StateStarted, Nodes: 2}, // running, or its replica died
	}
	due := []time.Time{at(1), at(2), at(3), at(4), at(4.5), at(5), at(6), at(7)}
	skips := map[int64][]Skip{4000: {{"b", "overlap"}, {"a", "no_quorum"}, {"c", "no_quorum"}}}
	got := Missed(due, runs, 0, 2, skips, "")
	var ticks []int64
	for _, m := range got {
		ticks = append(ticks, m.Tick)
	}
	if !slices.Equal(ticks, []int64{1000, 4000, 4500, 6000, 7000}) {
		t.Fatalf("missed ticks %v; want 1000, 4000, 4500, 6000, 7000", ticks)
	}
	if got[1].Result != "no_quorum" || got[1].Error != "a: no_quorum, b: overlap, c: no_quorum" {
		t.Errorf("tick 4000: %q, %q; want the most common reason and every report", got[1].Result, got[1].Error)
	}
	if got[0].Result != NoReport {
		t.Errorf("tick 1000 without reports: %q; want %q", got[0].Result, NoReport)
	}
	if got := Missed(due, runs, 4500, 2, skips, "paused"); len(got) != 2 || got[0].Tick != 6000 || got[0].Result != "paused" {
		t.Errorf("after horizon 4500 with fallback paused: %+v; want ticks 6000 and 7000, paused", got)
	}
}

// TestHorizon: only the copies that hold as many records as the ledger
// keeps may have dropped older ones; the horizon is the newest of their
// oldest scores.
func TestHorizon(t *testing.T) {
	es := func(scores ...int64) []engine.Entry {
		var out []engine.Entry
		for _, s := range scores {
			out = append(out, engine.Entry{Score: s})
		}
		return out
	}
	nodes := [][]engine.Entry{es(90, 80, 70), es(90, 60, 10), es(90, 50)}
	if h := Horizon(nodes, 3); h != 70 {
		t.Errorf("Horizon = %d, want 70 (the full copies' oldest: 70 and 10)", h)
	}
	if h := Horizon(nodes, 4); h != 0 {
		t.Errorf("Horizon with none full = %d, want 0", h)
	}
}
