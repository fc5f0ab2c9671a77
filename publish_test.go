package redcron_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/e2e"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/scheduler"
)

// round is one publishing round of a replica: when it started, and each
// node's error, by node address.
type round struct {
	start time.Time
	errs  map[string]error
}

// publisher is a front door over c as replica id that heartbeats every
// second and publishes its job table every tableEvery; each heartbeat and
// each job-table round is sent on beats and tables.
type publisher struct {
	*redcron.Scheduler
	beats, tables chan round
}

func newPublisher(t *testing.T, c *redistest.Cluster, id string, tableEvery time.Duration) *publisher {
	t.Helper()
	p := &publisher{beats: make(chan round, 1024), tables: make(chan round, 1024)}
	send := func(ch chan round, r round) {
		select {
		case ch <- r:
		default: // the test reads them all; a full channel only drops rounds it does not wait for
		}
	}
	s, err := redcron.New(c.Addrs(), redcron.WithSchedulerOptions(scheduler.WithInstanceID(id)),
		redcron.WithLeakScanOptions(leakscan.WithHeartbeat(time.Second, 2*time.Second), leakscan.WithInterval(0),
			leakscan.WithObserver(func(e leakscan.Event) {
				if !e.Scan {
					send(p.beats, round{time.Now().Add(-e.Duration), e.Nodes})
				}
			})))
	if err != nil {
		t.Fatal(err)
	}
	addrs := c.Addrs()
	redcron.SetJobTablePeriod(s, tableEvery, func(start time.Time, errs []error) {
		r := round{start, map[string]error{}}
		for i, err := range errs {
			r.errs[addrs[i]] = err
		}
		send(p.tables, r)
	})
	p.Scheduler = s
	return p
}

// after waits for the first round on ch that started after since, and
// returns its error for the node at addr.
func after(t *testing.T, what string, ch <-chan round, since time.Time, addr string) error {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case r := <-ch:
			if r.start.After(since) {
				return r.errs[addr]
			}
		case <-deadline:
			t.Fatalf("no %s round within 20 s", what)
		}
	}
}

// publishedTable reads the job table at key on the node at i: its hash,
// as it holds it.
func publishedTable(t *testing.T, c *redistest.Cluster, i int, key string) map[string]string {
	t.Helper()
	raw, err := c.Node(i).Client(t).HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("HGETALL %s on node %d: %v", key, i, err)
	}
	return raw
}

// heartbeatOn reads the heartbeat of id on the node at i; zero if none.
func heartbeatOn(t *testing.T, c *redistest.Cluster, i int, id string) engine.Beat {
	t.Helper()
	v, err := c.Node(i).Client(t).Get(context.Background(), "redcron:hb:"+id).Result()
	if err != nil {
		return engine.Beat{}
	}
	return engine.ParseBeat(v)
}

// TestPublishedStateComesBack: a node restarted empty under a running
// replica, and a node whose copies of the replica's keys expired (deleted
// here, as when the replica was paused or cut off past their TTL), have
// the replica's job table and heartbeat back after the first publishing
// round that starts after the loss, though the table did not change.
func TestPublishedStateComesBack(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	p := newPublisher(t, c, "replica-a", 200*time.Millisecond)
	for _, name := range []string{"report", "cleanup"} {
		if err := p.Add(name, "@hourly", func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	e2e.Run(t, p.Scheduler)
	for i, addr := range c.Addrs() {
		if err := after(t, "job table", p.tables, start, addr); err != nil {
			t.Fatalf("first job-table round on node %d: %v", i, err)
		}
	}
	digest := heartbeatOn(t, c, 0, "replica-a").JobTable
	key := "redcron:jobs:" + digest
	want := publishedTable(t, c, 0, key)
	if digest == "" || len(want) != 2 {
		t.Fatalf("before the loss: digest %q, table %v", digest, want)
	}

	lose := map[string]func(i int){
		"restarted empty": func(i int) { c.Node(i).Restart() },
		"keys expired": func(i int) {
			if err := c.Node(i).Client(t).Del(context.Background(), key, "redcron:hb:replica-a").Err(); err != nil {
				t.Fatal(err)
			}
		},
	}
	for i, how := range []string{"restarted empty", "keys expired"} {
		lose[how](i)
		lost := time.Now()
		if got := publishedTable(t, c, i, key); len(got) != 0 {
			t.Fatalf("%s: node %d still has the table %v", how, i, got)
		}
		addr := c.Addrs()[i]
		if err := after(t, "job table", p.tables, lost, addr); err != nil {
			t.Errorf("%s: the first job-table round after the loss failed on node %d: %v", how, i, err)
		}
		if got := publishedTable(t, c, i, key); !maps.Equal(got, want) {
			t.Errorf("%s: after the first job-table round, node %d has the table %v, want %v", how, i, got, want)
		}
		if err := after(t, "heartbeat", p.beats, lost, addr); err != nil {
			t.Errorf("%s: the first heartbeat after the loss failed on node %d: %v", how, i, err)
		}
		if b := heartbeatOn(t, c, i, "replica-a"); b.Instance != "replica-a" || b.JobTable != digest {
			t.Errorf("%s: after the first heartbeat, node %d has the heartbeat %+v", how, i, b)
		}
	}
}

// TestJobTableUnderItsDigest: the table a replica publishes under a
// digest is the table of that digest: the digest of the hash as a node
// holds it (engine.JobTableDigest) is the one in its key and in the
// heartbeat, for specs spaced and zoned as users write them, and still
// while jobs are added between rounds.
func TestJobTableUnderItsDigest(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	p := newPublisher(t, c, "replica-a", 20*time.Millisecond)
	nop := scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })
	if err := p.Add("report", "  0  3 *  * * ", nop, scheduler.WithRetry(2, time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := p.Add("zoned", "CRON_TZ=Europe/Paris 30 2 * * *", nop); err != nil {
		t.Fatal(err)
	}
	e2e.Run(t, p.Scheduler)
	for k := range 10 { // jobs added while rounds go on
		if err := p.Add("job-"+string(rune('a'+k)), "@daily", nop); err != nil {
			t.Fatal(err)
		}
		after(t, "job table", p.tables, time.Now(), c.Addrs()[0])
	}
	added := time.Now()
	for _, addr := range c.Addrs() {
		if err := after(t, "job table", p.tables, added, addr); err != nil {
			t.Fatalf("job-table round on %s: %v", addr, err)
		}
	}

	digest := p.table(t, c)
	for i := range c.Nodes() {
		client := c.Node(i).Client(t)
		keys, err := client.Keys(context.Background(), "redcron:jobs:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, key := range keys {
			d := strings.TrimPrefix(key, "redcron:jobs:")
			table := publishedTable(t, c, i, key)
			if got := engine.JobTableDigest(table); got != d {
				t.Errorf("node %d: the table under %q has the digest %q: %v", i, d, got, table)
			}
			found = found || d == digest
		}
		if !found {
			t.Errorf("node %d has no table under the heartbeat's digest %q (keys %v)", i, digest, keys)
		}
	}
	table := publishedTable(t, c, 0, "redcron:jobs:"+digest)
	if len(table) != 12 || !strings.Contains(table["report"], `"spec":"0 3 * * *"`) ||
		!strings.Contains(table["zoned"], `"zone":"Europe/Paris"`) {
		t.Errorf("table under %q: %v", digest, table)
	}
}

// table returns the digest the replica's heartbeat on the first node
// carries.
func (p *publisher) table(t *testing.T, c *redistest.Cluster) string {
	t.Helper()
	since := time.Now()
	if err := after(t, "heartbeat", p.beats, since, c.Addrs()[0]); err != nil {
		t.Fatal(err)
	}
	return heartbeatOn(t, c, 0, "replica-a").JobTable
}

// TestCleanStopSaysGoodbye: a replica stopped by Shutdown, and one whose
// Run ends with its context, remove their heartbeats from every node
// before Shutdown, or Run, returns: the fleet's view (internal/cluster, as
// status and the page read it) stops listing them at once. The job table
// they shared with a replica still running stays on the nodes.
func TestCleanStopSaysGoodbye(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	keys, _ := engine.NewKeyspace("")
	cl := &cluster.Cluster{Keys: keys}
	for _, srv := range c.Nodes() {
		n, err := engine.NewNode(srv.Addr(), srv.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		cl.Nodes = append(cl.Nodes, n)
	}
	start := time.Now()
	stop := map[string]func(){}
	reps := map[string]*publisher{}
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		p := newPublisher(t, c, id, 200*time.Millisecond)
		if err := p.Add("report", "@hourly", func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Run(ctx) }()
		stop[id] = func() { cancel(); <-done }
		t.Cleanup(stop[id])
		reps[id] = p
	}
	for id, p := range reps {
		for _, addr := range c.Addrs() {
			if err := after(t, "heartbeat", p.beats, start, addr); err != nil {
				t.Fatalf("first heartbeat of %s on %s: %v", id, addr, err)
			}
		}
	}
	table := "redcron:jobs:" + heartbeatOn(t, c, 0, "replica-b").JobTable
	live := func(what string, want ...string) {
		t.Helper()
		st, err := cl.Status(context.Background(), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range st.Replicas {
			got = append(got, r.Instance)
		}
		if !slices.Equal(got, want) || st.Tables != 1 {
			t.Errorf("%s: the fleet's view lists replicas %v and %d job tables, want %v and 1", what, got, st.Tables, want)
		}
		for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
			on := c.KeyOn(t, "redcron:hb:"+id)
			if slices.Contains(want, id) != slices.Contains(on, true) || slices.Contains(want, id) && slices.Contains(on, false) {
				t.Errorf("%s: heartbeat of %s on the nodes: %v", what, id, on)
			}
		}
		if on := c.KeyOn(t, table); slices.Contains(on, false) {
			t.Errorf("%s: the job table %s on the nodes: %v, want on every node", what, table, on)
		}
	}
	live("all running", "replica-a", "replica-b", "replica-c")

	if err := reps["replica-a"].Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	live("after replica-a's Shutdown", "replica-b", "replica-c")

	stop["replica-c"]()
	live("after replica-c's Run ended", "replica-b")
}
