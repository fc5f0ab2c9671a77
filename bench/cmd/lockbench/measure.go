package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redcron/redcron/bench/internal/stats"
)

// round is the outcome of one timed measurement of one implementation.
type round struct {
	ops      int           // cycles completed, acquired or not
	acquired int           // cycles that got the lock
	errors   int           // cycles that failed for another reason than a held lock
	firstErr error         // the first of those errors
	elapsed  time.Duration // wall time of the measurement
	p50, p99 time.Duration // cycle latency percentiles
}

func (r round) opsPerSec() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// cycle makes one attempt to acquire the lock called name and, if it got
// it, releases it.
func cycle(ctx context.Context, l locks.Locker, name string) (acquired bool, err error) {
	h, err := l.TryLock(ctx, name)
	if h == nil || err != nil {
		return false, err
	}
	if err := h.Release(ctx); err != nil {
		return true, errors.Join(errors.New("release"), err)
	}
	return true, nil
}

// measure runs l for d with one goroutine per entry of names, goroutine g
// cycling through the lock names names[g]. A cycle started before the
// deadline is completed and counted.
func measure(ctx context.Context, l locks.Locker, names [][]string, d time.Duration) round {
	type tally struct {
		lat              []time.Duration
		acquired, errors int
		firstErr         error
	}
	tallies := make([]tally, len(names))
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for g, ns := range names {
		wg.Go(func() {
			t := &tallies[g]
			for i := 0; ctx.Err() == nil; i++ {
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				ok, err := cycle(ctx, l, ns[i%len(ns)])
				t.lat = append(t.lat, time.Since(t0))
				switch {
				case err != nil:
					t.errors++
					if t.firstErr == nil {
						t.firstErr = err
					}
				case ok:
					t.acquired++
				}
			}
		})
	}
	wg.Wait()

	r := round{elapsed: time.Since(start)}
	var lat []time.Duration
	for _, t := range tallies {
		lat = append(lat, t.lat...)
		r.acquired += t.acquired
		r.errors += t.errors
		if r.firstErr == nil {
			r.firstErr = t.firstErr
		}
	}
	slices.Sort(lat)
	r.ops = len(lat)
	r.p50, r.p99 = stats.Percentile(lat, 0.50), stats.Percentile(lat, 0.99)
	return r
}
