// Package fleet runs a replica's side of the fleet beside its scheduler:
// its heartbeat and the leak scan (package leakscan, which also checks for
// missed ticks), the leases of its shards (package internal/shard), its
// job table published on the nodes for the admin command and the status
// page, the trigger requests it takes from the nodes, and the removal of
// its heartbeat when it stops. Package redcron makes a Replica and runs
// the scheduler through its Run; it does no Redis work of its own.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/duehook"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/shard"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// Hook carries the calls that the Redlock and the scheduler, made before
// the Replica, make into it: the owner check before each acquisition and
// extension (give Check to mutex.WithOwnerCheck), and the skips its
// heartbeat reports (give Observe to scheduler.WithObserver), which it
// keeps with the scheduler's ticks due for the scanner (package
// internal/duehook). New ties it to the replica's scanner, once; until
// then, Check lets every owner through.
type Hook struct {
	scan *leakscan.Scanner
	due  duehook.Hook // the scheduler's ticks due and skips, for the scanner's missed-tick check and heartbeat
}

// Check is the owner check of the replica's scanner (leakscan's Check).
func (h *Hook) Check(owner string, extending bool) error {
	return h.scan.Check(owner, extending) // a nil Scanner lets every owner through
}

// Observe hands the scheduler's skips to the replica's heartbeat.
func (h *Hook) Observe(e scheduler.Event) {
	if e.Kind == scheduler.KindSkipped {
		h.due.Skipped(e.Job, e.Tick, e.Skip)
	}
}

// Config is what New wires a Replica from.
type Config struct {
	// Locks is the Redlock the scheduler claims its ticks with; the
	// Replica works on its nodes, under its key prefix.
	Locks *mutex.Redlock
	// LockOptions are the options Locks was made with, less its metrics:
	// the shards' Redlock is made with them too (see newShards).
	LockOptions []mutex.Option
	// Gate is the scheduler's locker, which the shards' keeper opens.
	Gate *shard.Gate
	// Scheduler is the replica's scheduler, made with Gate over Locks.
	Scheduler *scheduler.Scheduler
	// Hook was given to Locks and Scheduler; New ties it to the scanner.
	Hook *Hook
	// ScanOptions are the leak scanner's options, after the Replica's own
	// (its logger, its job table's digest, its ticks due).
	ScanOptions []leakscan.Option
	// Logger logs what the Replica does; not nil.
	Logger *slog.Logger
}

// jobTableEvery is how often a replica publishes its job table; the table
// lives four periods on a node.
const jobTableEvery = 30 * time.Second

// goodbyeTimeout bounds the removal of a stopped replica's heartbeat.
const goodbyeTimeout = time.Second

// Replica is a replica's side of the fleet. Make it with New, run it with
// Run, once.
type Replica struct {
	logNodes func(context.Context) // the Redlock's: logs the nodes' states
	sched    *scheduler.Scheduler
	self     string // the scheduler's instance id
	scan     *leakscan.Scanner
	shards   *shard.Keeper
	table    *jobTable     // the digest its heartbeat publishes, the table publishJobTable publishes
	due      *duehook.Hook // the scheduler's ticks due, once it runs, for the missed-tick check
	keys     engine.Keyspace
	nodes    []*engine.Node
	log      *slog.Logger

	tableEvery time.Duration                       // how often it publishes its job table (tests shorten it)
	tableRound func(start time.Time, errs []error) // if set, called after each round (tests)
}

// New returns the Replica of cfg's scheduler, with its leak scanner (tied
// to cfg.Hook) and the keeper of its shards. It does no I/O and starts
// nothing. Its errors are the options' and the Redlock's, as leakscan.New
// and mutex.New return them.
func New(cfg Config) (*Replica, error) {
	if cfg.Hook == nil || cfg.Hook.scan != nil {
		return nil, errors.New("fleet: New: the hook is nil or tied to another replica")
	}
	w := lockwire.Of(cfg.Locks)
	keys, err := engine.NewKeyspace(w.KeyPrefix)
	if err != nil {
		return nil, fmt.Errorf("fleet: New: %w", err)
	}
	r := &Replica{logNodes: w.LogNodes, sched: cfg.Scheduler, table: &jobTable{s: cfg.Scheduler}, due: &cfg.Hook.due,
		keys: keys, log: cfg.Logger, tableEvery: jobTableEvery, nodes: w.Nodes}
	// The heartbeat carries the digest of the scheduler's jobs (its ticks
	// due and skips come through the hook, in Run's context); the options
	// given after come after, so that leakscan.WithReplicaInfo(version,
	// nil) sets the version alone.
	opts := append([]leakscan.Option{leakscan.WithLogger(cfg.Logger),
		leakscan.WithReplicaInfo("", r.table.get)}, cfg.ScanOptions...)
	self := cfg.Gate.Instance() // the scheduler's id, told the gate by its New
	if self == "" {
		return nil, errors.New("fleet: New: the scheduler was not made over the gate")
	}
	r.self = self
	if r.scan, err = leakscan.New(cfg.Locks, self, opts...); err != nil {
		return nil, err
	}
	if r.shards, err = newShards(cfg.Locks, cfg.LockOptions, cfg.Gate, self, r.table, r.scan, cfg.Logger); err != nil {
		return nil, err
	}
	cfg.Hook.scan = r.scan
	return r, nil
}

// Run logs the state of each node (the Redlock's LogNodes), then runs the
// replica's housekeeping while loop, the scheduler's Run, runs with ctx:
// the heartbeats and the leak scan, the shards, the trigger requests and
// the job table. The shards stop as the loop does (when ctx is done or
// loop returns); the rest once loop has returned, after its runs. Then
// Run closes the shards (the runs claimed under the replica's anchor have
// ended) and returns loop's error. Call Goodbye once the releases are
// flushed.
func (r *Replica) Run(ctx context.Context, loop func(context.Context) error) error {
	r.logNodes(ctx)
	keepCtx, stopKeeping := context.WithCancel(context.WithoutCancel(ctx))
	shardCtx, stopShards := context.WithCancel(ctx) // its shards go as the loop stops, not after the runs
	defer stopShards()
	var wg sync.WaitGroup
	wg.Go(func() { r.scan.Run(duehook.NewContext(keepCtx, r.due)) }) // its missed-tick check and skips
	wg.Go(func() { r.shards.Run(shardCtx) })
	wg.Go(func() { r.takeTriggers(keepCtx) })
	wg.Go(func() { r.publishJobTable(keepCtx) })
	err := loop(duehook.NewContext(ctx, r.due))
	stopShards()
	stopKeeping()
	wg.Wait()
	r.shards.Close(ctx)
	return err
}

// HandOver withdraws the replica's presence and lets its shards go once
// the others have them as their targets, so that they take them without a
// gap (shard.Keeper.HandOver): Shutdown calls it before stopping the
// scheduler, if Run was called.
func (r *Replica) HandOver(ctx context.Context) { r.shards.HandOver(ctx) }

// Changed records an Add or a Remove of the scheduler, once it has
// returned: the job table is encoded again.
func (r *Replica) Changed() { r.table.changed() }

// Goodbye removes the replica's heartbeat (and with it the skips it
// reports) from every node, in parallel, within goodbyeTimeout, once Run
// has returned and the runs' leases were released: a clean stop is seen at
// once, not after the heartbeat's TTL. A node that misses it keeps the key
// until its TTL. The job table stays: other replicas may publish the same
// one, and a table no live heartbeat names is read by no one and expires
// within four periods.
func (r *Replica) Goodbye(ctx context.Context) {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), goodbyeTimeout)
	defer cancel()
	key := r.keys.Heartbeat(r.self)
	errs := engine.OnEach(r.nodes, func(_ int, n *engine.Node) error { return n.EndHeartbeat(gctx, key) })
	if err := errors.Join(errs...); err != nil {
		r.log.LogAttrs(ctx, slog.LevelDebug, "heartbeat left on some nodes until its TTL", slog.Any("error", err))
	}
}

// SetJobTablePeriod makes r publish its job table every d, and call round,
// if not nil, after each round with when it started and each node's error
// (for tests). Call it before Run.
func (r *Replica) SetJobTablePeriod(d time.Duration, round func(start time.Time, errs []error)) {
	r.tableEvery, r.tableRound = d, round
}
