package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// runReplica runs a front-door replica id over c with the jobs given
// (name, spec), reading six-field specs when seconds, until the test ends.
func runReplica(t *testing.T, c *redistest.Cluster, id string, seconds bool, jobs ...[2]string) {
	t.Helper()
	opts := []scheduler.Option{scheduler.WithInstanceID(id)}
	if seconds {
		opts = append(opts, scheduler.WithSeconds())
	}
	s, err := redcron.New(c.Addrs(), redcron.WithLockOptions(mutex.WithTrustedNodes()), redcron.WithSchedulerOptions(opts...))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := s.Add(j[0], j[1], func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
}

// awaitStatus polls the cluster's status until ok holds of it, or fails
// the test after 20 s.
func awaitStatus(t *testing.T, cl *cluster.Cluster, what string, ok func(*cluster.Status) bool) *cluster.Status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := cl.Status(context.Background(), 1, 0)
		if err == nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status with %s in 20 s: %+v, %v", what, st, err)
		}
		<-time.After(100 * time.Millisecond)
	}
}

// TestEverySpecHasItsNextTick: status shows the spec and next tick of
// every job the replicas publish, also of jobs that never ran: six-field
// specs of a replica with seconds, and CRON_TZ= and TZ= specs of five
// fields and of six, each tick in its own zone.
func TestEverySpecHasItsNextTick(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	cl := newCluster(t, c)
	runReplica(t, c, "with-seconds", true, [2]string{"every-5s", "*/5 * * * * *"},
		[2]string{"tokyo", "CRON_TZ=Asia/Tokyo 0 30 9 * * *"})
	runReplica(t, c, "minutes", false, [2]string{"new-york", "CRON_TZ=America/New_York 30 9 * * *"},
		[2]string{"paris", "TZ=Europe/Paris 0 9 * * 1"}, [2]string{"nightly", "0 3 * * *"})
	begin := time.Now()
	st := awaitStatus(t, cl, "five jobs with their specs", func(st *cluster.Status) bool {
		n := 0
		for _, j := range st.Jobs {
			if j.Spec != "" {
				n++
			}
		}
		return n == 5
	})
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	want := map[string]struct {
		within time.Duration
		ok     func(time.Time) bool
	}{
		"every-5s": {6 * time.Second, func(n time.Time) bool { return n.Second()%5 == 0 && n.Nanosecond() == 0 }},
		"tokyo": {24 * time.Hour, func(n time.Time) bool {
			n = n.In(zone("Asia/Tokyo"))
			return n.Hour() == 9 && n.Minute() == 30 && n.Second() == 0
		}},
		"new-york": {25 * time.Hour, func(n time.Time) bool {
			n = n.In(zone("America/New_York"))
			return n.Hour() == 9 && n.Minute() == 30 && n.Second() == 0
		}},
		"paris": {8 * 24 * time.Hour, func(n time.Time) bool {
			n = n.In(zone("Europe/Paris"))
			return n.Weekday() == time.Monday && n.Hour() == 9 && n.Minute() == 0
		}},
		"nightly": {24 * time.Hour, func(n time.Time) bool { n = n.UTC(); return n.Hour() == 3 && n.Minute() == 0 }},
	}
	for _, j := range st.Jobs {
		w, ok := want[j.Name]
		switch {
		case !ok:
			t.Errorf("job %q: not one of the replicas'", j.Name)
		case j.Next.IsZero() || !j.Next.After(begin) || j.Next.Sub(begin) > w.within || !w.ok(j.Next):
			t.Errorf("job %s (%q, zone %q): next tick %v; want its next tick, within %v", j.Name, j.Spec, j.Zone, j.Next, w.within)
		case j.Publishers != 1 || j.Phantom:
			t.Errorf("job %s: %d publishers, phantom %v; want its replica", j.Name, j.Publishers, j.Phantom)
		}
	}
}
