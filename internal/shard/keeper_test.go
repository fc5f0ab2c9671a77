package shard

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// TestPresenceUnderLatency: with every node 400 ms away (a round trip) and
// a shard it is to hold held by another, a keeper still writes its
// presence often enough to stay fresh (younger than presenceStale on a
// quorum), so that the others do not take its shards: a presence call
// waits for slow nodes past a round, and a try to win a shard does not
// hold up the next presence.
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
		s.SetLatency(200 * time.Millisecond) // each way
	}
	key := "t:replicas"
	worst := make([]time.Duration, len(direct)) // by node, the oldest the presence was seen
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); <-ticker.C {
		for i, d := range direct {
			score, err := d.ZScore(ctx, key, "self\x00digest").Result()
			now, terr := d.Time(ctx).Result()
			if err != nil || terr != nil {
				worst[i] = presenceTTL
				continue
			}
			age := presenceTTL - time.Duration(int64(score)-now.UnixMilli())*time.Millisecond
			worst[i] = max(worst[i], age)
		}
	}
	fresh := 0
	for _, w := range worst {
		if w < presenceStale {
			fresh++
		}
	}
	if fresh < 3 {
		t.Errorf("the presence got older than %v on %d of 5 nodes (oldest by node: %v): the others would take this replica's shards", presenceStale, 5-fresh, worst)
	}
}
