package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// tagRuns records the ticks each job ran, over replicas.
type tagRuns struct {
	mu   sync.Mutex
	runs map[string][]time.Time
}

func (r *tagRuns) after(job string, t time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, tick := range r.runs[job] {
		if tick.After(t) {
			n++
		}
	}
	return n
}

// startTagged starts replica id over c with the jobs of tags (name → its
// tags), every second, recording into r.
func startTagged(t *testing.T, c *redistest.Cluster, id string, tags map[string][]string, r *tagRuns) {
	t.Helper()
	s, err := redcron.New(c.Addrs(), redcron.WithLockOptions(mutex.WithTrustedNodes()),
		redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithInstanceID(id)))
	if err != nil {
		t.Fatal(err)
	}
	for name, tt := range tags {
		err := s.Add(name, "* * * * * *", func(_ context.Context, run scheduler.RunInfo) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if !run.Tick.IsZero() {
				r.runs[name] = append(r.runs[name], run.Tick)
			}
			return nil
		}, scheduler.WithTags(tt...), scheduler.WithLockTTL(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
}

// TestTagCommands: -tag selects the jobs the replicas publish with a tag:
// status -tag lists only them, with their tags; pause -tag pauses each of
// them, and no other job, on every replica, until resume -tag; history
// -tag prints each one's history; a tag no replica publishes, a job name
// with -tag, and -tag on the leak scan are refused with exit 2.
func TestTagCommands(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	r := &tagRuns{runs: map[string][]time.Time{}}
	tags := map[string][]string{"report-eu": {"eu", "reports"}, "report-us": {"reports"}, "cleanup": {"ops"}}
	for _, id := range []string{"replica-a", "replica-b"} {
		startTagged(t, c, id, tags, r)
	}
	waitUntil(t, 15*time.Second, "runs of every job", func() bool {
		return r.after("report-eu", time.Time{}) > 0 && r.after("report-us", time.Time{}) > 0 && r.after("cleanup", time.Time{}) > 0
	})

	o := exe(t, bin, nil, "-addrs", addrs, "-json", "-tag", "reports", "status")
	var doc struct {
		Jobs []struct {
			Name string   `json:"name"`
			Tags []string `json:"tags"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != 0 || len(doc.Jobs) != 2 ||
		doc.Jobs[0].Name != "report-eu" || !slices.Equal(doc.Jobs[0].Tags, []string{"eu", "reports"}) || doc.Jobs[1].Name != "report-us" {
		t.Errorf("status -tag reports -json: %+v, %v: %s", doc, err, o)
	}
	if o := exe(t, bin, nil, "-addrs", addrs, "status"); o.code != 0 || !strings.Contains(o.stdout, "eu,reports") || !strings.Contains(o.stdout, "TAGS") {
		t.Errorf("status shows no tags: %s", o)
	}

	o = exe(t, bin, nil, "-addrs", addrs, "pause", "-tag", "reports")
	if o.code != 0 || !strings.Contains(o.stdout, "paused report-eu on 3 of 3 nodes\npaused report-us on 3 of 3 nodes\n") || strings.Contains(o.stdout, "cleanup") {
		t.Fatalf("pause -tag reports: %s", o)
	}
	from := time.Now().Add(time.Second) // a tick claimed before the pause may still run
	waitUntil(t, 15*time.Second, "runs of cleanup while reports are paused", func() bool { return r.after("cleanup", from.Add(2*time.Second)) >= 1 })
	for _, job := range []string{"report-eu", "report-us"} {
		if n := r.after(job, from); n > 0 {
			t.Errorf("%s ran %d times while its tag was paused", job, n)
		}
	}
	if o := exe(t, bin, nil, "-addrs", addrs, "-tag", "reports", "history"); o.code != 0 ||
		!strings.Contains(o.stdout, `of "report-eu"`) || !strings.Contains(o.stdout, `of "report-us"`) || strings.Count(o.stdout, "operator: paused") != 2 {
		t.Errorf("history -tag reports: %s", o)
	}
	if o := exe(t, bin, nil, "-addrs", addrs, "resume", "-tag", "reports"); o.code != 0 || !strings.Contains(o.stdout, "resumed report-us on 3 of 3 nodes") {
		t.Fatalf("resume -tag reports: %s", o)
	}
	resumed := time.Now()
	waitUntil(t, 15*time.Second, "runs after the resume", func() bool { return r.after("report-eu", resumed) > 0 && r.after("report-us", resumed) > 0 })

	for _, args := range [][]string{{"-tag", "nope", "pause"}, {"-tag", "reports", "pause", "report-eu"}, {"-tag", "reports"}, {"-tag", "", "status"}} {
		if o := exe(t, bin, nil, append([]string{"-addrs", addrs}, args...)...); o.code != 2 || o.stderr == "" {
			t.Errorf("%v: %s", args, o)
		}
	}
	if o := exe(t, bin, nil, "-addrs", addrs, "-tag", "nope", "pause"); !strings.Contains(o.stderr, fmt.Sprintf("publishes a job tagged %q", "nope")) {
		t.Errorf("pause -tag nope: %s", o)
	}
}
