package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/scheduler"
)

// TestStatusShowsOnceDone: a one-time job ("@at t") shows its tick as
// next until it runs, and done (no next tick) once its ledger holds the
// run; a recurring job is never done.
func TestStatusShowsOnceDone(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	a, _ := clientOf(t, c, admin.Options{})
	at := time.Now().Add(4 * time.Second).Truncate(time.Second)
	ran := make(chan struct{}, 1)
	frontDoor(t, c, func(s *redcron.Scheduler) error {
		if err := s.Add("launch", "@at "+at.UTC().Format(time.RFC3339), func(context.Context, scheduler.RunInfo) error {
			ran <- struct{}{}
			return nil
		}); err != nil {
			return err
		}
		return s.Add("hourly", "@hourly", func(context.Context, scheduler.RunInfo) error { return nil })
	})

	ctx := context.Background()
	jobs := func() map[string]admin.Job {
		t.Helper()
		st, err := a.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]admin.Job{}
		for _, j := range st.Jobs {
			out[j.Name] = j
		}
		return out
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		j, ok := jobs()["launch"]
		if ok && j.Next.Equal(at) {
			if j.Done {
				t.Fatalf("before its tick, launch is done: %+v", j)
			}
			break
		}
		if j.Done { // on a slow machine the first status may come after the tick
			t.Logf("launch ran before a status showed its next tick")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("launch not published with its tick %v as next: %+v", at, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("launch did not run")
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		js := jobs()
		if j := js["launch"]; j.Done {
			if !j.Next.IsZero() {
				t.Errorf("launch done, with a next tick %v", j.Next)
			}
			if js["hourly"].Done {
				t.Errorf("a recurring job is done: %+v", js["hourly"])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("launch ran, and Status does not show it done: %+v", js["launch"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
