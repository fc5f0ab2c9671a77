package ledger

import "testing"

// TestOnceRan: a final record of a one-time job's tick, or its started
// record on a quorum, is its one run; a started record on fewer, a missed
// tick, another tick or another spec is not.
func TestOnceRan(t *testing.T) {
	const spec, tick = "@at 2026-11-28T09:00:00Z", int64(1795856400000)
	for _, c := range []struct {
		spec, state string
		tick        int64
		nodes       int
		want        bool
	}{
		{spec, StateReleased, tick, 1, true},
		{spec, StateLost, tick, 1, true},
		{spec, StateStarted, tick, 2, true},  // on a quorum of 3: claimed
		{spec, StateStarted, tick, 1, false}, // on one: maybe a claim given up
		{"@at 2026-11-28T10:00:00+01:00", StateReleased, tick, 3, true},
		{" @at\t2026-11-28T09:00:00Z", StateReleased, tick, 3, true},
		{spec, StateMissed, tick, 3, false},
		{spec, StateOperator, tick, 3, false},
		{spec, StateReleased, tick + 1000, 3, false},
		{spec, StateReleased, 0, 3, false},
		{"@every 1h", StateReleased, tick, 3, false},
		{"@at tomorrow", StateReleased, tick, 3, false},
	} {
		if got := OnceRan(c.spec, c.state, c.tick, c.nodes, 2); got != c.want {
			t.Errorf("OnceRan(%q, %q, %d, %d nodes of quorum 2) = %v, want %v", c.spec, c.state, c.tick, c.nodes, got, c.want)
		}
	}
}
