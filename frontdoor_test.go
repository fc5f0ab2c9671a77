package redcron_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/e2e"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestFrontDoor: two schedulers made by redcron.New from three fresh
// servers' addresses log, at start, that each node is warming up and when
// its vote counts; the metrics are registered on the registerer given.
// (TestFrontDoorRunsEachTickOnce and TestQuickstart check the runs.)
func TestFrontDoor(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	var logs e2e.SyncBuffer
	var scheds []*redcron.Scheduler
	for range 2 {
		reg := prometheus.NewRegistry()
		s, err := redcron.New(c.Addrs(),
			redcron.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
			redcron.WithMetrics(reg),
			redcron.WithSchedulerOptions(scheduler.WithSeconds()))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Add("tick", "* * * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }),
			scheduler.WithLockTTL(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if mfs, err := reg.Gather(); err != nil || len(mfs) == 0 {
			t.Fatalf("metrics registered: %d families, %v", len(mfs), err)
		}
		scheds = append(scheds, s)
	}
	for _, s := range scheds {
		go func() { _ = s.Run(context.Background()) }()
	}
	t.Cleanup(func() {
		for _, s := range scheds {
			_ = s.Shutdown(context.Background())
		}
	})
	// The fresh servers vote after the default max TTL of a minute: the
	// start says so, once per node and scheduler.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(logs.String(), "redis node warming_up") < 6 && time.Now().Before(deadline) {
		<-time.After(50 * time.Millisecond)
	}
	if got := logs.String(); strings.Count(got, "redis node warming_up") != 6 || !strings.Contains(got, "votes_from=") ||
		!strings.Contains(got, "WithTrustedNodes") {
		t.Fatalf("start logs, want one warming-up line per node and scheduler, with when it votes and the hint:\n%s", got)
	}
}

// TestFrontDoorRunsEachTickOnce: trusted fresh nodes vote at once; each
// tick runs on one of two schedulers, which heartbeat and take turns to
// scan for leaks (the front door wires the leak scanner).
func TestFrontDoorRunsEachTickOnce(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	orphan := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Owner: "replica-that-died"}.String()
	keys, err := engine.NewKeyspace("")
	if err != nil {
		t.Fatal(err)
	}
	report, err := keys.Lock("report")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Nodes() {
		if err := s.Client(t).Set(context.Background(), report.Lock, orphan, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	runs := map[int64]int{}
	var scans []leakscan.Event
	var scheds []*redcron.Scheduler
	for i := range 2 {
		s, err := redcron.New(c.Addrs(),
			redcron.WithLockOptions(mutex.WithTrustedNodes()),
			redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithInstanceID(fmt.Sprint("replica-", i))),
			redcron.WithLeakScanOptions(leakscan.WithInterval(time.Second), leakscan.WithObserver(func(e leakscan.Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Scan {
					scans = append(scans, e)
				}
			})))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Add("tick", "* * * * * *", scheduler.JobFunc(func(_ context.Context, run scheduler.RunInfo) error {
			mu.Lock()
			runs[run.Tick.Unix()]++
			mu.Unlock()
			return nil
		}), scheduler.WithLockTTL(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	from := time.Now()
	running := make(chan struct{}, len(scheds))
	for _, s := range scheds {
		go func() { running <- struct{}{}; _ = s.Run(context.Background()) }()
	}
	<-running
	<-time.After(100 * time.Millisecond)
	// A second Run is refused, and leaves the first its clients.
	if err := scheds[0].Run(context.Background()); err == nil {
		t.Error("a second Run was not refused")
	}
	<-time.After(5 * time.Second)
	for _, s := range scheds {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// From the second tick on: a Run that begins after the first second's
	// boundary rightly has its first tick a second later.
	for tick := from.Unix() + 2; tick < from.Unix()+5; tick++ {
		if runs[tick] != 1 {
			t.Errorf("tick %d ran %d times, want once", tick, runs[tick])
		}
	}
	// The replicas scanned for leaks, one at a time, and found the one
	// orphaned lock: their own are live, their heartbeats on the nodes.
	if len(scans) < 2 {
		t.Fatalf("%d leak scans in 5 s at one a second", len(scans))
	}
	for _, ev := range scans {
		if ev.Err != nil || ev.Leaks["orphaned"] != 1 || ev.Leaks["no_expiry"] != 0 {
			t.Errorf("scan: leaks %v, error %v; want the one orphaned lock", ev.Leaks, ev.Err)
		}
	}
}

// TestFrontDoorRefusedNode: a node that refuses the client (a password it
// does not pass) is logged as refused, with the cause, at start.
func TestFrontDoorRefusedNode(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 2)
	locked := redistest.Start(t, 1)
	if err := locked.Node(0).Client(t).ConfigSet(context.Background(), "requirepass", "secret").Err(); err != nil {
		t.Fatal(err)
	}
	got := startLogs(t, append(c.Addrs(), locked.Addrs()...), "redis node refused")
	if !strings.Contains(got, "redis node refused") || !strings.Contains(got, locked.Addrs()[0]) || !strings.Contains(got, "NOAUTH") {
		t.Fatalf("start logs, want the node without the password refused with NOAUTH:\n%s", got)
	}
}

// TestFrontDoorTypoNode: a node whose address does not resolve is logged
// as down, with the cause, at start.
func TestFrontDoorTypoNode(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 2)
	typo := "redis-nodee.invalid:6379"
	if got := startLogs(t, append(c.Addrs(), typo), "redis node down"); !strings.Contains(got, "redis node down") || !strings.Contains(got, typo) {
		t.Fatalf("start logs, want the node at %s down with its cause:\n%s", typo, got)
	}
}

// startLogs runs a Scheduler over addrs until its log says want, or for
// 10 s, and returns the log.
func startLogs(t *testing.T, addrs []string, want string) string {
	t.Helper()
	var logs e2e.SyncBuffer
	s, err := redcron.New(addrs, redcron.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), want) && time.Now().Before(deadline) {
		<-time.After(50 * time.Millisecond)
	}
	cancel()
	<-done
	return logs.String()
}

// TestFrontDoorBadInput: New names what is wrong, leaves the registerer
// as it was when it refuses an option, and a Scheduler that never ran
// closes its clients at Shutdown.
func TestFrontDoorBadInput(t *testing.T) {
	if _, err := redcron.New([]string{"a:1", ""}); !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), "address 1") {
		t.Errorf("New with an empty address = %v, want mutex.ErrInvalidOption naming it", err)
	}
	reg := prometheus.NewRegistry()
	if _, err := redcron.New([]string{"a:1"}, redcron.WithMetrics(reg), redcron.WithLockOptions(mutex.WithMaxTTL(-1))); !errors.Is(err, mutex.ErrInvalidOption) ||
		!errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("New with a bad lock option = %v, want redcron's and mutex's mutex.ErrInvalidOption", err)
	}
	s, err := redcron.New([]string{"a:1"}, redcron.WithMetrics(reg))
	if err != nil {
		t.Fatalf("New on the registerer a refused New was given: %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lockwire.Of(s.Locks()).Nodes[0].Client().Ping(context.Background()).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("a client of a Scheduler shut down before Run: %v, want closed", err)
	}
	for _, addr := range []string{"localhost", "10.0.0.7", "localhost:", "redis://localhost:6379", "::1"} {
		if _, err := redcron.New([]string{"a:1", addr}); !errors.Is(err, mutex.ErrInvalidOption) ||
			!strings.Contains(err.Error(), "address 1 "+strconv.Quote(addr)) {
			t.Errorf("New with address %q = %v, want mutex.ErrInvalidOption naming it", addr, err)
		}
	}
	unix := redcron.WithRedisOptions(func(o *redis.Options) { o.Network = "unix" })
	if s, err := redcron.New([]string{"/run/redis.sock"}, unix); err != nil {
		t.Errorf("New with a Unix socket: %v", err)
	} else {
		_ = s.Shutdown(context.Background())
	}
	if _, err := redcron.New(nil); !errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("New(nil) = %v, want mutex.ErrInvalidOption", err)
	}
	if _, err := redcron.NewWithClients([]redis.UniversalClient{nil}); !errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("NewWithClients(nil client) = %v, want mutex.ErrInvalidOption", err)
	}
	if _, err := redcron.New([]string{"a:1"}, redcron.WithMetrics(nil)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "WithMetrics") {
		t.Errorf("WithMetrics(nil) = %v, want mutex.ErrInvalidOption naming it", err)
	}
}

// TestFrontDoorAddChecksTheLocks: Add refuses, naming the job, a job whose
// lock the Redlock would refuse at every tick (a TTL above its max TTL, a
// catch-up window longer than it keeps a tick's mark), though the
// front door's Locker is the shard gate over the Redlock adapter.
func TestFrontDoorAddChecksTheLocks(t *testing.T) {
	s, err := redcron.New([]string{"a:1"}, redcron.WithLockOptions(mutex.WithMaxTTL(time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Shutdown(context.Background()) }()
	nop := func(context.Context, scheduler.RunInfo) error { return nil }
	if err := s.Add("long", "@hourly", nop, scheduler.WithLockTTL(2*time.Minute)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!strings.Contains(err.Error(), `"long"`) {
		t.Errorf("Add with a lock TTL above the max TTL = %v, want mutex.ErrInvalidOption naming the job", err)
	}
	if err := s.Add("monthly", "@monthly", nop, scheduler.WithCatchUp(31*24*time.Hour)); !errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("Add with a catch-up window past the state TTL = %v, want mutex.ErrInvalidOption", err)
	}
	if err := s.Add("fine", "@hourly", nop, scheduler.WithLockTTL(30*time.Second)); err != nil {
		t.Errorf("Add of a job the Redlock takes: %v", err)
	}
}

// TestFrontDoorRetry: a job that fails its first two tries succeeds on its
// third, within its tick, under the lease and fence of its first try, on
// real servers.
func TestFrontDoorRetry(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	var mu sync.Mutex
	var tries []scheduler.RunInfo
	finished := make(chan scheduler.Event, 10)
	s, err := redcron.New(c.Addrs(),
		redcron.WithLockOptions(mutex.WithTrustedNodes()),
		redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithObserver(func(e scheduler.Event) {
			if e.Kind == "run_finished" {
				finished <- e
			}
		})))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Add("flaky", "*/2 * * * * *", func(_ context.Context, run scheduler.RunInfo) error {
		mu.Lock()
		defer mu.Unlock()
		tries = append(tries, run)
		if run.Try < 3 {
			return errors.New("not yet")
		}
		return nil
	}, scheduler.WithLockTTL(2*time.Second), scheduler.WithRetry(3, 100*time.Millisecond), scheduler.WithMisfireGrace(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Run(context.Background()) }()
	defer s.Shutdown(context.Background())
	var ev scheduler.Event
	select {
	case ev = <-finished:
	case <-time.After(15 * time.Second):
		t.Fatal("no run finished within 15 s")
	}
	mu.Lock()
	defer mu.Unlock()
	if ev.Result != "success" || ev.Try != 3 || len(tries) != 3 {
		t.Fatalf("run finished %s after %d tries (%d seen), want success on the third", ev.Result, ev.Try, len(tries))
	}
	for i, run := range tries {
		if run.Try != i+1 || run.Fence != tries[0].Fence || run.Fence == 0 || !run.Tick.Equal(tries[0].Tick) {
			t.Errorf("try %d: %+v, want the first try's tick and fence", i+1, run)
		}
	}
	// Each try is in the run's record in the ledger.
	_ = s.Shutdown(context.Background()) // releases flushed
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("flaky")
	runs, _ := ledger.Read(context.Background(), e2e.NodesOf(t, c), lk, 10)
	var rec *ledger.Run
	for i := range runs {
		if runs[i].Fence == tries[0].Fence {
			rec = &runs[i]
		}
	}
	if rec == nil || rec.Result != "success" || rec.Try != 3 || rec.Error != "ok (after try 1: not yet; try 2: not yet)" {
		t.Errorf("the run's record: %+v; want success on try 3, with each try's error", rec)
	}
}
