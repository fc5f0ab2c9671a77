package main

import (
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/bench/internal/machine"
)

// testConfig is a config of jobs 1 and 1000, three rounds.
func testConfig() config {
	return config{jobs: []int{1, goalJobs}, aheads: []time.Duration{0}, replicas: 3, nodes: 5,
		warmup: 3 * time.Second, measure: 8 * time.Second, minSamples: 200, rounds: 3}
}

// round returns a result of jobs jobs whose runs, if any, had the given
// p99 start delay.
func round(jobs, r, runs int, p99 time.Duration) result {
	res := result{jobs: jobs, round: r, ticks: testConfig().ticks(jobs), window: 8 * time.Second,
		runs: runs, firstAttempt: runs, inJobRuns: runs, perReplica: make([]int, 3)}
	if runs > 0 {
		res.p50, res.p99, res.maxDelay = p99/2, p99, p99
		res.firstP50, res.firstP99 = p99/2, p99
		res.jobP50, res.jobP99 = p99/2, p99
	} else {
		res.misses = jobs * res.ticks
	}
	return res
}

func report(t *testing.T, results []result) string {
	t.Helper()
	var b strings.Builder
	writeReport(&b, machine.Machine{}, testConfig(), results)
	return b.String()
}

// TestEmptyRoundsLeftOut checks that a round without runs is left out of
// the latency medians rather than counted as a p99 of 0, and that the
// samples the figures rest on are printed.
func TestEmptyRoundsLeftOut(t *testing.T) {
	results := []result{
		round(1, 0, 200, 2*time.Millisecond),
		round(1, 1, 200, 2*time.Millisecond),
		round(1, 2, 200, 2*time.Millisecond),
		round(goalJobs, 0, 8000, 100*time.Millisecond),
		round(goalJobs, 1, 0, 0),
		round(goalJobs, 2, 8000, 300*time.Millisecond),
	}
	sums := summarize(testConfig(), results)
	one, big := sums[0], sums[1]
	if one.ticks != 200 || one.p99.n != 200 || one.p99.samples() != "200" {
		t.Errorf("J = 1: %d ticks, p99 on %s runs a round; want 200, 200", one.ticks, one.p99.samples())
	}
	if big.p99.d != 200*time.Millisecond || !big.p99.ok() {
		t.Errorf("J = %d: p99 %v, want the median of the two rounds with runs, 200ms", goalJobs, big.p99)
	}
	if got, want := big.p99.samples(), "8000 (in 2 of 3 rounds)"; got != want {
		t.Errorf("J = %d: samples %q, want %q", goalJobs, got, want)
	}
	out := report(t, results)
	reportHas(t, out,
		"p99 start delay at 1000 jobs within 3× that of 1 job: 200.0 ms vs 2.0 ms (8000 (in 2 of 3 rounds) and 200 runs a round) = 100.00×: NOT met",
		"p99 start delay at 1000 jobs under 250ms: 200.0 ms: met",
		"(start p50 1.0 ms, p99 2.0 ms; 200 runs a round)",
	)
}

// TestNoData checks that a setup without a single run reads "-" and fails
// its delay goals, instead of a p99 of 0 "met".
func TestNoData(t *testing.T) {
	var results []result
	for r := range 3 {
		results = append(results, round(1, r, 200, 2*time.Millisecond), round(goalJobs, r, 0, 0))
	}
	sums := summarize(testConfig(), results)
	if big := sums[1]; big.p99.ok() || big.p99.String() != "-" || big.maxDelay.String() != "-" {
		t.Errorf("no runs: p99 %v, max %v; want -", big.p99, big.maxDelay)
	}
	out := report(t, results)
	reportHas(t, out,
		"p99 start delay at 1000 jobs within 3× that of 1 job: - vs 2.0 ms (0 and 200 runs a round) = -: NOT met",
		"p99 start delay at 1000 jobs under 250ms: -: NOT met",
		"start delay as the jobs saw it (their first action): p50 -, p99 - (0 runs a round)",
	)
	for line := range strings.Lines(out) {
		if strings.Contains(line, "p99 start delay") && strings.Contains(line, ": met") {
			t.Errorf("a delay goal met without data: %s", line)
		}
	}
}

// reportHas checks that the report out has every line part in want.
func reportHas(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
}
