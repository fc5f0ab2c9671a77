package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestStatusOnceDone: once a one-time job ("@at t") ran, status says it
// is done: "done" in -json, "done (ran once)" for its next tick in the
// table; a recurring job is not.
func TestStatusOnceDone(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	s, err := redcron.New(c.Addrs(), redcron.WithLockOptions(mutex.WithTrustedNodes()),
		redcron.WithSchedulerOptions(scheduler.WithInstanceID("replica-a"), scheduler.WithSeconds()))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	ran := make(chan struct{}, 1)
	if err := s.Add("launch", "@at "+at.UTC().Format(time.RFC3339), func(context.Context, scheduler.RunInfo) error {
		ran <- struct{}{}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("cleanup", "@hourly", func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("launch did not run")
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		o := exe(t, bin, nil, "-addrs", addrs, "-json", "status")
		var doc struct {
			Jobs []struct {
				Name string `json:"name"`
				Done bool   `json:"done"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != 0 {
			t.Fatalf("status -json: %v\n%s", err, o)
		}
		got := map[string]bool{}
		for _, j := range doc.Jobs {
			got[j.Name] = j.Done
		}
		if got["launch"] {
			if got["cleanup"] {
				t.Errorf("status -json: a recurring job is done:\n%s", o)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("launch ran, and status -json does not say it is done:\n%s", o)
		}
		time.Sleep(100 * time.Millisecond)
	}
	o := exe(t, bin, nil, "-addrs", addrs, "status")
	for _, line := range strings.Split(o.stdout, "\n") {
		if strings.HasPrefix(line, "launch ") {
			if !strings.Contains(line, "done (ran once)") {
				t.Errorf("status: launch's line does not say it is done: %q", line)
			}
			return
		}
	}
	t.Errorf("status lists no launch:\n%s", o)
}
