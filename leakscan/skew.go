package leakscan

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Bounds on a replica's clock offset from the nodes': past skewWarn it is
// logged; past skewRefuse, the 2 s of clock skew the lock's restart rule
// allows, the replica claims no new tick until it is back.
const (
	skewWarn   = time.Second
	skewRefuse = 2 * time.Second
)

// skew keeps the replica's clock offset from the nodes', as the last
// heartbeat measured it.
type skew struct {
	mu       sync.Mutex
	offset   time.Duration
	measured bool
	warned   time.Time // when an offset past skewWarn was last logged
}

// record keeps the median of offsets (the nodes that answered a heartbeat)
// and returns it; with no answer it keeps the last one.
func (k *skew) record(offsets []time.Duration) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(offsets) == 0 {
		return k.offset
	}
	slices.Sort(offsets)
	k.offset, k.measured = offsets[len(offsets)/2], true
	return k.offset
}

// check returns an error when the last offset measured is past skewRefuse.
func (k *skew) check(owner string) error {
	k.mu.Lock()
	offset, measured := k.offset, k.measured
	k.mu.Unlock()
	if measured && offset.Abs() > skewRefuse {
		return fmt.Errorf("owner %q's clock is %v off the nodes' (median of their TIME), beyond the %v of skew the lock allows: no tick is claimed until it is back",
			owner, offset.Round(time.Millisecond), skewRefuse)
	}
	return nil
}

// warnSkew logs an offset past skewWarn, at most once a minute while it
// lasts, and its return within the bound.
func (s *Scanner) warnSkew(ctx context.Context, offset time.Duration) {
	s.skew.mu.Lock()
	defer s.skew.mu.Unlock()
	switch {
	case offset.Abs() > skewWarn && time.Since(s.skew.warned) >= time.Minute:
		s.skew.warned = time.Now()
		level, what := slog.LevelWarn, "clock off the nodes'"
		if offset.Abs() > skewRefuse {
			level, what = slog.LevelError, "clock off the nodes': claiming no ticks"
		}
		s.cfg.logger.LogAttrs(ctx, level, what, slog.String("owner", s.owner), slog.Duration("offset", offset))
	case offset.Abs() <= skewWarn && !s.skew.warned.IsZero():
		s.skew.warned = time.Time{}
		s.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "clock back within a second of the nodes'",
			slog.String("owner", s.owner), slog.Duration("offset", offset))
	}
}
