package fleet

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/internal/shard"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// TestMain silences go-redis's logging of the failed dials that the
// tests' killed servers cause on purpose.
func TestMain(m *testing.M) {
	redistest.QuietClients()
	os.Exit(m.Run())
}

// newReplica wires a Replica over c as redcron.New does, as replica id,
// heartbeating every second; each heartbeat's error (nil: it reached a
// quorum) is sent on beats, dropped when it is full.
// It returns the Config too.
func newReplica(t *testing.T, c *redistest.Cluster, id string, beats chan<- error) (*Replica, Config) {
	t.Helper()
	var nodes []*store.Node
	for _, srv := range c.Nodes() {
		n, err := store.NewNode(srv.Addr(), srv.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	hook := &Hook{}
	lockOpts := []mutex.Option{mutex.WithTrustedNodes(), mutex.WithOwnerCheck(hook.Check)}
	locks, err := mutex.New(nodes, lockOpts...)
	if err != nil {
		t.Fatal(err)
	}
	gate := shard.NewGate(scheduler.NewRedlockLocker(locks))
	s, err := scheduler.New(gate, scheduler.WithInstanceID(id), scheduler.WithObserver(hook.Observe))
	if err != nil {
		t.Fatal(err)
	}
	observe := leakscan.WithObserver(func(e leakscan.Event) {
		if !e.Scan {
			select {
			case beats <- e.Err:
			default:
			}
		}
	})
	cfg := Config{Locks: locks, LockOptions: lockOpts, Gate: gate, Scheduler: s, Hook: hook,
		ScanOptions: []leakscan.Option{leakscan.WithHeartbeat(time.Second, 2*time.Second), leakscan.WithInterval(0), observe},
		Logger:      slog.New(slog.DiscardHandler)}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, cfg
}

// TestHookBeforeNew: a Hook not yet tied to a replica lets every owner
// through and drops the skips, and New refuses a Hook already tied.
func TestHookBeforeNew(t *testing.T) {
	var h Hook
	if err := h.Check("replica-a", false); err != nil {
		t.Errorf("an untied hook refused an owner: %v", err)
	}
	h.Observe(scheduler.Event{Kind: "skipped", Job: "report", Tick: time.Now(), Skip: "no_quorum"})

	c := redistest.Start(t, 1)
	_, cfg := newReplica(t, c, "replica-a", make(chan error, 1))
	if _, err := New(cfg); err == nil {
		t.Error("New took a hook already tied to another replica")
	}
}

// TestHookChecksTheHeartbeat: the hook New ties is the replica's owner
// check: once its heartbeats fail (every node down), it refuses the
// replica's own leases, and only them.
func TestHookChecksTheHeartbeat(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	beats := make(chan error, 16)
	r, cfg := newReplica(t, c, "replica-a", beats)
	hook := cfg.Hook
	for _, srv := range c.Nodes() {
		srv.Kill()
	}
	err := r.Run(context.Background(), func(context.Context) error {
		deadline := time.After(10 * time.Second)
		for {
			select {
			case err := <-beats:
				if err != nil {
					return nil
				}
			case <-deadline:
				t.Error("no failed heartbeat within 10 s with every node down")
				return nil
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := hook.Check("replica-a", false); err == nil {
		t.Error("the hook let the replica claim after its heartbeats failed")
	}
	if err := hook.Check("replica-b", false); err != nil {
		t.Errorf("the hook refused another owner: %v", err)
	}
}

// TestRunPublishesAndSaysGoodbye: while the loop runs, the replica's
// heartbeat carries the skips the scheduler reported through the hook (but
// held ones: another replica claimed the tick) and the digest of its job
// table, whose table is published under it on every node; Goodbye removes
// the heartbeat from every node and leaves the table.
func TestRunPublishesAndSaysGoodbye(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	beats := make(chan error, 16)
	r, cfg := newReplica(t, c, "replica-a", beats)
	hook, s := cfg.Hook, cfg.Scheduler
	rounds := make(chan []error, 16)
	r.SetJobTablePeriod(100*time.Millisecond, func(_ time.Time, errs []error) {
		select {
		case rounds <- errs:
		default:
		}
	})
	if err := s.Add("report", "0 3 * * *", func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
		t.Fatal(err)
	}
	r.Changed()
	tick := time.Now().Truncate(time.Second).Add(-time.Minute) // within the heartbeat's lookback
	hook.Observe(scheduler.Event{Kind: "skipped", Job: "report", Tick: tick, Skip: "no_quorum"})
	hook.Observe(scheduler.Event{Kind: "skipped", Job: "report", Tick: tick.Add(time.Second), Skip: "held"})

	// The loop waits for a heartbeat and a job-table round that reached
	// every node.
	err := r.Run(context.Background(), func(context.Context) error {
		deadline := time.After(10 * time.Second)
		for beat, table := false, false; !beat || !table; {
			select {
			case err := <-beats:
				beat = beat || err == nil
			case errs := <-rounds:
				table = table || !slices.ContainsFunc(errs, func(err error) bool { return err != nil })
			case <-deadline:
				t.Errorf("after 10 s: a heartbeat %v, a job table on every node %v", beat, table)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	heartbeat := "redcron:hb:replica-a"
	v, err := c.Node(0).Client(t).Get(context.Background(), heartbeat).Result()
	if err != nil {
		t.Fatalf("the heartbeat on node 0: %v", err)
	}
	beat := engine.ParseBeat(v)
	want := []engine.BeatSkip{{Job: "report", Tick: tick.UnixMilli(), Reason: "no_quorum"}}
	if !slices.Equal(beat.Skips, want) {
		t.Errorf("heartbeat's skips %+v, want %+v", beat.Skips, want)
	}
	if digest, specs := r.table.jobs(); len(specs) != 1 || beat.JobTable != digest {
		t.Errorf("heartbeat's digest %q; want %q, of the table %v of one job", beat.JobTable, digest, specs)
	}
	if on := c.KeyOn(t, "redcron:jobs:"+beat.JobTable); slices.Contains(on, false) {
		t.Errorf("the job table under the heartbeat's digest on the nodes: %v, want on every node", on)
	}
	r.Goodbye(context.Background())
	if on := c.KeyOn(t, heartbeat); slices.Contains(on, true) {
		t.Errorf("after Goodbye, the heartbeat on the nodes: %v", on)
	}
	if on := c.KeyOn(t, "redcron:jobs:"+beat.JobTable); slices.Contains(on, false) {
		t.Errorf("after Goodbye, the job table on the nodes: %v, want on every node", on)
	}
}

// TestPendingTriggers: a trigger request is pending when the same ticket
// is on a majority of the nodes, and not when it is on a minority or the
// nodes disagree on it.
func TestPendingTriggers(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	keys, _ := engine.NewKeyspace("")
	var nodes []*engine.Node
	for _, srv := range c.Nodes() {
		n, err := engine.NewNode(srv.Addr(), srv.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	place := func(job, ticket string, on ...int) {
		t.Helper()
		lk, err := keys.Lock(job)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range on {
			if err := nodes[i].PlaceTrigger(context.Background(), keys, lk, ticket, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	}
	place("majority", "ops|1|a", 1, 2)
	place("minority", "ops|2|a", 0)
	place("split", "ops|3|a", 0)
	place("split", "ops|3|b", 1)
	got := pendingTriggers(context.Background(), nodes, keys)
	if len(got) != 1 || got["majority"] != "ops|1|a" {
		t.Errorf("pending %v, want only majority's ops|1|a", got)
	}
}
