// Package redcron runs cron jobs in replicated services: every replica
// embeds the same Scheduler with the same jobs, and each scheduled tick of
// each job runs on exactly one replica. A tick is claimed with a Redlock
// lease on a majority of independent Redis masters, kept alive while the
// job runs; the job's context is cancelled the moment the lease can no
// longer be proven, and every run carries a fencing token for the storage
// it writes to.
//
// New builds everything from the masters' addresses, or from your own
// go-redis clients (NewWithClients): the clients, the Redlock (package
// mutex), the scheduler (package scheduler), the heartbeats and the leak
// scan (package leakscan), and, when asked, the Prometheus metrics (package
// metrics). Those packages stay usable on their own.
package redcron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/fleet"
	"github.com/redcron/redcron/internal/shard"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/metrics"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// Scheduler wraps a scheduler.Scheduler wired to a Redlock over the nodes
// and to a leak scanner. Add, Remove, Trigger, Entries and Shutdown are the
// scheduler's (see package scheduler); Run also logs the nodes' state
// first, keeps the replica's heartbeat and scans for leaks while the
// scheduler runs, and removes the heartbeat and closes the clients New
// made when it returns.
type Scheduler struct {
	s       *scheduler.Scheduler
	locks   *mutex.Redlock
	fleet   *fleet.Replica // its heartbeat and leak scan, shards, job table and trigger requests
	log     *slog.Logger
	owned   []*redis.Client // the clients New made
	started atomic.Bool     // Run was called
	shut    atomic.Bool     // Shutdown was called
	close   sync.Once
	stopped chan struct{} // closed when Run has removed the heartbeat
}

// Add registers a job: see scheduler.Scheduler.Add.
func (s *Scheduler) Add(name, spec string, job scheduler.JobFunc, opts ...scheduler.JobOption) error {
	defer s.fleet.Changed()
	return s.s.Add(name, spec, job, opts...)
}

// Remove unregisters a job: see scheduler.Scheduler.Remove.
func (s *Scheduler) Remove(name string) error {
	defer s.fleet.Changed()
	return s.s.Remove(name)
}

// Trigger runs a job now, under its lock: see scheduler.Scheduler.Trigger.
func (s *Scheduler) Trigger(ctx context.Context, name string) (scheduler.RunInfo, error) {
	info, err := s.s.Trigger(ctx, name)
	if errors.Is(err, scheduler.ErrClosed) {
		s.flush(ctx) // a lease won as Run ended is released after Run's flush
	}
	return info, err
}

// Entries returns the jobs as this replica sees them: see
// scheduler.Scheduler.Entries.
func (s *Scheduler) Entries() []scheduler.Entry { return s.s.Entries() }

// Shutdown stops the scheduler gracefully (see scheduler.Scheduler.Shutdown),
// then waits at most 5 s for releases still under way on slow nodes. If
// Run was called, it waits for Run to remove the replica's heartbeat; if
// not, it closes the clients New made.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	if !s.shut.Swap(true) && s.started.Load() {
		s.fleet.HandOver(ctx) // the others take its shards without a gap
	}
	err := s.s.Shutdown(ctx)
	s.flush(ctx)
	if s.started.Load() {
		<-s.stopped
	} else {
		s.closeClients()
	}
	return err
}

// flush waits, at most 5 s, for the Redlock's releases still under way, so
// that a process that exits leaves no lock behind on a slow node.
func (s *Scheduler) flush(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.locks.Flush(fctx); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "releases still under way when the scheduler stopped; their locks expire with their TTL",
			slog.Any("error", err))
	}
}

// closeClients closes the clients New made, once.
func (s *Scheduler) closeClients() {
	s.close.Do(func() {
		for _, c := range s.owned {
			_ = c.Close()
		}
	})
}

// New returns a Scheduler over the Redis masters at addrs (host:port, one
// per independent master: 3 tolerate one down, 5 tolerate two), with one
// client each, configured as redcron needs: no retries of its own (redcron
// decides what to retry), one dial per attempt, 1 s dial, read and write
// timeouts that also honour contexts (raise them with WithRedisOptions if
// you raise mutex.WithNodeTimeout above a second). WithRedisOptions
// adjusts them (password, TLS). It validates the options and does no I/O;
// its errors for bad input match mutex.ErrInvalidOption and name what is wrong.
//
// go-redis logs every failed dial itself, to stderr, several lines a
// second per node down, where WithLogger already logs each node's state
// change once. So New sets go-redis's logger (redis.SetLogger, which is
// process-wide) to go-redis's own, less its "failed to dial" lines: this
// also quiets those lines for your other go-redis clients, and replaces a
// logger you set before New; set yours after New to keep it.
func New(addrs []string, opts ...Option) (*Scheduler, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: New: no node addresses", mutex.ErrInvalidOption)
	}
	clients, owned, err := newClients(addrs, cfg)
	if err != nil {
		return nil, err
	}
	s, err := build(addrs, clients, cfg)
	if err != nil {
		for _, c := range owned {
			_ = c.Close()
		}
		return nil, err
	}
	s.owned = owned
	quietGoRedis()
	return s, nil
}

// NewWithClients returns a Scheduler over your own go-redis clients, one
// per independent master (for TLS, ACLs, Sentinel, a Cluster or Ring
// client). Set MaxRetries to -1 and DialerRetries to 1 on them, and
// timeouts above the node timeout (250 ms): see the README. The clients
// stay yours to close, and so does go-redis's logging (redis.SetLogger: it
// logs every failed dial). It does no I/O. Its errors for bad input match
// mutex.ErrInvalidOption.
func NewWithClients(clients []redis.UniversalClient, opts ...Option) (*Scheduler, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: NewWithClients: no clients", mutex.ErrInvalidOption)
	}
	names := make([]string, len(clients))
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("%w: NewWithClients: client %d is nil", mutex.ErrInvalidOption, i)
		}
		names[i] = nodeName(c, i)
	}
	return build(names, clients, cfg)
}

// nodeName names a node after its client's address, as the tally and the
// metrics show it.
func nodeName(c redis.UniversalClient, i int) string {
	if cl, ok := c.(*redis.Client); ok {
		return cl.Options().Addr
	}
	return fmt.Sprintf("node-%d", i)
}

// build wires the nodes, the Redlock, the scheduler, the replica's side of
// the fleet (package internal/fleet) and the metrics. An option the
// packages underneath refuse matches mutex.ErrInvalidOption, as every
// package's does; the metrics are
// registered last, so that a refusal leaves the registerer as it was.
func build(names []string, clients []redis.UniversalClient, cfg config) (*Scheduler, error) {
	nodes := make([]*store.Node, len(clients))
	for i, c := range clients {
		n, err := store.NewNode(names[i], c)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", mutex.ErrInvalidOption, i, err)
		}
		nodes[i] = n
	}
	// The Redlock checks the owner's heartbeat before each acquisition and
	// extension, and the heartbeat reports the scheduler's skips: both go
	// through hook to the replica's leak scanner, made after them.
	hook := &fleet.Hook{}
	lockOpts := append([]mutex.Option{mutex.WithLogger(cfg.logger), mutex.WithOwnerCheck(hook.Check)}, cfg.lock...)
	schedOpts := append([]scheduler.Option{scheduler.WithLogger(cfg.logger), scheduler.WithObserver(hook.Observe)}, cfg.scheduler...)
	scanOpts := slices.Clone(cfg.leakscan)
	shardOpts := slices.Clone(lockOpts)
	var m *metrics.Collector
	if cfg.registerer != nil {
		var err error
		if m, err = metrics.New(metrics.WithNodes(names...)); err != nil {
			return nil, err
		}
		lockOpts = append(lockOpts, mutex.WithObserver(m.LockObserver()))
		schedOpts = append(schedOpts, scheduler.WithObserver(m.SchedulerObserver()))
		scanOpts = append(scanOpts, leakscan.WithObserver(m.LeakObserver()))
	}
	locks, err := mutex.New(nodes, lockOpts...)
	if err != nil {
		return nil, err
	}
	gate := shard.NewGate(scheduler.NewRedlockLocker(locks))
	s, err := scheduler.New(gate, schedOpts...)
	if err != nil {
		return nil, err
	}
	f, err := fleet.New(fleet.Config{Locks: locks, LockOptions: shardOpts, Gate: gate, Scheduler: s, Hook: hook,
		ScanOptions: scanOpts, Logger: cfg.logger})
	if err != nil {
		return nil, err
	}
	if m != nil {
		if err := cfg.registerer.Register(m); err != nil {
			return nil, fmt.Errorf("redcron: registering the metrics: %w", err)
		}
	}
	return &Scheduler{s: s, locks: locks, fleet: f, stopped: make(chan struct{}), log: cfg.logger}, nil
}

// Run runs the scheduler until ctx is done or Shutdown is called (see
// scheduler.Scheduler.Run), then removes the replica's heartbeat, so that
// the admin command and the status page stop counting it at once, and
// closes the clients New made. Before the first tick it logs the state of
// each node, as the Redlock probes them. A second call returns the
// scheduler's error at once and closes nothing.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return s.s.Run(ctx)
	}
	defer s.closeClients()
	defer close(s.stopped)
	if s.shut.Load() {
		return s.s.Run(ctx) // closed: it returns at once
	}
	err := s.fleet.Run(ctx, s.s.Run)
	s.flush(ctx)
	s.fleet.Goodbye(ctx)
	return err
}

// Locks returns the Redlock the scheduler claims ticks with, for locks of
// your own over the same nodes, or for the nodes' state (NodeStates).
func (s *Scheduler) Locks() *mutex.Redlock { return s.locks }
