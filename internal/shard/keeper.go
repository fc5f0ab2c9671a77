package shard

import (
	"context"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/mutex"
)

// Timing of a Keeper: a round every roundEvery, the replica's presence
// written every presenceEvery for presenceTTL, but a replica counted gone
// once its presence was last written more than presenceStale ago (it
// missed two writes: its shards are not left without a target for the
// whole TTL), a shard released once it has been another replica's target
// for releaseAfter rounds in a row.
const (
	roundEvery    = 250 * time.Millisecond
	presenceEvery = time.Second
	presenceTTL   = 5 * time.Second
	presenceStale = 2500 * time.Millisecond
	releaseAfter  = 4
	leaseTimeout  = 2 * time.Second // bounds one shard lease's acquisition or release
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
	key    string
	keys   engine.Keyspace
	self   string
	ttl    time.Duration
	table  func() (string, []string) // the digest of this replica's job table, and its jobs
	check  func() error              // why this replica may not claim now (the owner check), nil if it may
	log    *slog.Logger
	member string // the presence last written
	leases [Count]*lease
	notUs  [Count]int                 // rounds in a row the shard held here was another's target
	tables map[string]map[string]bool // job tables read, by digest
}

type lease struct {
	lock *mutex.Lock
	ctx  context.Context // cancelled when the lease is lost
	stop func()
}

// NewKeeper returns a Keeper of gate's shards for the replica self, with
// leases of ttl won on locks (a Redlock without a ledger, over the nodes
// of the job's locks); table returns the replica's job table's digest and
// jobs, check why it may not claim ticks now (nil if it may): while it may
// not, it writes no presence, so that the others take its shards over
// once its presence expires. It does no I/O.
func NewKeeper(gate *Gate, locks *mutex.Redlock, self string, ttl time.Duration, table func() (string, []string), check func() error, log *slog.Logger) (*Keeper, error) {
	keys, err := engine.NewKeyspace(locks.KeyPrefix())
	if err != nil {
		return nil, err
	}
	nodes := make([]*engine.Node, len(locks.Nodes()))
	for i, n := range locks.Nodes() {
		nodes[i] = (*engine.Node)(n)
	}
	return &Keeper{gate: gate, locks: locks, nodes: nodes, key: keys.Replicas(), keys: keys, self: self, ttl: ttl,
		table: table, check: check, log: log, tables: map[string]map[string]bool{}}, nil
}

// Name returns the name of a shard's lease.
func Name(k int) string { return "~shard/" + strconv.Itoa(k) }

// Run keeps the shards until ctx is done, then releases their leases.
func (k *Keeper) Run(ctx context.Context) {
	defer k.releaseAll(context.WithoutCancel(ctx))
	tick := time.NewTicker(roundEvery)
	defer tick.Stop()
	var fleet []string
	var present time.Time
	for {
		if time.Since(present) >= presenceEvery {
			if f, ok := k.presence(ctx); ok {
				fleet, present = f, time.Now()
				k.gate.on.Store(true)
			}
		}
		if fleet != nil {
			k.round(ctx, fleet)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// presence writes this replica's presence on every node and returns the
// live replicas' presences (instance and digest), deduplicated, from the
// nodes that answered; false if none did. It sets the gate's shared jobs
// by their job tables.
func (k *Keeper) presence(ctx context.Context) ([]string, bool) {
	if err := k.check(); err != nil {
		return nil, false
	}
	digest, jobs := k.table()
	ctx, cancel := context.WithTimeout(ctx, presenceEvery)
	defer cancel()
	answers := make([]map[string]time.Duration, len(k.nodes))
	k.member = k.self + "\x00" + digest
	errs := engine.OnEach(k.nodes, func(i int, n *engine.Node) (err error) {
		answers[i], err = n.Presence(ctx, k.key, k.member, presenceTTL)
		return err
	})
	if engine.Answered(errs) == 0 {
		return nil, false
	}
	digests := map[string]bool{}
	var fleet []string
	for _, a := range answers {
		for m, age := range a {
			if age > presenceStale {
				continue
			}
			inst, d, _ := strings.Cut(m, "\x00")
			digests[d] = true
			fleet = append(fleet, inst)
		}
	}
	slices.Sort(fleet)
	fleet = slices.Compact(fleet)
	k.share(ctx, digest, jobs, digests)
	return fleet, true
}

// share sets the gate's shared jobs: all of them when every live replica
// publishes this replica's table, else the jobs of this replica's table
// that every other live table holds; every job, ungated, when a table
// cannot be read.
func (k *Keeper) share(ctx context.Context, own string, jobs []string, digests map[string]bool) {
	if len(digests) == 1 && digests[own] {
		k.gate.shared.Store(nil)
		return
	}
	shared := map[string]bool{}
	for _, j := range jobs {
		shared[j] = true
	}
	for d := range digests {
		if d == own {
			continue
		}
		t, ok := k.readTable(ctx, d)
		if !ok {
			empty := map[string]bool{}
			k.gate.shared.Store(&empty)
			return
		}
		for j := range shared {
			if !t[j] {
				delete(shared, j)
			}
		}
	}
	k.gate.shared.Store(&shared)
}

// readTable returns the jobs of the table of digest, from the first node
// that has it; a table once read is kept (a digest's table never changes).
func (k *Keeper) readTable(ctx context.Context, digest string) (map[string]bool, bool) {
	if t, ok := k.tables[digest]; ok {
		return t, true
	}
	if digest == "" {
		return nil, false
	}
	for _, n := range k.nodes {
		names, err := n.Client().HKeys(ctx, k.keys.JobTable(digest)).Result()
		if err != nil || len(names) == 0 {
			continue
		}
		t := map[string]bool{}
		for _, name := range names {
			t[name] = true
		}
		if len(k.tables) > 64 {
			clear(k.tables)
		}
		k.tables[digest] = t
		return t, true
	}
	return nil, false
}

// round sets the gate's targets by fleet, releases the leases of shards
// another replica is to hold (after releaseAfter rounds), notes the leases
// lost, and tries to win the free shards this replica is to hold.
func (k *Keeper) round(ctx context.Context, fleet []string) {
	var wg sync.WaitGroup
	for s := range Count {
		want := target(fleet, s) == k.self
		k.gate.want[s].Store(want)
		l := k.leases[s]
		if l != nil && l.ctx.Err() != nil {
			k.log.LogAttrs(ctx, slog.LevelDebug, "shard lease lost", slog.Int("shard", s), slog.Any("error", context.Cause(l.ctx)))
			k.gate.held[s].Store(false)
			l.stop()
			k.leases[s], l = nil, nil
		}
		switch {
		case l != nil && !want:
			if k.notUs[s]++; k.notUs[s] >= releaseAfter {
				k.release(ctx, s)
			}
		case l != nil:
			k.notUs[s] = 0
		case want:
			wg.Go(func() { k.win(ctx, s) })
		}
	}
	wg.Wait()
}

// win tries once to win shard s's lease and, if it does, keeps it alive.
func (k *Keeper) win(ctx context.Context, s int) {
	actx, cancel := context.WithTimeout(ctx, leaseTimeout)
	lock, err := k.locks.TryLock(actx, Name(s), k.ttl, mutex.Owner(k.self))
	cancel()
	if err != nil {
		return // held by the previous holder until it lets go, or no quorum
	}
	lctx, stop := lock.KeepAlive(context.WithoutCancel(ctx))
	k.leases[s] = &lease{lock: lock, ctx: lctx, stop: stop}
	k.notUs[s] = 0
	k.gate.held[s].Store(true)
	k.log.LogAttrs(ctx, slog.LevelDebug, "shard lease won", slog.Int("shard", s))
}

// release lets shard s's lease go.
func (k *Keeper) release(ctx context.Context, s int) {
	l := k.leases[s]
	k.gate.held[s].Store(false) // refuse first, then let go
	k.leases[s] = nil
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseTimeout)
	defer cancel()
	_ = l.lock.Release(rctx)
	k.log.LogAttrs(ctx, slog.LevelDebug, "shard lease released", slog.Int("shard", s))
}

// releaseAll withdraws the replica's presence and lets every lease go, in
// parallel, so that the others take its shards at once.
func (k *Keeper) releaseAll(ctx context.Context) {
	k.gate.on.Store(false)
	if k.member != "" {
		rctx, cancel := context.WithTimeout(ctx, leaseTimeout)
		engine.OnEach(k.nodes, func(_ int, n *engine.Node) error { return n.Client().ZRem(rctx, k.key, k.member).Err() })
		cancel()
	}
	var wg sync.WaitGroup
	for s, l := range k.leases {
		if l != nil {
			wg.Go(func() { k.release(ctx, s) })
		}
	}
	wg.Wait()
}

// target returns the replica of fleet that is to hold shard s: the first
// by rendezvous hashing of its instance id with the shard.
func target(fleet []string, s int) string {
	best, bestScore := "", uint64(0)
	for _, inst := range fleet {
		h := fnv.New64a()
		h.Write([]byte(inst))
		h.Write([]byte{0, byte(s)})
		if score := mix(h.Sum64()); best == "" || score > bestScore {
			best, bestScore = inst, score
		}
	}
	return best
}

// mix scrambles a hash's bits (splitmix64's finalizer), so that close
// inputs rank independently.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
