package admin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// tagLog keeps the runs started and the ticks skipped of a fleet's
// replicas, with when each was reported.
type tagLog struct {
	mu     sync.Mutex
	events []scheduler.Event
	at     []time.Time
}

func (l *tagLog) observe(ev scheduler.Event) {
	if ev.Kind != "run_started" && ev.Kind != "skipped" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events, l.at = append(l.events, ev), append(l.at, time.Now())
}

// since returns the events of kind of job reported after from, whose
// tick is after tick.
func (l *tagLog) since(from, tick time.Time, kind scheduler.Kind, job string) []scheduler.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []scheduler.Event
	for i, ev := range l.events {
		if ev.Kind == kind && ev.Job == job && l.at[i].After(from) && ev.Tick.After(tick) {
			out = append(out, ev)
		}
	}
	return out
}

// tagFleet starts three replicas over c, each with the jobs of tags
// (name → its tags), every second, reporting to log.
func tagFleet(t *testing.T, c *redistest.Cluster, tags map[string][]string, log *tagLog) {
	t.Helper()
	for i := range 3 {
		s, err := redcron.New(c.Addrs(), redcron.WithLockOptions(mutex.WithTrustedNodes()),
			redcron.WithSchedulerOptions(scheduler.WithInstanceID(fmt.Sprintf("replica-%d", i)), scheduler.WithSeconds(),
				scheduler.WithObserver(log.observe)))
		if err != nil {
			t.Fatal(err)
		}
		for name, tt := range tags {
			if err := s.Add(name, "* * * * * *", func(context.Context, scheduler.RunInfo) error { return nil },
				scheduler.WithTags(tt...)); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Run(context.Background()) }()
		t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
	}
}

// awaitRuns waits, up to 20 s, until each of jobs has a run reported
// after from, of a tick after tick; it fails the test otherwise.
func awaitRuns(t *testing.T, log *tagLog, from, tick time.Time, jobs ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, job := range jobs {
		for len(log.since(from, tick, "run_started", job)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not run within 20 s", job)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestPauseTag: pausing the jobs a tag selects (Client.Tagged), over three
// replicas on three real nodes, stops exactly those jobs on every replica
// (each tick of theirs is skipped, reason paused, by the replica asking
// for it), while the others, one of them with a tag that only starts
// alike, run on; resuming them starts them again. The tags are those the
// replicas publish in their job tables, which Status shows.
func TestPauseTag(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	a, _ := clientOf(t, c, admin.Options{})
	log := &tagLog{}
	tagFleet(t, c, map[string][]string{
		"report-eu": {"eu", "reports"}, "report-us": {"reports"}, "reporting-db": {"report"}, "cleanup": nil,
	}, log)
	ctx := context.Background()
	awaitRuns(t, log, time.Time{}, time.Time{}, "report-eu", "report-us", "reporting-db", "cleanup")

	st, err := a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range st.Jobs {
		if want := map[string][]string{"report-eu": {"eu", "reports"}, "report-us": {"reports"}, "reporting-db": {"report"}}[j.Name]; !slices.Equal(j.Tags, want) {
			t.Errorf("Status: %s tagged %q, want %q", j.Name, j.Tags, want)
		}
	}
	tagged, err := a.Tagged(ctx, "reports")
	if want := []string{"report-eu", "report-us"}; err != nil || !slices.Equal(tagged, want) {
		t.Fatalf("Tagged(reports) = %q, %v; want %q", tagged, err, want)
	}
	for _, job := range tagged {
		if _, err := a.Pause(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	paused := time.Now()
	// A tick claimed before the pause may still start: the window starts
	// a second after it.
	from := paused.Add(time.Second)
	awaitRuns(t, log, from, from, "reporting-db", "cleanup")
	time.Sleep(3 * time.Second) // the window: three ticks of each job
	for _, job := range tagged {
		if runs := log.since(from, from, "run_started", job); len(runs) > 0 {
			t.Errorf("%s ran %d times while its tag was paused, first on %s at %v", job, len(runs), runs[0].Instance, runs[0].Tick)
		}
		// The replica holding the job's shard asks for its ticks, refused
		// as paused; the others see them held.
		pausedTicks := map[time.Time]bool{}
		for _, ev := range log.since(from, from, "skipped", job) {
			switch ev.Skip {
			case "paused":
				pausedTicks[ev.Tick] = true
			case "held":
			default:
				t.Errorf("%s: tick %v skipped on %s for %s, want paused (or held by the replica asking)", job, ev.Tick, ev.Instance, ev.Skip)
			}
		}
		if len(pausedTicks) < 2 {
			t.Errorf("%s: %d ticks skipped as paused in the window, want 2 or more", job, len(pausedTicks))
		}
	}
	for _, job := range []string{"reporting-db", "cleanup"} {
		if runs := log.since(from, from, "run_started", job); len(runs) < 3 {
			t.Errorf("%s ran %d times in the window, want 3 or more: pausing a tag it does not carry stopped it", job, len(runs))
		}
	}

	for _, job := range tagged {
		if _, err := a.Resume(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	resumed := time.Now()
	awaitRuns(t, log, resumed, resumed, tagged...)
}

// TestTaggedErrors: Tagged refuses an empty tag, and says no job carries a
// tag no live replica publishes, matching scheduler.ErrUnknownJob.
func TestTaggedErrors(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	a, _ := clientOf(t, c, admin.Options{})
	log := &tagLog{}
	tagFleet(t, c, map[string][]string{"report": {"reports"}}, log)
	awaitRuns(t, log, time.Time{}, time.Time{}, "report")
	ctx := context.Background()
	if _, err := a.Tagged(ctx, ""); !errors.Is(err, scheduler.ErrInvalidJob) || !strings.Contains(err.Error(), "empty tag") {
		t.Errorf("Tagged(\"\") = %v, want an empty tag error", err)
	}
	_, err := a.Tagged(ctx, "report")
	if !errors.Is(err, scheduler.ErrUnknownJob) || !strings.Contains(err.Error(), `no live replica (of 3) publishes a job tagged "report"`) {
		t.Errorf("Tagged(report) = %v, want no job tagged, matching scheduler.ErrUnknownJob", err)
	}
}
