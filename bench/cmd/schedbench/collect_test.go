package main

import (
	"strings"
	"testing"
	"time"
)

// TestDescribeMissAhead checks that the trace of a missed tick includes
// the failed attempts for it, those made ahead of it in the second before
// and a late retry, and none for another tick or job.
func TestDescribeMissAhead(t *testing.T) {
	const T = 1_800_000_000
	col := &collector{w0: T, w1: T + 2}
	at := func(d time.Duration) int64 { return time.Unix(T, 0).Add(d).UnixMilli() }
	col.fails.set([]lockFail{
		{At: at(-390 * time.Millisecond), Tick: T, Replica: 1, Job: 0, Reason: "held", HolderTick: T, HolderOwner: 2},
		{At: at(-2 * time.Second), Tick: T - 2, Replica: 1, Job: 0, Reason: "already_run"},  // an earlier tick's
		{At: at(-390 * time.Millisecond), Tick: T, Replica: 2, Job: 1, Reason: "held"},      // another job's
		{At: at(2500 * time.Millisecond), Tick: T, Replica: 0, Job: 0, Reason: "no_quorum"}, // a late retry
		{At: at(600 * time.Millisecond), Tick: T + 1, Replica: 2, Job: 0, Reason: "held"},   // the next tick's, ahead
	})
	col.recs.set([]record{{Kind: "skipped", Skip: "held", Replica: 1, Job: 0, Tick: T, Attempts: 1}})
	got := describeMiss(col, 2, 0) // job 0 at tick T
	for _, want := range []string{"replica-1 lock held at -390ms", "holder replica-2 for tick +0s", "replica-1 skipped",
		"replica-0 lock no_quorum at +2500ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("describeMiss = %q, lacks %q", got, want)
		}
	}
	if strings.Contains(got, "already_run") || strings.Contains(got, "replica-2 lock") {
		t.Errorf("describeMiss = %q: another tick's or job's failure", got)
	}
}

// TestCrossCheck checks that analyze checks the scheduler's run_started
// events against the jobs' own start records: a pair the jobs started
// twice is a duplicate, and one that either account lacks is a miss.
func TestCrossCheck(t *testing.T) {
	const T = 1_800_000_000
	col := &collector{w0: T, w1: T + 2}
	started := func(job int32, tick int64) record {
		return record{Kind: "run_started", Job: job, Tick: tick, Attempts: 1, Delay: time.Millisecond}
	}
	col.recs.set([]record{
		started(0, T),   // and the job started once: fine
		started(1, T),   // the job started twice
		started(0, T+1), // the job never started
		started(2, T+1), // out of range: ignored
		started(0, T+2), // out of the window: ignored
	})
	col.inJobs.set([]record{
		started(0, T),
		started(1, T), started(1, T),
		started(1, T+1), // without an event
	})
	res := analyze(col, 2, 1, 2)
	if res.runs != 3 || res.inJobRuns != 4 {
		t.Errorf("runs %d, in-job records %d; want 3, 4", res.runs, res.inJobRuns)
	}
	if res.duplicates != 1 || res.extraRuns != 1 || res.jobDuplicates != 1 {
		t.Errorf("duplicates %d (extra runs %d, by the jobs %d); want 1 (1, 1)", res.duplicates, res.extraRuns, res.jobDuplicates)
	}
	if res.misses != 2 || res.missNoStart != 1 || res.missNoEvent != 1 {
		t.Errorf("misses %d (no start %d, no event %d); want 2 (1, 1)", res.misses, res.missNoStart, res.missNoEvent)
	}
	if res.mismatches != 3 || !strings.HasPrefix(res.mismatchExample, "j1 at ") {
		t.Errorf("mismatches %d, e.g. %q; want 3, e.g. j1", res.mismatches, res.mismatchExample)
	}
}

// TestScriptOp checks that the hook tells the lock scripts apart by the
// shape of their arguments, one lock or two merged in one call.
func TestScriptOp(t *testing.T) {
	evalsha := func(keys, lead any, args int) []any {
		k := keys.(int)
		a := []any{"evalsha", "sha", k}
		for range k {
			a = append(a, "key")
		}
		a = append(a, lead)
		for range args {
			a = append(a, "x")
		}
		return a
	}
	for _, c := range []struct {
		args []any
		want string
	}{
		{evalsha(3, "0", 3), "acquire"},
		{evalsha(6, "1", 6), "acquire"},
		{evalsha(4, 300000, 8), "commit"},
		{evalsha(8, 300000, 16), "commit"},
		{evalsha(3, 300000, 7), "release"},
		{evalsha(6, 300000, 14), "release"},
		{evalsha(1, "", 2), "extend"},
		{evalsha(4, "", 8), "extend"},
		{evalsha(2, "0", 1), "other"},
	} {
		if got := scriptOp(c.args); got != c.want {
			t.Errorf("%d keys, %d arguments after %v: %s, want %s", c.args[2], len(c.args)-4-c.args[2].(int), c.args[3+c.args[2].(int)], got, c.want)
		}
	}
}
