package shard

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// TestPresenceUnderLatency: with four nodes 300 ms away (a round trip) and
// a shard it is to hold held by another, a keeper still writes its
// presence often enough to stay fresh (younger than presenceStale on a
// quorum), so that the others do not take its shards: a presence call
// waits for slow nodes past a round, and a try to win a shard does not
// hold up the next presence; and the fifth node, farther still for a
// while (a write to it outlasting the wait), is written again once 500 ms
// away (a write cut short would close its connection, and a new one's
// handshake and first call would outlast every later wait).
func TestPresenceUnderLatency(t *testing.T) {
	c := redistest.Start(t, 5, redistest.WithProxy())
	var nodes []*store.Node
	direct := make([]*redis.Client, 0, 5)
	for _, s := range c.Nodes() {
		n, err := store.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		d := redis.NewClient(&redis.Options{Addr: s.ServerAddr()})
		t.Cleanup(func() { _ = d.Close() })
		direct = append(direct, d)
	}
	newLocks := func() *mutex.Redlock {
		l, err := mutex.New(nodes, mutex.WithTrustedNodes(), mutex.WithLedger(0, 0), mutex.WithKeyPrefix("t~shards"))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other, err := newLocks().TryLock(ctx, Name(3), time.Minute, mutex.Owner("other"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release(context.Background())

	table := func() (string, map[string]engine.JobSpec) { return "digest", nil }
	k, err := NewKeeper(NewGate(&countingLocker{}), newLocks(), "t", "self", 5*time.Second, table, func() error { return nil }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for !k.gate.held[0].Load() { // the free shards are won at once
		time.Sleep(10 * time.Millisecond) // polls the keeper's state; nothing to wait on
	}

	for _, s := range c.Nodes() {
		s.SetLatency(150 * time.Millisecond) // each way
	}
	// One node is farther still for a while: a write to it outlasts the
	// wait for the answers, and must not leave it unwritten afterwards,
	// when it is 500 ms away (a round trip within the wait, a handshake
	// and a round trip not).
	c.Nodes()[0].SetLatency(600 * time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // the length of the fault
	c.Nodes()[0].SetLatency(250 * time.Millisecond)
	key := "t:replicas"
	worst := make([]time.Duration, len(direct)) // by node, the oldest the presence was seen
	farFresh := false                           // the far node's presence seen fresh in the last 2 s
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	start := time.Now()
	for end := start.Add(4 * time.Second); time.Now().Before(end); <-ticker.C {
		for i, d := range direct {
			score, err := d.ZScore(ctx, key, "self\x00digest").Result()
			now, terr := d.Time(ctx).Result()
			if err != nil || terr != nil {
				worst[i] = presenceTTL
				continue
			}
			age := presenceTTL - time.Duration(int64(score)-now.UnixMilli())*time.Millisecond
			if i == 0 && time.Since(start) > 2*time.Second && age < presenceStale {
				farFresh = true
			}
			if i > 0 {
				worst[i] = max(worst[i], age)
			}
		}
	}
	fresh := 0
	for _, w := range worst[1:] {
		if w < presenceStale {
			fresh++
		}
	}
	if fresh < 3 {
		t.Errorf("the presence got older than %v on %d of the 4 near nodes (oldest by node: %v): the others would take this replica's shards", presenceStale, 4-fresh, worst[1:])
	}
	if !farFresh {
		t.Errorf("the presence on the node that was farther for a while was not written again once it was nearer")
	}
}

// TestShare: the jobs gated by shard are those every live replica runs
// with the same ticks (spec and zone), whatever their other options (a
// deploy that changes a job's catch-up window or timeout must not make
// every replica contend for every job); a live table no answering node has
// gates nothing of what it lacks, and is read again next round; a table
// is read from the nodes that answer, though one hangs; a table that
// cannot be read leaves the gated jobs as they were, or ungates every job
// when none were known.
func TestShare(t *testing.T) {
	c := redistest.Start(t, 3)
	locks, _ := shardLocks(t, c)
	own := map[string]engine.JobSpec{
		"a": {Spec: "* * * * * *", Zone: "UTC", CatchUp: time.Minute},
		"b": {Spec: "* * * * * *", Zone: "UTC"},
		"c": {Spec: "0 * * * * *", Zone: "UTC"},
		"d": {Spec: "0 * * * * *", Zone: "UTC"},
	}
	other := map[string]engine.JobSpec{
		"a": {Spec: "* * * * * *", Zone: "UTC", RunTimeout: time.Second}, // the same ticks
		"b": {Spec: "*/2 * * * * *", Zone: "UTC"},                        // other ticks
		"d": {Spec: "0 * * * * *", Zone: "Europe/Paris"},                 // other ticks
	}
	_, ownDigest := engine.EncodeJobTable(own)
	otherFields, otherDigest := engine.EncodeJobTable(other)
	k, err := NewKeeper(NewGate(&countingLocker{}), locks, "t", "self", 5*time.Second,
		func() (string, map[string]engine.JobSpec) { return ownDigest, own }, func() error { return nil }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	shared := func() string {
		m := k.gate.shared.Load()
		if m == nil {
			return "all"
		}
		return fmt.Sprint(slices.Sorted(maps.Keys(*m)))
	}
	live := map[string]int{ownDigest: 3, otherDigest: 3}

	// Not published yet: nothing gated, read again next round.
	k.share(ctx, ownDigest, own, live)
	if got := shared(); got != "[]" || k.sharedFor != "" {
		t.Errorf("a live table no node has: shared %s (computed for %q); want [] and read again", got, k.sharedFor)
	}
	for _, n := range k.nodes {
		if err := n.PublishJobTable(ctx, k.keys.JobTable(otherDigest), otherFields, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	k.share(ctx, ownDigest, own, live)
	if got := shared(); got != "[a]" {
		t.Errorf("shared %s; want [a]: the job both tables run with the same ticks", got)
	}

	// A keeper that has computed nothing yet reads the table from the
	// nodes that answer, though the first one hangs (paused).
	fresh := func() *Keeper {
		k, err := NewKeeper(NewGate(&countingLocker{}), locks, "t", "self", 5*time.Second,
			func() (string, map[string]engine.JobSpec) { return ownDigest, own }, func() error { return nil }, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k2 := fresh()
	c.Nodes()[0].Pause()
	tctx, cancel := context.WithTimeout(ctx, presenceStale/4)
	k2.share(tctx, ownDigest, own, live)
	cancel()
	c.Nodes()[0].Resume()
	if m := k2.gate.shared.Load(); m == nil || fmt.Sprint(slices.Sorted(maps.Keys(*m))) != "[a]" {
		t.Errorf("with node 0 paused: shared %v; want [a], read from the other nodes", m)
	}

	// A third table that cannot be read (a majority of the nodes down):
	// the gated jobs stay as they were; a keeper that knew none ungates
	// every job.
	c.Nodes()[0].Kill()
	c.Nodes()[1].Kill()
	live["third"] = 3
	k.share(ctx, ownDigest, own, live)
	if got := shared(); got != "[a]" || strings.Contains(k.sharedFor, "third") {
		t.Errorf("a table not read: shared %s (computed for %q); want [a], read again", got, k.sharedFor)
	}
	k3 := fresh()
	k3.share(ctx, ownDigest, own, live)
	if m := k3.gate.shared.Load(); m == nil || len(*m) != 0 {
		t.Errorf("a table not read by a keeper that knew none: shared %v; want none (every job ungated)", m)
	}
}

// TestAnchorWonAgainEverywhere: a replica whose anchor is lost while its
// copies still hold on some nodes (deleted on a majority) wins its next
// anchor on every node at once, rather than on the nodes where the lost
// one was gone: a part is claimed only on the nodes where both its
// shard's lease and the anchor hold, so an anchor on a bare quorum leaves
// the claims of any shard whose lease holds elsewhere without a quorum.
func TestAnchorWonAgainEverywhere(t *testing.T) {
	c := redistest.Start(t, 5)
	locks, clients := shardLocks(t, c)
	table := func() (string, map[string]engine.JobSpec) { return "digest", nil }
	const ttl = 15 * time.Second // extended every 5 s
	k, err := NewKeeper(NewGate(&countingLocker{}), locks, "t", "self", ttl, table, func() error { return nil }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	ks, err := engine.NewKeyspace("t~shards")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ks.Lock(k.anchorName())
	if err != nil {
		t.Fatal(err)
	}
	anchor := func() *mutex.Lock { return k.gate.anchor.Load() }
	for anchor() == nil { // polls the keeper's state; nothing to wait on
		time.Sleep(10 * time.Millisecond)
	}
	first := anchor()
	// Its acquisition is won on a quorum; the last nodes' copies may land
	// later, and a node deleted before its copy landed would hold it
	// again, and the anchor heal onto the others.
	for everywhere := false; !everywhere; time.Sleep(10 * time.Millisecond) { // polls the nodes; nothing to wait on
		everywhere = true
		for _, cl := range clients {
			if v, _ := cl.Get(ctx, keys.Lock).Result(); v != first.Value() {
				everywhere = false
			}
		}
	}
	for _, cl := range clients[:3] {
		cl.Del(ctx, keys.Lock)
	}
	// Its next extension (within 5 s) finds it lost; the copies on nodes 3
	// and 4 would hold for 10 s or more: the next anchor is to hold on
	// every node before then, 4 s at least after the loss is found (a
	// round, the lost one's release and the next acquisition, under load).
	deadline := time.Now().Add(9 * time.Second)
	for {
		if a := anchor(); a != nil && a != first {
			everywhere := true
			for _, cl := range clients {
				if v, _ := cl.Get(ctx, keys.Lock).Result(); v != a.Value() {
					everywhere = false
				}
			}
			if everywhere {
				return
			}
		}
		if time.Now().After(deadline) {
			var on []string
			for _, cl := range clients {
				v, _ := cl.Get(ctx, keys.Lock).Result()
				on = append(on, v)
			}
			t.Fatalf("9 s after the anchor was deleted on 3 of 5 nodes, the nodes hold %q (the keeper's anchor: %v); want the new anchor's value on all", on, anchor() != nil && anchor() != first)
		}
		time.Sleep(50 * time.Millisecond) // polls the nodes; nothing to wait on
	}
}

// shardLocks returns a Redlock for shard leases over c's nodes (trusted,
// no ledger), and a client of each node.
func shardLocks(t *testing.T, c *redistest.Cluster) (*mutex.Redlock, []*redis.Client) {
	t.Helper()
	var nodes []*store.Node
	var clients []*redis.Client
	for _, s := range c.Nodes() {
		cl := s.Client(t)
		n, err := store.NewNode(s.Addr(), cl)
		if err != nil {
			t.Fatal(err)
		}
		nodes, clients = append(nodes, n), append(clients, cl)
	}
	locks, err := mutex.New(nodes, mutex.WithTrustedNodes(), mutex.WithLedger(0, 0), mutex.WithKeyPrefix("t~shards"))
	if err != nil {
		t.Fatal(err)
	}
	return locks, clients
}
