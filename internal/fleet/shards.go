package fleet

import (
	"log/slog"
	"slices"
	"time"

	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/shard"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
)

// shardTTL is the TTL of a shard's lease: how long a crashed replica's
// shards wait before another replica takes them. It is at most the max
// TTL, and raised, up to it, to what the node timeout needs.
const shardTTL = 10 * time.Second

// shardHold is the max hold of the shards' Redlock: none to speak of. The
// replica's anchor is kept alive while the replica runs, since the runs
// claimed under it end with it (each run's hold is bounded by the jobs'
// max hold, from its own claim); a shard's lease is let go when the shard
// moves.
const shardHold = 100 * 365 * 24 * time.Hour

// newShards returns the keeper of the replica's shards (see package
// internal/shard), whose leases are won on a Redlock of their own over the
// nodes of the jobs' Redlock, with the jobs' lock options (lockOpts,
// without their metrics) but without a ledger or a max hold (shardHold),
// under the jobs' key prefix followed by "~shards" (so that no job name,
// pause or scan meets them), logging nothing (the jobs' Redlock logs the
// nodes). A replica writes its presence for the shards only while its
// owner check (the heartbeat, the clock) lets it claim ticks. It fails
// when no TTL up to the max TTL suits the node timeout.
func newShards(jobs *mutex.Redlock, lockOpts []mutex.Option, gate *shard.Gate, self string, table *jobTable, scan *leakscan.Scanner, log *slog.Logger) (*shard.Keeper, error) {
	jw := lockwire.Of(jobs)
	opts := append(slices.Clip(lockOpts), mutex.WithLedger(0, 0), mutex.WithLogger(slog.New(slog.DiscardHandler)),
		mutex.WithKeyPrefix(jw.KeyPrefix+"~shards"), mutex.WithMaxHold(shardHold))
	nodes := make([]*store.Node, len(jw.Nodes))
	for i, n := range jw.Nodes {
		nodes[i] = (*store.Node)(n)
	}
	locks, err := mutex.New(nodes, opts...)
	if err != nil {
		return nil, err
	}
	w := lockwire.Of(locks)
	ttl := min(w.MaxTTL, shardTTL)
	if w.Check(shard.Name(0), ttl, 0, 0) != nil {
		ttl = w.MaxTTL
	}
	check := func() error { return scan.Check(self, false) }
	return shard.NewKeeper(gate, locks, jw.KeyPrefix, self, ttl, table.jobs, check, log)
}
