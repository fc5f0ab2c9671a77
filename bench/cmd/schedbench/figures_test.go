package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/bench/internal/machine"
)

// TestShapeMidnight checks that -shape midnight sets issue 30's
// reproduction for the flags not given, and that flags given win.
func TestShapeMidnight(t *testing.T) {
	c, err := parseFlags([]string{"-shape", "midnight", "-measure", "60s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.wiring != wiringRedcron || c.maxTTL != 10*time.Second || c.lockTTL != 8*time.Second || c.jobSleep != 10*time.Millisecond ||
		!slices.Equal(c.jobs, []int{1000, 5000, 10000}) || c.measure != time.Minute || c.nodes != 5 || c.replicas != 3 {
		t.Errorf("-shape midnight -measure 60s: %+v", c)
	}
	c, err = parseFlags([]string{"-shape", "midnight", "-rush"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.jobs, []int{100000}) || c.ticks(100000) != 1 {
		t.Errorf("-shape midnight -rush: jobs %v, %d ticks; want 100000, 1", c.jobs, c.ticks(100000))
	}
	if _, err := parseFlags([]string{"-shape", "noon"}, io.Discard); err == nil {
		t.Error("-shape noon: no error")
	}
	if _, err := parseFlags([]string{"-lock-ttl", "20s", "-max-ttl", "10s"}, io.Discard); err == nil {
		t.Error("a lock TTL above the max TTL: no error")
	}
}

// TestVotesFrom checks the instant untrusted nodes vote from: the max TTL
// and 4 s after the servers started, on a whole second; at once with
// trusted nodes.
func TestVotesFrom(t *testing.T) {
	up := time.Date(2026, 11, 27, 0, 0, 0, 300_000_000, time.UTC)
	c := config{wiring: wiringRedcron, maxTTL: 10 * time.Second}
	if got, want := c.votesFrom(up), up.Truncate(time.Second).Add(15*time.Second); !got.Equal(want) {
		t.Errorf("votesFrom = %v, want %v", got, want)
	}
	if got := (config{wiring: wiringScheduler}).votesFrom(up); !got.IsZero() {
		t.Errorf("trusted nodes: votesFrom = %v, want zero", got)
	}
	if got := dailySpec(time.Date(2026, 11, 27, 23, 59, 7, 0, time.FixedZone("x", 3600))); got != "7 59 22 * * *" {
		t.Errorf("dailySpec = %q, want the UTC instant", got)
	}
}

// TestFigures checks the headline figures of a round: the share of the
// due job-ticks run, the replicas' least and largest share, the servers'
// commands and the CPU per job-tick.
func TestFigures(t *testing.T) {
	r := result{jobs: 5000, ticks: 18, ranPairs: 270, runs: 270, perReplica: []int{0, 200, 70},
		server: map[string]uint64{"evalsha": 90_000, "set": 45_000}, redisCPU: 9, procCPU: 9, window: 18 * time.Second}
	if got := pct(r.ranShare()); got != "0.30 %" {
		t.Errorf("ran %s, want 0.30 %%", got)
	}
	if lo, hi := r.shares(); lo != 0 || hi != 200.0/270 {
		t.Errorf("shares %v-%v", lo, hi)
	}
	if got := r.serverCmds(); got != 1.5 {
		t.Errorf("server cmds/job-tick %v, want 1.5", got)
	}
	if got := r.cpuUs(); got != 200 {
		t.Errorf("CPU %v µs/job-tick, want 200", got)
	}
	if got := r.cores(); got != 1 {
		t.Errorf("%v cores, want 1", got)
	}
}

// TestBaselinePaired checks that with -baseline every setup has a twin run
// by the baseline's replicas, and that the report compares each round of
// this build with the same round of the baseline.
func TestBaselinePaired(t *testing.T) {
	cfg := testConfig()
	cfg.jobs, cfg.baseline = []int{goalJobs}, "/bin/true"
	if got := cfg.setups(); len(got) != 2 || got[0].baseline || !got[1].baseline || got[1].String() != "1000 jobs, baseline" {
		t.Fatalf("setups %v", got)
	}
	var results []result
	for r := range 3 {
		this, base := round(goalJobs, r, 8000, 50*time.Millisecond), round(goalJobs, r, 8000, 100*time.Millisecond)
		base.baseline = true
		this.ranPairs, base.ranPairs = 8000, 4000
		results = append(results, this, base)
	}
	var b strings.Builder
	writeReport(&b, machine.Machine{}, cfg, results)
	reportHas(t, b.String(),
		"this build vs the baseline",
		"1000 jobs (3 rounds paired):",
		"job-ticks run                 1 vs 0.5      share; this ÷ base 2.000 (2.00-2.00)",
		"start p99                    50 vs 100      ms; this ÷ base 0.500 (0.50-0.50)",
		"1000 jobs, baseline  1      8000  4000 (50 %)",
	)
}
