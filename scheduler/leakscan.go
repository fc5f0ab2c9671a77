package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"
)

// scanLeaks runs the leak scan at the configured interval, with a random
// first delay of up to one interval so that replicas started together do
// not contend for the scan's lock every time, until ctx is done.
func (s *Scheduler) scanLeaks(ctx context.Context, ls LeakScanner) {
	every := s.cfg.leakScanInterval
	timer := time.NewTimer(every/2 + rand.N(every/2+1))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		sctx, cancel := context.WithTimeout(ctx, every)
		leaks, err := ls.ScanLeaks(sctx)
		cancel()
		timer.Reset(every)
		switch {
		case errors.Is(err, ErrHeld):
			continue // another replica is scanning
		case err != nil:
			if ctx.Err() == nil {
				s.log.LogAttrs(ctx, slog.LevelWarn, "leak scan failed", slog.Any("error", err))
				s.emit(Event{Kind: EventLeakScan, Duration: time.Since(start), Err: err})
			}
			continue
		}
		total := 0
		attrs := make([]slog.Attr, 0, len(leaks)+1)
		for class, n := range leaks {
			total += n
			attrs = append(attrs, slog.Int(class, n))
		}
		level := slog.LevelDebug
		if total > 0 {
			level = slog.LevelWarn
		}
		s.log.LogAttrs(ctx, level, "leak scan", append(attrs, slog.Int("leaked", total))...)
		s.emit(Event{Kind: EventLeakScan, Duration: time.Since(start), Leaks: leaks})
	}
}
