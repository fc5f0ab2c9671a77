package ledger

import "testing"

// TestOnceRan: a run (started, released or lost) of a one-time job's tick
// is its one run; a missed tick, another tick or another spec is not.
func TestOnceRan(t *testing.T) {
	const spec, tick = "@at 2026-11-28T09:00:00Z", int64(1795856400000)
	for _, c := range []struct {
		spec, state string
		tick        int64
		want        bool
	}{
		{spec, StateReleased, tick, true},
		{spec, StateStarted, tick, true},
		{spec, StateLost, tick, true},
		{"@at 2026-11-28T10:00:00+01:00", StateReleased, tick, true},
		{spec, StateMissed, tick, false},
		{spec, StateOperator, tick, false},
		{spec, StateReleased, tick + 1000, false},
		{spec, StateReleased, 0, false},
		{"@every 1h", StateReleased, tick, false},
		{"@at tomorrow", StateReleased, tick, false},
	} {
		if got := OnceRan(c.spec, c.state, c.tick); got != c.want {
			t.Errorf("OnceRan(%q, %q, %d) = %v, want %v", c.spec, c.state, c.tick, got, c.want)
		}
	}
}
