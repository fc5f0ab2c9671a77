package admin_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/redisproc"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// masters are the addresses of the redis-servers TestMain starts for the
// examples, on which a replica with the job "nightly-report" runs.
var masters []string

// TestMain starts three redis-servers and a replica, replica-1, with the
// job "nightly-report" (yearly), for the examples; it waits until the
// replica publishes the job, runs the tests, and stops them all.
func TestMain(m *testing.M) {
	redistest.QuietClients()
	stop, err := startFleet()
	if err != nil {
		fmt.Fprintln(os.Stderr, "admin_test:", err)
		stop()
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startFleet starts the servers and the replica, and returns what stops
// them (also after an error).
func startFleet() (stop func(), err error) {
	var servers []*redisproc.Server
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	bin, err := redisproc.BinPath()
	if err != nil {
		return stop, fmt.Errorf("%w (install it: scripts/test does)", err)
	}
	for range 3 {
		dir, err := os.MkdirTemp("", "admin-example-")
		if err != nil {
			return stop, err
		}
		stops = append(stops, func() { _ = os.RemoveAll(dir) })
		s, err := redisproc.Start(redisproc.Config{Bin: bin, Dir: dir})
		if err != nil {
			return stop, err
		}
		servers = append(servers, s)
		stops = append(stops, s.Kill)
		masters = append(masters, s.Addr())
	}
	s, err := redcron.New(masters, redcron.WithLockOptions(mutex.WithTrustedNodes()),
		redcron.WithSchedulerOptions(scheduler.WithInstanceID("replica-1")))
	if err != nil {
		return stop, err
	}
	if err := s.Add("nightly-report", "@yearly", func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
		return stop, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	stops = append(stops, func() {
		_ = s.Shutdown(context.Background())
		<-done
	})
	return stop, awaitPublished(servers, "nightly-report")
}

// awaitPublished waits until a live replica publishes job, for 30 s.
func awaitPublished(servers []*redisproc.Server, job string) error {
	var nodes []*store.Node
	for _, s := range servers {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		defer c.Close()
		n, err := store.NewNode(s.Addr(), c)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	c, err := admin.New(nodes, admin.Options{})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.Status(ctx)
		cancel()
		if err == nil {
			for _, j := range st.Jobs {
				if j.Name == job && j.Publishers > 0 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no replica published %s in 30 s (%v)", job, err)
		}
		<-time.After(100 * time.Millisecond)
	}
}
