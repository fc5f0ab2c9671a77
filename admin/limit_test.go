package admin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestStatusShowsLimit: a replica whose jobs share a cluster limit
// (scheduler.WithClusterLimit) publishes it with them, and Status shows
// each job's limit and how many of its permits hold now (one taken by
// another process's lock, then none once it is released); the permits'
// own locks are not listed as jobs.
func TestStatusShowsLimit(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	a, _ := clientOf(t, c, admin.Options{})
	s := frontDoor(t, c, func(s *redcron.Scheduler) error {
		for _, name := range []string{"report-eu", "report-us"} {
			if err := s.Add(name, "@hourly", func(context.Context, scheduler.RunInfo) error { return nil },
				scheduler.WithClusterLimit("reports", 2)); err != nil {
				return err
			}
		}
		return nil
	})

	ctx := context.Background()
	permit, err := s.Locks().TryLock(ctx, "reports", time.Minute, mutex.Permits(2))
	if err != nil {
		t.Fatal(err)
	}
	check := func(held int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, err := a.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			ok := 0
			for _, j := range st.Jobs {
				if strings.HasPrefix(j.Name, "reports#") {
					t.Fatalf("Status lists the permit %q as a job", j.Name)
				}
				if strings.HasPrefix(j.Name, "report-") {
					got = append(got, j.Name)
					if j.Limit == "reports" && j.Permits == 2 && j.PermitsHeld == held {
						ok++
					}
				}
			}
			if ok == 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Status of %q: want both with limit reports, 2 permits, %d held: %+v", got, held, st.Jobs)
			}
			time.Sleep(100 * time.Millisecond) // the replica publishes its job table on its own schedule
		}
	}
	check(1)
	if err := permit.Release(ctx); err != nil {
		t.Fatal(err)
	}
	check(0)
}
