package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redcron/redcron/bench/internal/machine"
	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/bench/internal/table"
	"github.com/redis/go-redis/v9"
)

// wakeResult is one implementation's wake latencies on one node count,
// over all rounds.
type wakeResult struct {
	nodes    int
	impl     string
	lat      []time.Duration
	errors   int
	firstErr error
}

// wakeBench measures, for every node count and every implementation that
// can wait (locks.Waiter), cfg.wake waits per round: a holder (a Locker of
// its own) takes a lock, a waiter calls Lock on it and, once it waits, the
// holder releases it; the wake latency is from just before the release to
// the waiter's return. The implementations take turns within each round,
// as in the throughput benchmark.
func wakeBench(ctx context.Context, cfg config, clients []*redis.Client, progress io.Writer) ([]wakeResult, error) {
	var out []wakeResult
	for _, n := range cfg.nodes {
		var impls []locks.Impl
		var holders []locks.Locker
		var waiters []locks.Waiter
		for _, im := range cfg.impls {
			if im.SingleNode && n > 1 {
				continue
			}
			h, err := im.New(clients[:n])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", im.Name, err)
			}
			wl, err := im.New(clients[:n])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", im.Name, err)
			}
			if w, ok := wl.(locks.Waiter); ok {
				impls, holders, waiters = append(impls, im), append(holders, h), append(waiters, w)
			}
		}
		res := make([]wakeResult, len(impls))
		for r := range cfg.rounds {
			fmt.Fprintf(progress, "wake, nodes=%d: round %d/%d\n", n, r+1, cfg.rounds)
			for k := range impls {
				i := (r + k) % len(impls)
				res[i].nodes, res[i].impl = n, impls[i].Name
				for j := range cfg.wake {
					lat, err := wakeOnce(ctx, holders[i], waiters[i], fmt.Sprintf("wake-%d-%d", r, j))
					if err != nil {
						res[i].errors++
						if res[i].firstErr == nil {
							res[i].firstErr = err
						}
						continue
					}
					res[i].lat = append(res[i].lat, lat)
				}
				locks.FlushAfter(ctx, impls[i].Name, holders[i], progress)
				locks.FlushAfter(ctx, impls[i].Name, waiters[i].(locks.Locker), progress)
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("interrupted: %w", err)
				}
			}
		}
		out = append(out, res...)
	}
	return out, nil
}

// wakeOnce makes one wait: the holder takes name, the waiter waits for it
// from 20 to 40 ms (a random time, so that a waiter that polls is caught
// at a random phase of its polling), and the holder releases it. It
// returns the time from just before the release to the waiter's return.
func wakeOnce(ctx context.Context, holder locks.Locker, waiter locks.Waiter, name string) (time.Duration, error) {
	h, err := holder.TryLock(ctx, name)
	if err != nil || h == nil {
		return 0, errors.Join(errors.New("the holder did not get the lock"), err)
	}
	type got struct {
		at  time.Time
		h   locks.Held
		err error
	}
	ch := make(chan got, 1)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() {
		wh, err := waiter.Lock(wctx, name)
		ch <- got{time.Now(), wh, err}
	}()
	select { // the waiter waits meanwhile: a benchmark's pause, not a synchronisation
	case <-time.After(20*time.Millisecond + rand.N(20*time.Millisecond)):
	case <-ctx.Done():
	}
	start := time.Now()
	if err := h.Release(ctx); err != nil {
		return 0, errors.Join(errors.New("the holder's release"), err)
	}
	g := <-ch
	if g.err != nil {
		return 0, errors.Join(errors.New("the waiter"), g.err)
	}
	lat := g.at.Sub(start)
	if err := g.h.Release(ctx); err != nil {
		return 0, errors.Join(errors.New("the waiter's release"), err)
	}
	return lat, nil
}

// writeWake writes the wake latencies' table.
func writeWake(w io.Writer, m machine.Machine, cfg config, rs []wakeResult) {
	m.WriteHeader(w)
	fmt.Fprintf(w, "run:     wake latency, %d waits per implementation and round, %d rounds, interleaved\n\n", cfg.wake, cfg.rounds)
	tw := table.New(w)
	fmt.Fprintln(tw, "nodes\timpl\twaits\tp50 µs\tp99 µs\tmax µs\terrors")
	for _, r := range rs {
		slices.Sort(r.lat)
		if len(r.lat) == 0 {
			fmt.Fprintf(tw, "%d\t%s\t0\t-\t-\t-\t%d\n", r.nodes, r.impl, r.errors)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%.0f\t%.0f\t%d\n", r.nodes, r.impl, len(r.lat),
			stats.Micros(stats.Percentile(r.lat, 0.50)), stats.Micros(stats.Percentile(r.lat, 0.99)), stats.Micros(r.lat[len(r.lat)-1]), r.errors)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nwake latency: from just before the holder's release to the return of the waiter's Lock (the holder's release round trip included).")
	for _, r := range rs {
		if r.firstErr != nil {
			fmt.Fprintf(w, "  %d nodes, %s: first error: %v\n", r.nodes, r.impl, r.firstErr)
		}
	}
}
