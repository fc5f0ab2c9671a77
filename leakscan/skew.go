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
// heartbeat that a quorum answered measured it.
type skew struct {
	mu       sync.Mutex
	offset   time.Duration
	measured bool
	level    int       // 0 within skewWarn, 1 past it, 2 past skewRefuse: as last logged
	logged   time.Time // when a level above 0 was last logged
}

// record keeps the median of offsets, the answers of a heartbeat, when at
// least quorum nodes answered (else the last one stays), and returns the
// offset kept. With an even count, of the two middle values the one closer
// to zero: one node's bad clock never decides alone.
func (k *skew) record(offsets []time.Duration, quorum int) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(offsets) < quorum || len(offsets) == 0 {
		return k.offset
	}
	slices.Sort(offsets)
	m := offsets[len(offsets)/2]
	if len(offsets)%2 == 0 {
		if lo := offsets[len(offsets)/2-1]; lo.Abs() < m.Abs() {
			m = lo
		}
	}
	k.offset, k.measured = m, true
	return m
}

// last returns the offset last measured, and whether one was.
func (k *skew) last() (time.Duration, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.offset, k.measured
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

// warnSkew logs each change of the offset's level (within 1 s, past it,
// past 2 s), and a level above 0 again at most once a minute while it
// lasts. It decides under the lock and logs after.
func (s *Scanner) warnSkew(ctx context.Context, offset time.Duration) {
	level := 0
	switch {
	case offset.Abs() > skewRefuse:
		level = 2
	case offset.Abs() > skewWarn:
		level = 1
	}
	s.skew.mu.Lock()
	changed := level != s.skew.level
	log := changed || level > 0 && time.Since(s.skew.logged) >= time.Minute
	s.skew.level = level
	if log && level > 0 {
		s.skew.logged = time.Now()
	}
	s.skew.mu.Unlock()
	if !log {
		return
	}
	attrs := []slog.Attr{slog.String("owner", s.owner), slog.Duration("offset", offset)}
	switch level {
	case 2:
		s.cfg.logger.LogAttrs(ctx, slog.LevelError, "clock off the nodes': claiming no ticks", attrs...)
	case 1:
		s.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "clock off the nodes'", attrs...)
	default:
		s.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "clock back within a second of the nodes'", attrs...)
	}
}
