package ledger

import (
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

// TestMissed: a due tick with no record is missed, with the reason most
// replicas gave; ticks with a run or already marked missed are not; with a
// full history, ticks older than its oldest record are not judged.
func TestMissed(t *testing.T) {
	at := func(s int64) time.Time { return time.UnixMilli(s * 1000) }
	runs := []Run{
		{Record: engine.Record{Tick: 5000}, State: StateReleased},
		{Record: engine.Record{Tick: 3000}, State: StateMissed},
		{Record: engine.Record{Tick: 2000}, State: StateStarted},
	}
	due := []time.Time{at(1), at(2), at(3), at(4), at(5), at(6)}
	skips := map[int64][]Skip{4000: {{"b", "overlap"}, {"a", "no_quorum"}, {"c", "no_quorum"}}}
	got := Missed(due, runs, false, skips)
	if len(got) != 3 || got[0].Tick != 1000 || got[1].Tick != 4000 || got[2].Tick != 6000 {
		t.Fatalf("missed %+v; want ticks 1000, 4000, 6000", got)
	}
	if got[1].Result != "no_quorum" || got[1].Error != "a: no_quorum, b: overlap, c: no_quorum" {
		t.Errorf("tick 4000: %q, %q; want the most common reason and every report", got[1].Result, got[1].Error)
	}
	if got[0].Result != NoReport {
		t.Errorf("tick 1000 without reports: %q; want %q", got[0].Result, NoReport)
	}
	if got := Missed(due, runs, true, skips); len(got) != 2 || got[0].Tick != 4000 {
		t.Errorf("with a full history: %+v; want ticks 4000 and 6000 only", got)
	}
}
