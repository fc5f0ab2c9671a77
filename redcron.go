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
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

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
// scheduler runs, and closes the clients New made when it returns.
type Scheduler struct {
	s       *scheduler.Scheduler
	locks   *mutex.Redlock
	scan    *leakscan.Scanner
	table   *jobTable // the digest its heartbeat publishes
	log     *slog.Logger
	owned   []*redis.Client // the clients New made
	started atomic.Bool     // Run was called
	shut    atomic.Bool     // Shutdown was called
	close   sync.Once
}

// Add registers a job: see scheduler.Scheduler.Add.
func (s *Scheduler) Add(name, spec string, job scheduler.JobFunc, opts ...scheduler.JobOption) error {
	defer s.table.changed()
	return s.s.Add(name, spec, job, opts...)
}

// Remove unregisters a job: see scheduler.Scheduler.Remove.
func (s *Scheduler) Remove(name string) error {
	defer s.table.changed()
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
// Run was never called, it closes the clients New made.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.shut.Store(true)
	err := s.s.Shutdown(ctx)
	s.flush(ctx)
	if !s.started.Load() {
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
// its errors for bad input match ErrInvalidOption and name what is wrong.
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
		return nil, fmt.Errorf("%w: New: no node addresses", ErrInvalidOption)
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
// ErrInvalidOption.
func NewWithClients(clients []redis.UniversalClient, opts ...Option) (*Scheduler, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: NewWithClients: no clients", ErrInvalidOption)
	}
	names := make([]string, len(clients))
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("%w: NewWithClients: client %d is nil", ErrInvalidOption, i)
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

// build wires the nodes, the Redlock, the scheduler and the metrics. An
// option the packages underneath refuse matches ErrInvalidOption too; the
// metrics are registered last, so that a refusal leaves the registerer as
// it was.
func build(names []string, clients []redis.UniversalClient, cfg config) (*Scheduler, error) {
	invalid := func(err error) error {
		if errors.Is(err, mutex.ErrInvalidOption) || errors.Is(err, scheduler.ErrInvalidOption) ||
			errors.Is(err, metrics.ErrInvalidOption) || errors.Is(err, leakscan.ErrInvalidOption) {
			return fmt.Errorf("%w: %w", ErrInvalidOption, err)
		}
		return err
	}
	nodes := make([]*store.Node, len(clients))
	for i, c := range clients {
		n, err := store.NewNode(names[i], c)
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrInvalidOption, i, err)
		}
		nodes[i] = n
	}
	// The scanner checks the owner's heartbeat before each acquisition and
	// extension; it is made after the Redlock it scans.
	var scan *leakscan.Scanner
	lockOpts := append([]mutex.Option{mutex.WithLogger(cfg.logger),
		mutex.WithOwnerCheck(func(owner string, extending bool) error { return scan.Check(owner, extending) })}, cfg.lock...)
	// The heartbeat publishes the digest of the scheduler's jobs (made
	// below) and its skips; options given with WithLeakScanOptions come
	// after.
	table := &jobTable{}
	skipped, tie := housekeeping(table, &scan)
	schedOpts := append([]scheduler.Option{scheduler.WithLogger(cfg.logger), skipped}, cfg.scheduler...)
	scanOpts := append([]leakscan.Option{leakscan.WithLogger(cfg.logger)}, append(tie, cfg.leakscan...)...)
	var m *metrics.Collector
	if cfg.registerer != nil {
		var err error
		if m, err = metrics.New(metrics.WithNodes(names...)); err != nil {
			return nil, invalid(err)
		}
		lockOpts = append(lockOpts, mutex.WithObserver(m.LockObserver()))
		schedOpts = append(schedOpts, scheduler.WithObserver(m.SchedulerObserver()))
		scanOpts = append(scanOpts, leakscan.WithObserver(m.LeakObserver()))
	}
	locks, err := mutex.New(nodes, lockOpts...)
	if err != nil {
		return nil, invalid(err)
	}
	s, err := scheduler.New(scheduler.NewRedlockLocker(locks), schedOpts...)
	if err != nil {
		return nil, invalid(err)
	}
	table.s = s
	if scan, err = leakscan.New(locks, s.InstanceID(), scanOpts...); err != nil {
		return nil, invalid(err)
	}
	if m != nil {
		if err := cfg.registerer.Register(m); err != nil {
			return nil, fmt.Errorf("redcron: registering the metrics: %w", err)
		}
	}
	return &Scheduler{s: s, locks: locks, scan: scan, table: table, log: cfg.logger}, nil
}

// Run runs the scheduler until ctx is done or Shutdown is called (see
// scheduler.Scheduler.Run), then closes the clients New made. Before the
// first tick it logs the state of each node (mutex.Redlock.LogNodes). A
// second call returns the scheduler's error at once and closes nothing.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return s.s.Run(ctx)
	}
	defer s.closeClients()
	if s.shut.Load() {
		return s.s.Run(ctx) // closed: it returns at once
	}
	s.locks.LogNodes(ctx)
	scanCtx, stopScan := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { s.scan.Run(scanCtx) })
	wg.Go(func() { s.takeTriggers(scanCtx) })
	wg.Go(func() { s.publishJobTable(scanCtx) })
	err := s.s.Run(ctx)
	stopScan()
	wg.Wait()
	s.flush(ctx)
	return err
}

// Locks returns the Redlock the scheduler claims ticks with, for locks of
// your own over the same nodes, or for the nodes' state (NodeStates).
func (s *Scheduler) Locks() *mutex.Redlock { return s.locks }

// ErrInvalidOption is matched by the error of New and NewWithClients for a
// bad option or argument, which it names, including the options of the
// packages underneath.
var ErrInvalidOption = errors.New("redcron: invalid option")

// Option configures New and NewWithClients.
type Option func(*config) error

type config struct {
	logger       *slog.Logger
	registerer   prometheus.Registerer
	redisOptions []func(*redis.Options)
	lock         []mutex.Option
	scheduler    []scheduler.Option
	leakscan     []leakscan.Option
}

func newConfig(opts []Option) (config, error) {
	cfg := config{logger: slog.New(slog.DiscardHandler)}
	for i, o := range opts {
		if o == nil {
			return config{}, fmt.Errorf("%w: option %d is nil", ErrInvalidOption, i)
		}
		if err := o(&cfg); err != nil {
			return config{}, err
		}
	}
	return cfg, nil
}

// WithLogger logs through l: the scheduler's runs and skips, and the
// nodes' state as it changes. The default is silent.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger: nil logger", ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}

// WithMetrics registers the Prometheus collector (package metrics) on reg,
// with a series per node. The default is no metrics.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(c *config) error {
		if reg == nil {
			return fmt.Errorf("%w: WithMetrics: nil registerer", ErrInvalidOption)
		}
		c.registerer = reg
		return nil
	}
}

// WithRedisOptions calls f on the options of each client New makes, after
// redcron's own settings: set Password, Username or TLSConfig there. It
// has no effect with NewWithClients.
func WithRedisOptions(f func(*redis.Options)) Option {
	return func(c *config) error {
		if f == nil {
			return fmt.Errorf("%w: WithRedisOptions: nil function", ErrInvalidOption)
		}
		c.redisOptions = append(c.redisOptions, f)
		return nil
	}
}

// WithLockOptions passes options to the Redlock (mutex.New): the max TTL,
// trusted nodes, the key prefix, the state TTL, and so on.
func WithLockOptions(opts ...mutex.Option) Option {
	return func(c *config) error {
		c.lock = append(c.lock, opts...)
		return nil
	}
}

// WithSchedulerOptions passes options to the scheduler (scheduler.New):
// seconds in specs, the time zone, the instance id, lock-ahead, observers,
// and so on.
func WithSchedulerOptions(opts ...scheduler.Option) Option {
	return func(c *config) error {
		c.scheduler = append(c.scheduler, opts...)
		return nil
	}
}

// WithLeakScanOptions passes options to the leak scanner (leakscan.New):
// the scan interval (0 turns periodic scans off), the heartbeat interval
// and TTL, observers, the version the heartbeat publishes
// (leakscan.WithReplicaInfo(version, nil); the job table's digest is the
// scheduler's).
func WithLeakScanOptions(opts ...leakscan.Option) Option {
	return func(c *config) error {
		c.leakscan = append(c.leakscan, opts...)
		return nil
	}
}

// housekeeping returns the options that tie the scheduler to the leak
// scanner (*scan, once made): the scheduler's skips go to the heartbeat,
// and the heartbeat carries the digest of its job table; the missed-tick
// check reads the ticks due from the scheduler.
func housekeeping(table *jobTable, scan **leakscan.Scanner) (scheduler.Option, []leakscan.Option) {
	skipped := scheduler.WithObserver(func(e scheduler.Event) {
		if e.Kind == "skipped" {
			(*scan).Skipped(e.Job, e.Tick, e.Skip)
		}
	})
	due := func(from, to time.Time) map[string][]time.Time { return table.s.Due(from, to) }
	return skipped, []leakscan.Option{leakscan.WithReplicaInfo("", table.get), leakscan.WithDue(due)}
}
