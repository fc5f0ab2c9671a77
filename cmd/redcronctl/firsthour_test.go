package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/scheduler"
	"github.com/redis/go-redis/v9"
)

// TestFlagsAfterTheCommand: flags may follow the command and its job, as
// they may precede them; after "--" every argument is not a flag.
func TestFlagsAfterTheCommand(t *testing.T) {
	env := func(string) string { return "" }
	for _, tc := range []struct {
		args             []string
		command, job     string
		json, force, fix bool
		last             int
	}{
		{args: []string{"-addrs", "a:1", "status", "-json"}, command: "status", json: true, last: 20},
		{args: []string{"status", "-json", "-addrs", "a:1"}, command: "status", json: true, last: 20},
		{args: []string{"-addrs", "a:1", "history", "-json", "-last", "5", "nightly"}, command: "history", job: "nightly", json: true, last: 5},
		{args: []string{"-addrs", "a:1", "history", "nightly", "-json"}, command: "history", job: "nightly", json: true, last: 20},
		{args: []string{"-addrs", "a:1", "pause", "-force", "nightly"}, command: "pause", job: "nightly", force: true, last: 20},
		{args: []string{"-addrs", "a:1", "leaks", "-fix", "-json"}, json: true, fix: true, last: 20},
		{args: []string{"-addrs", "a:1", "--", "trigger", "-json"}, command: "trigger", job: "-json", last: 20},
	} {
		var stderr strings.Builder
		cfg, err := parseConfig(tc.args, env, &stderr)
		if err != nil {
			t.Errorf("%q: %v\n%s", tc.args, err, stderr.String())
			continue
		}
		if cfg.command != tc.command || cfg.job != tc.job || cfg.json != tc.json || cfg.force != tc.force || cfg.fix != tc.fix || cfg.last != tc.last {
			t.Errorf("%q: command %q job %q json %v force %v fix %v last %d", tc.args, cfg.command, cfg.job, cfg.json, cfg.force, cfg.fix, cfg.last)
		}
	}
	for args, want := range map[string]string{
		"status -json x":        "status takes no argument",
		"pause a -json b":       "pause takes one job name",
		"history nightly -last": "flag needs an argument: -last",
	} {
		_, err := parseConfig(append([]string{"-addrs", "a:1"}, strings.Fields(args)...), env, &strings.Builder{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", args, err, want)
		}
	}
}

// TestDurationsUnderAMillisecond: durations under a millisecond are shown,
// in µs where the measure has them, "<1ms" where the ledger's millisecond
// precision does not.
func TestDurationsUnderAMillisecond(t *testing.T) {
	if got := short(412 * time.Microsecond); got != "412µs" {
		t.Errorf("short(412µs) = %q", got)
	}
	if got := latencyText(0.412); got != "412µs" {
		t.Errorf("latencyText(0.412) = %q", got)
	}
	if got := latencyText(1.43); got != "1.4ms" {
		t.Errorf("latencyText(1.43) = %q", got)
	}
}

// TestFirstHour runs every command on one node with flags after it, as a
// new user types them: each honours -json; a run that took under a
// millisecond shows so; the counts agree with their nouns ("1 job").
func TestFirstHour(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 1)
	addr := c.Addrs()[0]
	runJob(t, c, "replica-a", "tick", "* * * * * *", func(context.Context, scheduler.RunInfo) error { return nil })
	awaitStatusJSON(t, bin, addr, "a run of tick", func(jobs map[string]jobStatus) bool { return jobs["tick"].LastRun != nil })
	// A run that ended in the millisecond it started in, as the release writes it.
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("tick")
	tick := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	rec := engine.Record{Job: "tick", Owner: "replica-z", Tick: tick, Fence: 7, Start: tick, End: tick, Run: "fast", Result: "success", Try: 1}
	if err := c.Node(0).Client(t).ZAdd(context.Background(), lk.Ledger, redis.Z{Score: float64(tick), Member: "r|" + rec.Text()}).Err(); err != nil {
		t.Fatal(err)
	}

	isJSON := func(o outcome, code int) {
		t.Helper()
		var doc map[string]any
		if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != code {
			t.Errorf("want exit %d and a JSON document: %v\n%s", code, err, o)
		}
	}
	isJSON(exe(t, bin, nil, "-addrs", addr, "status", "-json"), 0)
	isJSON(exe(t, bin, nil, "-addrs", addr, "leaks", "-json"), 0)
	isJSON(exe(t, bin, nil, "-addrs", addr, "history", "tick", "-json"), 0)
	isJSON(exe(t, bin, nil, "-addrs", addr, "trigger", "-json", "tick"), 0)
	for _, cmd := range []string{"pause", "resume"} {
		o := exe(t, bin, nil, "-addrs", addr, cmd, "tick", "-json")
		var doc struct {
			Job     string `json:"job"`
			Action  string `json:"action"`
			Done    bool   `json:"done"`
			Changed int    `json:"changed"`
			Nodes   int    `json:"nodes"`
		}
		if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != 0 || doc.Job != "tick" || doc.Action != cmd ||
			!doc.Done || doc.Changed != 1 || doc.Nodes != 1 {
			t.Errorf("%s -json: %+v, %v\n%s", cmd, doc, err, o)
		}
	}

	o := exe(t, bin, nil, "-addrs", addr, "history", "-last", "100", "tick")
	var fast, paused []string
	for line := range strings.Lines(o.stdout) {
		switch f := strings.Fields(line); {
		case len(f) > 6 && f[2] == "replica-z":
			fast = f
		case len(f) > 6 && f[1] == "operator:" && f[2] == "paused":
			paused = f[1:] // the result is two words
		}
	}
	if o.code != 0 || len(fast) == 0 || fast[4] != "<1ms" || fast[5] != "<1ms" || len(paused) == 0 || paused[4] != "-" || paused[5] != "-" {
		t.Errorf("history: want the fast run's delay and duration as <1ms (%q), the pause's as - (%q):\n%s", fast, paused, o)
	}
	if !strings.Contains(o.stdout, " records of \"tick\" on 1/1 node\n") {
		t.Errorf("history: want its count of records on 1/1 node:\n%s", o)
	}
	if o := exe(t, bin, nil, "-addrs", addr, "status"); o.code != 0 || !strings.Contains(o.stdout, `1 job under prefix "redcron" on 1/1 node;`) {
		t.Errorf("status: want 1 job on 1/1 node:\n%s", o)
	}
	if o := exe(t, bin, nil, "-addrs", addr, "leaks"); o.code != 0 || !regexp.MustCompile(`(?m)^\d+ keys scanned on 1/1 node \(0 failed\) in \S+; 0 leaked; live owners: 1$`).MatchString(o.stdout) {
		t.Errorf("leaks: want its summary on 1/1 node:\n%s", o)
	}
}
