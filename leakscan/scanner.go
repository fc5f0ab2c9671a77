package leakscan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/duehook"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/mutex"
)

// Scanner keeps one replica's heartbeat and, one replica at a time, scans
// the nodes of a Redlock for leaked locks. Create it with New; it is safe
// for concurrent use.
type Scanner struct {
	r       *lockwire.Redlock // what the Redlock hands over
	nodes   []*engine.Node
	keys    engine.Keyspace
	quorum  int
	owner   string
	cfg     config
	beats   beats
	skew    skew
	leaks   leaks.Scanner
	now     func() time.Time // the replica's clock, for its offset from the nodes'
	started time.Time        // when New made it: the replica's start, as its heartbeat says
}

// Event is a heartbeat or a scan of a Scanner, for metrics.
type Event struct {
	// Scan is true for a scan, false for a heartbeat.
	Scan bool
	// Nodes is every node's error for a heartbeat, by node name (nil: the
	// node took it).
	Nodes map[string]error
	// Leaks counts a scan's leaked locks by class (no_expiry, orphaned,
	// minority, over_age, unparseable), every class present.
	Leaks map[string]int
	// Offset is, for a heartbeat, this replica's clock minus the nodes'
	// (the median over the nodes that answered, each read with TIME in
	// the heartbeat's round trip, at the middle of it): positive when the
	// replica is ahead. Past 1 s it is logged; past 2 s the replica claims
	// no tick until it is back (see Check).
	Offset time.Duration
	// JobTables is, for a scan, how many distinct job tables the live
	// replicas publish in their heartbeats (WithReplicaInfo): 1 when they
	// all run the same jobs; more during a deploy, or when a replica
	// misses a job or runs it on another schedule (logged, naming the
	// replicas and their digests); 0 when none publishes one.
	JobTables int
	// Missed counts, for a scan, the ticks it found that ran on no
	// replica (the front door's scans check; see docs/missed-ticks.md),
	// by job and reason (the reason most replicas reported in their
	// heartbeats: paused, overlap, no_quorum...; or no_report); each tick
	// is counted once, by the first scan to find it.
	Missed map[string]map[string]int
	// Duration is how long the heartbeat or the scan took.
	Duration time.Duration
	// Err says why the heartbeat or the scan failed.
	Err error
}

// Option configures New.
type Option func(*config) error

type config struct {
	interval  time.Duration // between scans; 0: none
	beatEvery time.Duration
	beatTTL   time.Duration
	logger    *slog.Logger
	observers []func(Event)
	version   string        // the replica's, in its heartbeat
	jobTable  func() string // the digest of its job table, in its heartbeat; nil: none
}

// WithInterval sets how often Run scans (one replica at a time: the one
// that set the scan-turn key on a majority of the nodes). The default is 5 minutes; 0
// turns periodic scans off; otherwise at least a second.
func WithInterval(every time.Duration) Option {
	return func(c *config) error {
		if every != 0 && every < time.Second {
			return fmt.Errorf("%w: WithInterval: %v is below 1s", mutex.ErrInvalidOption, every)
		}
		c.interval = every
		return nil
	}
}

// WithHeartbeat sets how often Run publishes the owner's heartbeat and for
// how long each counts. interval must be at least a second (it bounds each
// heartbeat's call too), and ttl at least twice interval, so that the next
// heartbeat lands before the last expires. The owner's leases are neither
// won nor extended while its last successful heartbeat is older than ttl
// (see Check). The defaults are 5 s and 15 s.
func WithHeartbeat(interval, ttl time.Duration) Option {
	return func(c *config) error {
		if interval < time.Second {
			return fmt.Errorf("%w: WithHeartbeat: interval %v is less than a second", mutex.ErrInvalidOption, interval)
		}
		if ttl < 2*interval {
			return fmt.Errorf("%w: WithHeartbeat: ttl %v is less than twice the interval %v", mutex.ErrInvalidOption, ttl, interval)
		}
		c.beatEvery, c.beatTTL = interval, ttl
		return nil
	}
}

// WithLogger logs failed heartbeats and scans, and leaked locks. The
// default is silent.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("%w: WithLogger: nil logger", mutex.ErrInvalidOption)
		}
		c.logger = l
		return nil
	}
}

// WithReplicaInfo sets what the replica's heartbeat says about it besides
// its instance id, start and clock offset: version, its build (by default
// the main module's version in the build info, or "(devel)"; at most 100
// bytes), and jobTable, which returns a short digest of its job table and
// is called at every heartbeat (by default none is published). The scan
// reports live replicas whose digests differ (Event.JobTables), as during
// a deploy or when a replica misses a job. An empty version or a nil
// jobTable keeps what was set before: redcron.New sets the digest of its
// scheduler's jobs, and WithReplicaInfo(v, nil), passed through its
// WithLeakScanOptions, sets the version alone.
func WithReplicaInfo(version string, jobTable func() string) Option {
	return func(c *config) error {
		if len(version) > 100 {
			return fmt.Errorf("%w: WithReplicaInfo: version %.20q... is longer than 100 bytes", mutex.ErrInvalidOption, version)
		}
		if version != "" {
			c.version = version
		}
		if jobTable != nil {
			c.jobTable = jobTable
		}
		return nil
	}
}

// WithObserver adds a function called with every heartbeat and scan of
// Run, from Run's goroutines; it must not block. The default is none.
func WithObserver(f func(Event)) Option {
	return func(c *config) error {
		if f == nil {
			return fmt.Errorf("%w: WithObserver: nil function", mutex.ErrInvalidOption)
		}
		c.observers = append(c.observers, f)
		return nil
	}
}

// New returns a Scanner over r's nodes for the replica owner (its instance
// id, the owner of its locks), or, with owner empty, a Scanner that only
// scans and fixes, as an admin command does. It does no I/O.
func New(r *mutex.Redlock, owner string, opts ...Option) (*Scanner, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: New: nil Redlock", mutex.ErrInvalidOption)
	}
	cfg := config{interval: 5 * time.Minute, beatEvery: 5 * time.Second, beatTTL: 15 * time.Second,
		logger: slog.New(slog.DiscardHandler), version: engine.MainVersion()}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: New: option %d is nil", mutex.ErrInvalidOption, i)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	w := lockwire.Of(r)
	keys, err := engine.NewKeyspace(w.KeyPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", mutex.ErrInvalidOption, err)
	}
	s := &Scanner{r: w, keys: keys, owner: owner, cfg: cfg, now: time.Now, started: time.Now(), nodes: w.Nodes}
	s.quorum = len(s.nodes)/2 + 1
	s.leaks = leaks.Scanner{Nodes: s.nodes, Keys: keys, Quorum: s.quorum, MaxAge: w.MaxHold,
		Settle: 10 * time.Second, Logger: cfg.logger}
	return s, nil
}

// Run publishes the owner's heartbeat at once and then at the heartbeat
// interval, and scans at the scan interval (the first after a random delay
// of up to one interval, so that replicas started together take turns),
// until ctx is done. Without an owner it only scans. The front door
// (package redcron) also has it check for missed ticks in its scans.
func (s *Scanner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if s.owner != "" {
		wg.Go(func() { s.heartbeats(ctx) })
	}
	if s.cfg.interval > 0 {
		wg.Go(func() { s.scans(ctx) })
	}
	wg.Wait()
}

// scans runs a scan under the scan lock at every interval until ctx is
// done, and reports each.
func (s *Scanner) scans(ctx context.Context) {
	every := s.cfg.interval
	timer := time.NewTimer(every/2 + rand.N(every/2+1))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		sctx, cancel := context.WithTimeout(ctx, every)
		s.scanOnce(sctx)
		cancel()
		timer.Reset(every)
	}
}

// scanOnce scans in its turn, unless another replica has it, and reports
// the counts by class; given a scheduler's ticks due (internal/duehook,
// as the front door wires it), it then checks for missed ticks,
// still in its turn, when a majority of the nodes were scanned. A scan
// that could not read every node fails: its counts would hide the leaks
// of the nodes it missed.
func (s *Scanner) scanOnce(ctx context.Context) {
	start := time.Now()
	giveBack, err := s.takeTurn(ctx, s.cfg.interval)
	if errors.Is(err, errNotMyTurn) {
		s.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "leak scan: another replica's turn")
		return
	}
	var rep *leaks.Report
	var missed map[string]map[string]int
	if err == nil {
		rep, err = s.leaks.Scan(ctx)
		if h := duehook.FromContext(ctx); err == nil && h != nil && rep.Nodes-len(rep.Errors) >= s.quorum {
			missed = s.checkMissed(ctx, rep, h)
		}
		giveBack()
	}
	if err == nil && len(rep.Errors) > 0 {
		err = fmt.Errorf("leakscan: %d of %d nodes could not be scanned: %w", len(rep.Errors), rep.Nodes, errors.Join(rep.Errors...))
	}
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "leak scan failed", slog.Any("error", err))
			s.emit(Event{Scan: true, Duration: time.Since(start), Missed: missed, Err: err})
		}
		return
	}
	attrs := make([]slog.Attr, 0, len(rep.Counts)+1)
	total := 0
	for _, c := range leaks.AllClasses() {
		total += rep.Counts[c.String()]
		attrs = append(attrs, slog.Int(c.String(), rep.Counts[c.String()]))
	}
	level := slog.LevelDebug
	if total > 0 {
		level = slog.LevelWarn
	}
	s.cfg.logger.LogAttrs(ctx, level, "leak scan", append(attrs, slog.Int("leaked", total))...)
	s.emit(Event{Scan: true, Duration: time.Since(start), Leaks: rep.Counts, JobTables: s.jobTables(ctx, rep), Missed: missed})
}

func (s *Scanner) emit(e Event) {
	for _, f := range s.cfg.observers {
		f(e)
	}
}
