package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/internal/engine"
)

// namesCycled is how many lock names a measurement cycles through.
const namesCycled = 64

// key names one implementation in one condition.
type key struct{ cond, impl string }

// round is one timed measurement of one implementation in one condition:
// one goroutine making acquire+release cycles back to back.
type round struct {
	acquire  []time.Duration // TryLock latency of every cycle, sorted
	release  []time.Duration // Release latency of every acquired cycle, sorted
	acquired int
	errors   int // TryLock failures other than a refusal
	relErrs  int // Release failures
	firstErr error
	// first is the traffic of the first node over the round, for the
	// implementations that report it (redcron).
	first    engine.Stats
	hasFirst bool
}

// measure runs cycles of l until d has passed and it made at least
// minSamples of them, starting one every interval (or at once when the
// previous one took longer). A cycle started before then is completed.
func measure(ctx context.Context, l locks.Locker, prefix string, d, interval time.Duration, minSamples int) round {
	var r round
	ns, hasStats := l.(locks.NodeStatser)
	var before engine.Stats
	if hasStats {
		before = ns.NodeStats()[0]
	}
	deadline := time.Now().Add(d)
	next := time.Now()
	for i := 0; ctx.Err() == nil && (time.Now().Before(deadline) || len(r.acquire) < minSamples); i++ {
		if wait := time.Until(next); wait > 0 {
			time.Sleep(wait)
		}
		name := fmt.Sprintf("%s-%d", prefix, i%namesCycled)
		t0 := time.Now()
		next = t0.Add(interval)
		h, err := l.TryLock(ctx, name)
		t1 := time.Now()
		r.acquire = append(r.acquire, t1.Sub(t0))
		switch {
		case err != nil:
			r.errors++
			if r.firstErr == nil {
				r.firstErr = err
			}
		case h != nil:
			r.acquired++
			err := h.Release(ctx)
			r.release = append(r.release, time.Since(t1))
			if err != nil {
				r.relErrs++
				if r.firstErr == nil {
					r.firstErr = fmt.Errorf("release: %w", err)
				}
			}
		}
	}
	slices.Sort(r.acquire)
	slices.Sort(r.release)
	if hasStats {
		after := ns.NodeStats()[0]
		r.hasFirst = true
		r.first = engine.Stats{Calls: after.Calls - before.Calls, Pipelines: after.Pipelines - before.Pipelines,
			Failed: after.Failed - before.Failed, Skipped: after.Skipped - before.Skipped}
	}
	return r
}

// benchmark measures every implementation in every condition. Every round
// runs each (condition, implementation) pair once, in the order roundOrder
// gives: the conditions and, within each, the implementations in an order
// that rotates from round to round. The first node of the slow, dead and hung
// conditions is made bad after a first warm-up (so that connections and
// script caches are warm, as on a node that fails in service), and each
// pair is warmed up again after that. After each measurement, outside its
// timed part, the implementation's background calls are flushed
// (locks.FlushAfter): a release still under way to a slow or hung node
// must not run into the next measurement.
func benchmark(ctx context.Context, cfg config, cl *cluster, progress io.Writer) (map[key][]round, error) {
	pairs := roundOrder(cfg.conditions, cfg.impls, 0)
	lockers := make(map[key]locks.Locker)
	for _, k := range pairs {
		im, _ := locks.Lookup(k.impl)
		l, err := im.New(cl.clients[k.cond])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", im.Name, err)
		}
		lockers[k] = l
	}
	prefix := func(k key) string { return k.cond }
	// measured measures k for d, then flushes its background calls.
	measured := func(k key, d time.Duration, minSamples int) round {
		rd := measure(ctx, lockers[k], prefix(k), d, cfg.interval, minSamples)
		locks.FlushAfter(ctx, k.cond+"/"+k.impl, lockers[k], progress)
		return rd
	}
	fmt.Fprintln(progress, "warm-up")
	for _, k := range pairs {
		measured(k, cfg.warmup, 1)
	}
	if err := cl.breakNodes(); err != nil {
		return nil, err
	}
	fmt.Fprintln(progress, "first node of 'slow' slowed, of 'dead' killed, of 'hung' stopped; warm-up again")
	for _, k := range pairs {
		measured(k, cfg.warmup, 1)
	}
	res := make(map[key][]round)
	for r := range cfg.rounds {
		fmt.Fprintf(progress, "round %d/%d\n", r+1, cfg.rounds)
		for _, k := range roundOrder(cfg.conditions, cfg.impls, r) {
			rd := measured(k, cfg.duration, cfg.minSamples)
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("interrupted: %w", err)
			}
			if rd.errors+rd.relErrs > 0 {
				fmt.Fprintf(progress, "  %s/%s: %d of %d acquisitions and %d releases failed; first: %v\n",
					k.cond, k.impl, rd.errors, len(rd.acquire), rd.relErrs, rd.firstErr)
			}
			res[k] = append(res[k], rd)
		}
	}
	return res, nil
}

// roundOrder returns the (condition, implementation) pairs in the order
// round r measures them: the conditions rotated by r, and within the
// condition at index c of conds the implementations rotated by r + c. From
// one round to the next every implementation moves one place within each
// condition (so that none always runs first, or always right after the
// same other one) and every condition one place in the round.
func roundOrder(conds []string, impls []locks.Impl, r int) []key {
	var order []key
	for i := range conds {
		c := (r + i) % len(conds)
		for j := range impls {
			im := impls[(r+c+j)%len(impls)]
			order = append(order, key{conds[c], im.Name})
		}
	}
	return order
}

// summary is what the report says about one pair: medians over rounds of
// each round's percentiles.
type summary struct {
	acqP50, acqP99, relP50 time.Duration
	cycles, acquired       int
	errors, relErrs        int
	first                  engine.Stats // summed over rounds
	hasFirst               bool
}

func summarize(rounds []round) summary {
	var s summary
	var a50, a99, r50 []time.Duration
	for _, r := range rounds {
		a50 = append(a50, stats.Percentile(r.acquire, 0.5))
		a99 = append(a99, stats.Percentile(r.acquire, 0.99))
		if len(r.release) > 0 {
			r50 = append(r50, stats.Percentile(r.release, 0.5))
		}
		s.cycles += len(r.acquire)
		s.acquired += r.acquired
		s.errors += r.errors
		s.relErrs += r.relErrs
		s.hasFirst = r.hasFirst
		s.first.Calls += r.first.Calls
		s.first.Pipelines += r.first.Pipelines
		s.first.Failed += r.first.Failed
		s.first.Skipped += r.first.Skipped
	}
	s.acqP50, s.acqP99, s.relP50 = stats.MedianDuration(a50), stats.MedianDuration(a99), stats.MedianDuration(r50)
	return s
}
