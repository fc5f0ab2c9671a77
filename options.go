package redcron

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

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
			return config{}, fmt.Errorf("%w: option %d is nil", mutex.ErrInvalidOption, i)
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
			return fmt.Errorf("%w: WithLogger: nil logger", mutex.ErrInvalidOption)
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
			return fmt.Errorf("%w: WithMetrics: nil registerer", mutex.ErrInvalidOption)
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
			return fmt.Errorf("%w: WithRedisOptions: nil function", mutex.ErrInvalidOption)
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
