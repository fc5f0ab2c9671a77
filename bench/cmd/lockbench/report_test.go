package main

import (
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/bench/internal/machine"
)

// rounds returns rounds of one second with the given ops each.
func rounds(ops ...int) []round {
	var rs []round
	for _, n := range ops {
		rs = append(rs, round{ops: n, acquired: n, elapsed: time.Second})
	}
	return rs
}

// TestVsRawPerRound checks that vs raw is the median of the per-round
// ratios, with their extremes, not the ratio of the medians, and that the
// goals are judged on it.
func TestVsRawPerRound(t *testing.T) {
	sc := scenario{Nodes: 5, Goroutines: 1, Names: distinct}
	results := []result{
		{scenario: sc, impl: "raw", rounds: rounds(100, 200, 300)},
		// Per round: 100/150, 200/100, 300/300 → median 1.00, though
		// the medians' ratio is 200/150 = 1.33, beyond the 1.3 goal.
		{scenario: sc, impl: "redcron-nofence", rounds: rounds(150, 100, 300)},
		{scenario: sc, impl: "redsync", rounds: rounds(100, 100, 100)},
	}
	sums := summarize(results)
	if s := sums[0]; s.VsRaw != 1 || s.VsRawMin != 1 || s.VsRawMax != 1 {
		t.Errorf("raw: vs raw %v (%v-%v), want 1 (1-1)", s.VsRaw, s.VsRawMin, s.VsRawMax)
	}
	if s := sums[1]; s.VsRaw != 1 || s.VsRawMin != 100.0/150 || s.VsRawMax != 2 {
		t.Errorf("redcron-nofence: vs raw %v (%v-%v), want 1 (0.667-2)", s.VsRaw, s.VsRawMin, s.VsRawMax)
	}
	if s := sums[2]; s.VsRaw != 2 || s.VsRawMin != 1 || s.VsRawMax != 3 {
		t.Errorf("redsync: vs raw %v (%v-%v), want 2 (1-3)", s.VsRaw, s.VsRawMin, s.VsRawMax)
	}
	gs := checkGoals(sums)
	if len(gs) != 1 || !gs[0].Met || gs[0].VsRaw != 1 {
		t.Fatalf("goals: %+v, want the 5×1 distinct one, met at 1.00", gs)
	}

	var b strings.Builder
	writeTable(&b, machine.Machine{}, config{rounds: 3, duration: time.Second}, sums, nil)
	out := b.String()
	for _, want := range []string{
		"redcron-nofence  150    ", // the median ops/s
		"1.00 (0.67-2.00)",
		"nodes=5 goroutines=1 names=distinct, redcron-nofence: within 1.3× of raw's time per cycle: 1.00 (rounds 0.67-2.00): met",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}

	// Without raw there is no ratio and no goal.
	sums = summarize(results[1:])
	if sums[0].VsRaw != 0 || len(checkGoals(sums)) != 0 {
		t.Errorf("without raw: vs raw %v, goals %v", sums[0].VsRaw, checkGoals(sums))
	}
}

// TestLedgerCosts checks that a -noledger variant is paired with its twin
// in the same scenario, round by round: time per cycle on ÷ off.
func TestLedgerCosts(t *testing.T) {
	sc := scenario{Nodes: 5, Goroutines: 1, Names: distinct}
	other := scenario{Nodes: 1, Goroutines: 1, Names: distinct}
	results := []result{
		{scenario: sc, impl: "redcron-fence", rounds: rounds(90, 100, 80)},
		{scenario: sc, impl: "redcron-fence-noledger", rounds: rounds(100, 100, 100)},
		{scenario: other, impl: "redcron-fence-noledger", rounds: rounds(100)}, // no twin
	}
	cs := ledgerCosts(results)
	if len(cs) != 1 {
		t.Fatalf("costs %+v, want one", cs)
	}
	// Per round: 100/90, 100/100, 100/80 → median 1.111.
	if c := cs[0]; c.scenario != sc || c.Impl != "redcron-fence" || c.Time != 100.0/90 || c.TimeMin != 1 || c.TimeMax != 1.25 || c.OnOps != 90 || c.OffOps != 100 {
		t.Errorf("cost %+v", c)
	}
}
