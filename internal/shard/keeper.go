package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/mutex"
)

// Timing of a Keeper: a round every roundEvery, in which the replica's
// presence is also written, for presenceTTL; a replica counts as gone once
// its presence was last written more than presenceStale ago on a quorum of
// the nodes (it missed five writes), so that its shards are not left
// without a target for the whole TTL; a shard is released once it has been
// another replica's target for releaseAfter rounds in a row; a replica
// handing its shards over at Shutdown keeps them handOver after
// withdrawing its presence, so that the others are its shards' targets,
// asking again, when it lets them go.
const (
	roundEvery    = 250 * time.Millisecond
	presenceTTL   = 5 * time.Second
	presenceStale = 1500 * time.Millisecond
	releaseAfter  = 4
	handOver      = 3 * roundEvery
)

// Keeper wins and keeps the leases of the shards its replica is to hold,
// and sets its Gate by them. Each replica writes its presence (its
// instance id and the digest of its job table) to a sorted set on every
// node each second; a shard's target is the live replica that ranks first
// for it by rendezvous hashing, so that the replicas, seeing the same
// fleet, agree on it, and a replica that comes or goes moves only its
// share. The target wins the shard's lease when it is free; a holder that
// is not the target any more releases it.
type Keeper struct {
	gate   *Gate
	locks  *mutex.Redlock
	nodes  []*engine.Node
	quorum int
	key    string
	keys   engine.Keyspace // the jobs' keyspace: presence, job tables
	self   string
	ttl    time.Duration
	table  func() (string, map[string]engine.JobSpec) // the digest of this replica's job table, and the table
	check  func() error                               // why this replica may not claim now (the owner check), nil if it may
	log    *slog.Logger
	member atomic.Pointer[string] // the presence last written
	leases [Count]*lease
	// winning is set while a try to win the shard is out (wins counts
	// them, so that Run ends only after them).
	winning [Count]bool
	wins    sync.WaitGroup
	// writing is set while a presence write to the node is out (writes
	// counts them, so that Run ends only after them).
	writing []atomic.Bool
	writes  sync.WaitGroup
	notUs   [Count]int                           // rounds in a row the shard held here was another's target
	tables  map[string]map[string]engine.JobSpec // job tables read, by digest
	// sharedFor is the live digests (sorted, joined) the gate's shared jobs
	// were last computed for: they are computed again only when it changes.
	sharedFor  string
	sharedOnce bool         // the gate's shared jobs were computed once
	failed     atomic.Int64 // when a failure to win a shard was last logged, unix ns
	// leaving is set by HandOver: no presence is written any more.
	leaving atomic.Bool
	// anchor is the replica's anchor (the parent of its runs claimed as
	// parts), once won; held by a round, and by Close.
	anchor *lease
	mu     sync.Mutex // held by a round and by releaseAll: the leases and the targets
}

type lease struct {
	lock *mutex.Lock
	ctx  context.Context // cancelled when the lease is lost
	stop func()
}

// NewKeeper returns a Keeper of gate's shards for the replica self, with
// leases of ttl won on locks (a Redlock of their own, without a ledger,
// under a key prefix of their own, over the nodes of the jobs' locks);
// prefix is the jobs' key prefix, under which it writes its presence and
// reads the job tables. table returns the replica's job table's digest and
// the table (each job's name and its spec as published), check why it may
// not claim ticks now (nil if it may): while it may not, it holds no shard
// and writes no presence, so that the others take its shards over. It
// does no I/O.
func NewKeeper(gate *Gate, locks *mutex.Redlock, prefix, self string, ttl time.Duration, table func() (string, map[string]engine.JobSpec), check func() error, log *slog.Logger) (*Keeper, error) {
	keys, err := engine.NewKeyspace(prefix)
	if err != nil {
		return nil, err
	}
	w := lockwire.Of(locks)
	if err := w.Check(Name(0), ttl, 0, 0); err != nil {
		return nil, fmt.Errorf("shard leases: %w", err)
	}
	nodes := w.Nodes
	return &Keeper{gate: gate, locks: locks, nodes: nodes, quorum: len(nodes)/2 + 1, key: keys.Replicas(), keys: keys,
		self: self, ttl: ttl, table: table, check: check, log: log, tables: map[string]map[string]engine.JobSpec{},
		writing: make([]atomic.Bool, len(nodes))}, nil
}

// Name returns the name of a shard's lease.
func Name(k int) string { return "shard-" + strconv.Itoa(k) }

// Run keeps the shards until ctx is done, then withdraws the presence and
// releases the leases at once (see HandOver for a stop without a gap).
func (k *Keeper) Run(ctx context.Context) {
	defer func() {
		k.wins.Wait() // ctx is done: the tries end at once, letting go what they won
		k.writes.Wait()
		k.mu.Lock()
		defer k.mu.Unlock()
		k.releaseAll(context.WithoutCancel(ctx))
	}()
	tick := time.NewTicker(roundEvery)
	defer tick.Stop()
	for {
		fleet, err := k.presence(ctx)
		k.mu.Lock()
		switch {
		case err != nil:
			// It may not claim: its shards go to the others.
			k.releaseAll(ctx)
		case fleet != nil:
			k.gate.on.Store(true)
			k.keepAnchor(ctx)
			k.round(ctx, fleet)
		}
		k.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// HandOver withdraws the replica's presence, keeps its shards while the
// other replicas make them their targets (asking for their ticks again
// until they win them), then lets them go: call it before stopping the
// scheduler, whose runs may go on for long after.
func (k *Keeper) HandOver(ctx context.Context) {
	k.leaving.Store(true)
	k.withdraw(ctx)
	select {
	case <-ctx.Done():
	case <-time.After(handOver):
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.releaseAll(ctx)
}

// round sets the gate's targets by fleet, releases the leases of shards
// another replica is to hold (after releaseAfter rounds), notes the leases
// lost, and starts trying to win the free shards this replica is to hold
// (win), without waiting: a win held up by loaded nodes must not hold up
// the next presence.
func (k *Keeper) round(ctx context.Context, fleet []string) {
	to := targets(fleet)
	for s := range Count {
		want := to[s] == k.self
		k.gate.want[s].Store(want)
		l := k.leases[s]
		var lost *mutex.Lock
		if l != nil && l.ctx.Err() != nil {
			k.log.LogAttrs(ctx, slog.LevelDebug, "shard lease lost", slog.Int("shard", s), slog.Any("error", context.Cause(l.ctx)))
			k.gate.held[s].Store(false)
			k.gate.lease[s].Store(nil)
			l.stop()
			k.leases[s], l, lost = nil, nil, l.lock
		}
		switch {
		case l != nil && !want:
			if k.notUs[s]++; k.notUs[s] >= releaseAfter {
				k.release(ctx, s)
			}
		case l != nil:
			k.notUs[s] = 0
		case want && !k.winning[s]:
			k.winning[s] = true
			k.wins.Go(func() { k.win(ctx, s, lost) })
		case lost != nil:
			k.wins.Go(func() { k.letGo(ctx, lost) })
		}
	}
}

// letGo deletes what is left of a lease lost here (its copies on the nodes
// where it still holds, until they expire), so that the next lease of the
// shard or the anchor is won on every node that answers, not only on those
// where the lost one had expired: a lease held by a bare quorum stays one
// failure from lost, and a part is claimed only on the nodes where both
// its shard's lease and its replica's anchor hold.
//
// It waits for every node's answer (Flush), not only a majority's: a
// node whose release is still on its way would refuse the next lease,
// sent on another connection, as held by the lost one.
func (k *Keeper) letGo(ctx context.Context, lost *mutex.Lock) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.ttl/2)
	defer cancel()
	_ = lost.Release(rctx)
	_ = k.locks.Flush(rctx)
}

// win tries once to win shard s's lease, after letting go of what is left
// of the lease lost here, if any, and, if it does and the shard is still
// this replica's target, keeps it alive; otherwise (the keeper stopped, or
// the fleet changed meanwhile) it lets the lease go.
func (k *Keeper) win(ctx context.Context, s int, lost *mutex.Lock) {
	if lost != nil {
		k.letGo(ctx, lost)
	}
	actx, cancel := context.WithTimeout(ctx, k.ttl/2)
	lock, err := k.locks.TryLock(actx, Name(s), k.ttl, mutex.Owner(k.self))
	cancel()
	k.mu.Lock()
	k.winning[s] = false
	if err == nil && (ctx.Err() != nil || !k.gate.want[s].Load() || k.leases[s] != nil) {
		k.mu.Unlock()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.ttl/2)
		defer cancel()
		_ = lock.Release(rctx)
		return
	}
	defer k.mu.Unlock()
	if err != nil {
		// Held by the previous holder until it lets go, or no quorum.
		k.logFailure(ctx, s, err)
		return
	}
	lctx, stop := lock.KeepAlive(context.WithoutCancel(ctx))
	k.leases[s] = &lease{lock: lock, ctx: lctx, stop: stop}
	k.notUs[s] = 0
	k.gate.lease[s].Store(lock)
	k.gate.held[s].Store(true)
	k.log.LogAttrs(ctx, slog.LevelDebug, "shard lease won", slog.Int("shard", s))
}

// logFailure logs, at most once a minute, a failure to win a shard other
// than the nodes' answer (held by the previous holder, no quorum: the
// jobs' Redlock logs the nodes' states), such as the owner check's.
func (k *Keeper) logFailure(ctx context.Context, s int, err error) {
	var qerr *mutex.QuorumError
	if errors.As(err, &qerr) || ctx.Err() != nil {
		return
	}
	now, last := time.Now().UnixNano(), k.failed.Load()
	if now-last < int64(time.Minute) || !k.failed.CompareAndSwap(last, now) {
		return
	}
	k.log.LogAttrs(ctx, slog.LevelWarn, "shard lease not won", slog.Int("shard", s), slog.Any("error", err))
}

// release lets shard s's lease go.
func (k *Keeper) release(ctx context.Context, s int) {
	l := k.leases[s]
	k.gate.held[s].Store(false) // refuse first, then let go
	k.gate.lease[s].Store(nil)
	k.leases[s] = nil
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.ttl/2)
	defer cancel()
	_ = l.lock.Release(rctx)
	k.log.LogAttrs(ctx, slog.LevelDebug, "shard lease released", slog.Int("shard", s))
}

// releaseAll withdraws the replica's presence and lets every lease go, in
// parallel, so that the others take its shards at once; until it writes a
// presence again, the gate refuses every shard.
func (k *Keeper) releaseAll(ctx context.Context) {
	for s := range Count {
		k.gate.want[s].Store(false)
	}
	k.withdraw(ctx)
	var wg sync.WaitGroup
	for s, l := range k.leases {
		if l != nil {
			wg.Go(func() { k.release(ctx, s) })
		}
	}
	wg.Wait()
}
