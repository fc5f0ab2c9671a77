package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/bench/internal/machine"
)

// crashRound returns the collector of a round of 6 jobs over 12 ticks in
// which replica 0, which ran jobs 0 and 1, was killed 2.5 s after the
// window's first tick: replica 1 runs jobs 2 and 3 and takes job 1 over
// from the tick at +8 s and job 0 from +9 s (its first run 3 s late);
// replica 2 runs jobs 4 and 5 (each job in a shard of its own). drop, if set, leaves out the survivors'
// records of a job-tick (job, tick from the window's first).
func crashRound(drop func(job int32, tick int64) bool) *collector {
	const T = 1_800_000_000
	first3 := func(r record) bool { return r.Job == 3 && r.Tick == T }
	col := &collector{w0: T, w1: T + 12, crashMs: (T+2)*1000 + 500, killed: 0}
	var recs, starts []record
	run := func(replica int8, job int32, tick int64, delay time.Duration) {
		if drop != nil && drop(job, tick) {
			return
		}
		r := record{Kind: "run_started", Replica: replica, Job: job, Tick: T + tick, Attempts: 1, Delay: delay}
		recs, starts = append(recs, r), append(starts, r)
	}
	for tick := range int64(12) {
		run(1, 2, tick, 10*time.Millisecond)
		run(1, 3, tick, 10*time.Millisecond)
		run(2, 4, tick, 20*time.Millisecond)
		run(2, 5, tick, 20*time.Millisecond)
		switch {
		case tick == 9:
			run(1, 0, tick, 3*time.Second)
		case tick > 9:
			run(1, 0, tick, 10*time.Millisecond)
		}
		if tick >= 8 {
			run(1, 1, tick, 10*time.Millisecond)
		}
	}
	// Job 3 missed the window's first tick (a survivor's own miss, well
	// before the crash): it is not the killed replica's.
	recs, starts = slices.DeleteFunc(recs, first3), slices.DeleteFunc(starts, first3)
	// A record of the killed replica's (none reach the benchmark): it
	// does not count as a survivor's run.
	recs = append(recs, record{Kind: "run_started", Replica: 0, Job: 0, Tick: T + 5, Attempts: 1, Delay: time.Millisecond})
	col.recs.set(recs)
	col.inJobs.set(starts)
	return col
}

// TestAnalyzeCrash checks the crash figures: the job-ticks missed at or
// after the crash (not those before it, which may have been the killed
// replica's), the jobs they were of, the stall to the last tick missed,
// the survivors' start delays after the crash, and a miss of a job the
// survivors ran before the crash as a stall beyond the killed replica's
// share.
func TestAnalyzeCrash(t *testing.T) {
	res := analyze(crashRound(nil), 6, 3, 12)
	c := res.crash
	if !c.on || c.offset != 2500*time.Millisecond || c.first != 1_800_000_003 || c.after != 6*9 {
		t.Errorf("crash at +%v, first tick %d, %d job-ticks after; want +2.5s, 1800000003, 54", c.offset, c.first, c.after)
	}
	// Job 0 missed the ticks at +3..+8 s, job 1 those at +3..+7 s.
	if c.missed != 11 || c.missedJobs != 2 || c.killedJobs != 2 || c.othersMissed != 0 {
		t.Errorf("missed %d job-ticks of %d jobs (the killed replica's %d, others' %d); want 11 of 2 (2, 0)", c.missed, c.missedJobs, c.killedJobs, c.othersMissed)
	}
	if got := runLengths(c.byTick); got != "2×5 1 0×3" {
		t.Errorf("missed by tick %v (%s), want 2×5 1 0×3", c.byTick, got)
	}
	if c.lastMiss != 1_800_000_008 || c.stall != 5500*time.Millisecond || !c.recovered {
		t.Errorf("last miss %d, stall %v, recovered %v; want 1800000008, 5.5s, true", c.lastMiss, c.stall, c.recovered)
	}
	if c.runs != 4*9+3+4 || c.max != 3*time.Second || c.p99 != 3*time.Second {
		t.Errorf("survivors' runs after the crash %d, p99 %v, max %v; want 43, 3s, 3s", c.runs, c.p99, c.max)
	}
	if res.misses != 11 || res.duplicates != 0 || !c.ok(10*time.Second, res.duplicates) || c.ok(5*time.Second, 0) {
		t.Errorf("analyze: %d misses, %d duplicates, ok within 10s %v, within 5s %v; want 11, 0, true, false",
			res.misses, res.duplicates, c.ok(10*time.Second, res.duplicates), c.ok(5*time.Second, 0))
	}

	// Job 4, replica 2's, misses the tick at +10 s (by its own record
	// only): a job beyond the killed replica's share, and the stall lasts
	// to that tick.
	col := crashRound(nil)
	starts := col.jobStarts()
	for i, r := range starts {
		if r.Job == 4 && r.Tick == col.w0+10 {
			starts = append(starts[:i], starts[i+1:]...)
			break
		}
	}
	col.inJobs = buffer[record]{}
	col.inJobs.set(starts)
	c = analyzeCrash(col, 6, 12)
	if c.missed != 12 || c.missedJobs != 3 || c.othersMissed != 1 || c.stall != 7500*time.Millisecond || c.ok(10*time.Second, 0) {
		t.Errorf("job 4 missed at +10s: missed %d of %d jobs (others' %d), stall %v, ok %v; want 12 of 3 (1), 7.5s, false",
			c.missed, c.missedJobs, c.othersMissed, c.stall, c.ok(10*time.Second, 0))
	}

	// Job 1 is missed at the window's last tick too: not recovered.
	c = analyzeCrash(crashRound(func(job int32, tick int64) bool { return job == 1 && tick == 11 }), 6, 12)
	if c.recovered || c.stall != 8500*time.Millisecond || c.missedJobs != 2 || c.stallStr() != "≥ 8.5 s" || c.ok(time.Minute, 0) {
		t.Errorf("missed at the last tick: recovered %v, stall %s, %d jobs; want false, ≥ 8.5 s, 2", c.recovered, c.stallStr(), c.missedJobs)
	}
}

// TestCrashFlags checks that -crash wants a window that covers the crash,
// two lease TTLs and a margin, and no -rush.
func TestCrashFlags(t *testing.T) {
	c, err := parseFlags([]string{"-shape", "midnight", "-crash", "5s", "-measure", "28s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.crash != 5*time.Second || c.leaseTTL() != 10*time.Second {
		t.Errorf("crash %v, lease TTL %v; want 5s, 10s", c.crash, c.leaseTTL())
	}
	for _, args := range [][]string{
		{"-shape", "midnight", "-crash", "5s", "-measure", "27s"},
		{"-shape", "midnight", "-crash", "5s", "-measure", "60s", "-rush"},
		{"-shape", "midnight", "-crash", "5s", "-measure", "60s", "-replicas", "1"},
		{"-crash", "5s", "-measure", "60s", "-lock-ttl", "30s"}, // -wiring scheduler: the lock TTL bounds it
	} {
		if _, err := parseFlags(args, io.Discard); err == nil || !strings.Contains(err.Error(), "-crash") {
			t.Errorf("%v: error %v, want one naming -crash", args, err)
		}
	}
}

// TestCrashReport checks the crash's lines of the report and its verdict.
func TestCrashReport(t *testing.T) {
	cfg := testConfig()
	cfg.jobs, cfg.crash, cfg.wiring, cfg.maxTTL = []int{6}, 5*time.Second, wiringRedcron, 10*time.Second
	var results []result
	for r := range 3 {
		res := analyze(crashRound(nil), 6, 3, 12)
		res.round = r
		results = append(results, res)
	}
	var b strings.Builder
	writeReport(&b, machine.Machine{}, cfg, results)
	reportHas(t, b.String(),
		"6 jobs  1      +2.500 s  54               11 (20 %)  2 (33 %)     2 (33 %)       0                    5.5 s",
		"6 jobs, round 2: 2×5 1 0×3",
		"issue 30 goal 4 (crash), 6 jobs: a crash stalls at most the killed replica's share, for at most the lease TTL 10s, 0 twice:",
		"jobs missed after it 33 % (the killed replica's 33 %; others' 0), stall 5.5 s (median; longest 5.5 s), 0 twice, 3 rounds: met",
	)
}
