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
	copies := []Copy{{Entries: []engine.Entry{entry('o', pause), entry('o', other), entry('r', run)}}, {}}
	if m := Missed(due, copies, 3, 2, nil, ""); len(m) != 1 || m[0].Tick != 5000 {
		t.Errorf("missed %+v; want tick 5000 alone: an action is no run", m)
	}
}

// TestMissed: a due tick that no record of the copies read covers is
// missed, with the reason most replicas gave (or the fallback); a tick
// with a run, a start on any node (running, or its replica died) or a
// missed record is not; a lease no run used does not cover its tick.
func TestMissed(t *testing.T) {
	at := func(s float64) time.Time { return time.UnixMilli(int64(s * 1000)) }
	rec := func(state engine.RecordState, tick int64, run string) engine.Entry {
		return engine.Entry{State: state, Record: engine.Record{Tick: tick, Run: run}, Score: tick}
	}
	copies := []Copy{
		{Entries: []engine.Entry{rec('s', 7000, ""), rec('r', 5000, "r5"), rec('r', 4500, ""), rec('m', 3000, "")}},
		{Entries: []engine.Entry{rec('r', 5000, "r5"), rec('r', 4500, ""), rec('s', 2000, "")}},
		{Entries: []engine.Entry{rec('l', 4500, "")}},
	}
	due := []time.Time{at(1), at(2), at(3), at(4), at(4.5), at(5), at(6), at(7)}
	skips := map[int64][]Skip{4000: {{"b", "overlap"}, {"a", "no_quorum"}, {"c", "no_quorum"}}}
	got := Missed(due, copies, 5, 3, skips, "")
	var ticks []int64
	for _, m := range got {
		ticks = append(ticks, m.Tick)
	}
	if !slices.Equal(ticks, []int64{1000, 4000, 4500, 6000}) {
		t.Fatalf("missed ticks %v; want 1000, 4000, 4500, 6000", ticks)
	}
	if got[1].Result != "no_quorum" || got[1].Error != "a: no_quorum, b: overlap, c: no_quorum" {
		t.Errorf("tick 4000: %q, %q; want the most common reason and every report", got[1].Result, got[1].Error)
	}
	if got[0].Result != NoReport {
		t.Errorf("tick 1000 without reports: %q; want %q", got[0].Result, NoReport)
	}
	if got := Missed(due, copies, 5, 3, skips, "paused"); got[0].Result != "paused" {
		t.Errorf("with fallback paused: %+v; want paused for a tick nobody reported", got[0])
	}
}

// TestMissedWitnesses: a tick is judged only when nodes-quorum+1 copies
// hold every record written since before it: with 5 nodes and a quorum
// of 3, three witnesses. A node that restarted after a tick (its Since
// after it) is no witness, so a run whose records lived on the nodes that
// restarted is not called missed.
func TestMissedWitnesses(t *testing.T) {
	due := []time.Time{time.UnixMilli(1000), time.UnixMilli(2000), time.UnixMilli(3000)}
	copies := []Copy{{Since: 0}, {Since: 0}, {Since: 1500}, {Since: 2500}}
	var ticks []int64
	for _, m := range Missed(due, copies, 5, 3, nil, "") {
		ticks = append(ticks, m.Tick)
	}
	if !slices.Equal(ticks, []int64{2000, 3000}) {
		t.Errorf("missed ticks %v; want 2000 and 3000 (tick 1000 has 2 witnesses, fewer than 3)", ticks)
	}
	if m := Missed(due, copies[:2], 3, 2, nil, ""); len(m) != 3 {
		t.Errorf("3 nodes, quorum 2, two witnesses: %d missed; want all 3", len(m))
	}
	if m := Missed(due, copies[:2], 5, 3, nil, ""); len(m) != 0 {
		t.Errorf("5 nodes, two copies read: %d missed; want none (they prove nothing)", len(m))
	}
}
