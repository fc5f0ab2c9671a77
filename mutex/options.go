package mutex

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// Defaults of the options, each documented on its option.
const (
	defaultNodeTimeout = 250 * time.Millisecond
	defaultRetryDelay  = 100 * time.Millisecond
	defaultMaxTTL      = time.Minute
	defaultMaxHold     = 24 * time.Hour
	defaultStateTTL    = 7 * 24 * time.Hour
	defaultLedgerCap   = 20
	defaultLedgerTime  = 7 * 24 * time.Hour
)

// minTTLFactor is how many node timeouts a lock's TTL must span at least:
// room for an acquisition and its commit, and for extensions every TTL/3
// that can be retried before the lease runs out.
const minTTLFactor = 4

// Option configures a Redlock.
type Option func(*config) error

type config struct {
	prefix      string
	nodeTimeout time.Duration
	retryDelay  time.Duration
	maxTTL      time.Duration
	maxHold     time.Duration
	stateTTL    time.Duration
	ledgerCap   int
	ledgerTime  time.Duration
	fencing     bool
	trusted     bool
	ownerChecks []func(owner string, extending bool) error
	observers   []func(Event)
	logger      *slog.Logger
}

func defaults() config {
	return config{
		prefix:      engine.DefaultPrefix,
		nodeTimeout: defaultNodeTimeout,
		retryDelay:  defaultRetryDelay,
		maxTTL:      defaultMaxTTL,
		maxHold:     defaultMaxHold,
		stateTTL:    defaultStateTTL,
		ledgerCap:   defaultLedgerCap,
		ledgerTime:  defaultLedgerTime,
		fencing:     true,
		logger:      slog.New(slog.DiscardHandler),
	}
}

func optErr(opt, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidOption, opt, fmt.Sprintf(format, args...))
}

// WithKeyPrefix sets the prefix of every key (default "redcron"). A
// prefix is printable, without spaces, braces, glob characters (* ? [ ] \)
// or colons at either end, so that SCAN patterns built from it match only
// redcron's keys.
func WithKeyPrefix(prefix string) Option {
	return func(c *config) error {
		if _, err := engine.NewKeyspace(prefix); err != nil {
			return optErr("WithKeyPrefix", "%v", err)
		}
		c.prefix = prefix
		return nil
	}
}

// WithNodeTimeout bounds the wait for one node's answer (default 250ms,
// range [1ms, 10s]). Acquisitions are decided as soon as a quorum answers,
// so the timeout only costs time when a slow node's vote is needed; it
// also counts the time a call waits behind others to the same node, so
// too small a value turns load into timeouts and retries. A TryLockAll
// batch of n locks waits (n-1) × 200µs longer, for the servers' work on
// it and on the other replicas' batches. A lock's TTL must be at least 4
// times this timeout.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond || d > 10*time.Second {
			return optErr("WithNodeTimeout", "%v is outside [1ms, 10s]", d)
		}
		c.nodeTimeout = d
		return nil
	}
}

// WithRetryDelay sets how long a waiting Lock waits, on average, for the
// notification of a release before it tries again anyway (default 100ms,
// range [1ms, 1m]); each delay is drawn uniformly from [d/2, 3d/2). A lock
// claiming an occurrence is tried again after every such delay.
func WithRetryDelay(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond || d > time.Minute {
			return optErr("WithRetryDelay", "%v is outside [1ms, 1m]", d)
		}
		c.retryDelay = d
		return nil
	}
}

// WithMaxTTL sets the largest TTL a lock may ask for (default 1m, range
// [10ms, 24h], and New also refuses a max TTL below 4 × the node timeout,
// the shortest TTL a lock may ask for: 1s with the default node timeout).
// A node that restarted less than this long ago (plus a
// second, for the resolution of Redis's uptime) is not counted (see
// WithTrustedNodes), so it is also how long a brand-new or restarted node
// waits before it votes.
func WithMaxTTL(d time.Duration) Option {
	return func(c *config) error {
		if d < 10*time.Millisecond || d > 24*time.Hour {
			return optErr("WithMaxTTL", "%v is outside [10ms, 24h]", d)
		}
		c.maxTTL = d
		return nil
	}
}

// WithMaxHold bounds how long KeepAlive keeps extending one lock (default
// 24h, at least 1ms). Past it the lease runs out and its holder is told the
// lock was lost; this bounds how long one holder can starve the others.
func WithMaxHold(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return optErr("WithMaxHold", "%v is below 1ms", d)
		}
		c.maxHold = d
		return nil
	}
}

// WithStateTTL sets how long a lock's state (fence counter, occurrence
// mark) is kept after its last acquisition (default 7 days, at least 5m;
// New also wants it at least a minute longer than the max TTL and 2 s).
// The state is its shard's (one of 64), kept after the shard's last
// acquisition for the longest state TTL any locker of the shard asked.
// After it a name's fence counter starts over from the time floor, which
// keeps tokens increasing. An occurrence can be claimed only while its mark
// would still be kept: up to MaxReach after it.
func WithStateTTL(d time.Duration) Option {
	return func(c *config) error {
		if d < minStateTTL {
			return optErr("WithStateTTL", "%v is below %v", d, minStateTTL)
		}
		c.stateTTL = d
		return nil
	}
}

// WithLedger sets how much of each lock's ledger the nodes keep (default
// the newest 20 records per lock, of the last 7 days; records 0 turns the
// ledger off). The ledger is a sorted set beside the lock, shared by the
// locks of its shard (one of 64), which keeps its newest records times
// its locks: a lock run rarely beside locks run often keeps fewer. Every
// acquisition's commit adds a record (owner, occurrence, fence, start), and its release
// replaces it with the holder's final record (end, and a scheduler's run's
// result, error, tries and start delay), on every node, in the same script calls, so that it
// costs no round trip. records is at most 10,000; window is 1 m to 400
// days. A record is a few hundred bytes on every node.
func WithLedger(records int, window time.Duration) Option {
	return func(c *config) error {
		switch {
		case records < 0 || records > maxLedgerCap:
			return optErr("WithLedger", "%d records: want 0 (off) to %d", records, maxLedgerCap)
		case records > 0 && (window < time.Minute || window > maxLedgerTime):
			return optErr("WithLedger", "window %v: want 1m to %v", window, maxLedgerTime)
		}
		c.ledgerCap, c.ledgerTime = records, window
		return nil
	}
}

// The bounds of WithLedger.
const (
	maxLedgerCap  = 10000
	maxLedgerTime = 400 * 24 * time.Hour
)

// minStateTTL is the shortest state TTL: it must outlive the max TTL and
// the clock skew margin, and leave a few minutes to claim an occurrence in.
const minStateTTL = 5 * time.Minute

// WithFencing turns fencing tokens on or off (default on). With fencing
// off, Fence returns 0 and an acquisition without an occurrence costs one
// round trip less: use it for locks that only save work.
func WithFencing(on bool) Option {
	return func(c *config) error {
		c.fencing = on
		return nil
	}
}

// WithTrustedNodes declares that the nodes never lose acknowledged writes
// (appendonly with appendfsync always), so a node that restarted recently
// votes at once. By default it does not vote until its uptime reaches the
// maximum TTL.
func WithTrustedNodes() Option {
	return func(c *config) error {
		c.trusted = true
		return nil
	}
}

// WithOwnerCheck makes every acquisition attempt and extension of a lock
// with an owner call check(owner, extending) first: an error refuses the
// attempt (ErrNoQuorum, no node asked) or fails the extension, which a
// KeepAlive retries until the lease runs out. leakscan.Scanner.Check is
// such a check: it refuses an owner whose heartbeat is stale, and new
// leases to one whose clock is too far from the nodes'. It may be given
// more than once: every check must pass, in the order given. The default
// is none.
func WithOwnerCheck(check func(owner string, extending bool) error) Option {
	return func(c *config) error {
		if check == nil {
			return optErr("WithOwnerCheck", "nil function")
		}
		c.ownerChecks = append(c.ownerChecks, check)
		return nil
	}
}

// WithObserver adds a function called with every lock event (default
// none). It is called synchronously from the goroutine doing the
// operation, possibly from several at once: it must be safe for concurrent
// use and must not block. It may be given more than once: each function
// receives every event, in the order given.
func WithObserver(o func(Event)) Option {
	return func(c *config) error {
		if o == nil {
			return optErr("WithObserver", "nil function")
		}
		c.observers = append(c.observers, o)
		return nil
	}
}

// WithLogger sets the logger (default: discards everything).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return optErr("WithLogger", "nil logger")
		}
		c.logger = l
		return nil
	}
}

// LockOption configures one acquisition.
type LockOption func(*lockConfig)

type lockConfig struct {
	occurrence int64
	owner      string
	ticket     string
	permits    int // Permits; 0: a lock
}

// Occurrence makes the acquisition claim the occurrence at: it is refused
// (ErrAlreadyRun) if at, or a later occurrence, was already claimed; an
// occurrence older than MaxReach is refused at once (ErrInvalidOption),
// since its mark may have expired; a claim more than the max TTL before
// its occurrence is unsafe (a restarted node could not vouch for it); and on
// success at is recorded on a majority of nodes. at is kept to the
// millisecond; the zero time means no occurrence.
func Occurrence(at time.Time) LockOption {
	return func(c *lockConfig) {
		if !at.IsZero() {
			c.occurrence = max(at.UnixMilli(), 1)
		}
	}
}

// Owner sets the owner id stored in this lock's value (default none),
// which the leak scan reports. With the leak scan (package leakscan), the
// owner must keep its heartbeat alive while it holds the lock, or the scan
// takes the lock for an orphan; locks without an owner are never orphaned.
func Owner(owner string) LockOption {
	return func(c *lockConfig) {
		c.owner = owner
	}
}
