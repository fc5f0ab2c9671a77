package main

import (
	"context"
	"fmt"
	"io"

	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redis/go-redis/v9"
)

// namesPerGoroutine is how many lock names each goroutine cycles through
// in the distinct mode.
const namesPerGoroutine = 64

// scenario is one combination of the benchmark's dimensions.
type scenario struct {
	Nodes      int    `json:"nodes"`
	Goroutines int    `json:"goroutines"`
	Names      string `json:"names"`
}

func (s scenario) String() string {
	return fmt.Sprintf("nodes=%d goroutines=%d names=%s", s.Nodes, s.Goroutines, s.Names)
}

// result is every round of one implementation in one scenario.
type result struct {
	scenario
	impl   string
	rounds []round
}

// benchmark measures every implementation in every scenario, on the first
// Nodes clients. Within a round the implementations run one after the
// other, starting with a different one each round, so that slow drifts of
// the machine hit them all alike. After each measurement, outside its
// timed part, the implementation's background calls are flushed
// (locks.Locker.Flush), so that they do not run into the next
// implementation's measurement, nor a scenario's into the next scenario.
// Progress goes to progress.
func benchmark(ctx context.Context, cfg config, clients []*redis.Client, progress io.Writer) ([]result, error) {
	var results []result
	scs := cfg.scenarios()
	for n, sc := range scs {
		var impls []locks.Impl
		for _, im := range cfg.impls {
			if !im.SingleNode || sc.Nodes == 1 {
				impls = append(impls, im)
			}
		}
		lockers := make([]locks.Locker, len(impls))
		res := make([]result, len(impls))
		for i, im := range impls {
			l, err := im.New(clients[:sc.Nodes])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", im.Name, err)
			}
			lockers[i], res[i] = l, result{scenario: sc, impl: im.Name}
		}
		names := lockNames(sc.Names, sc.Goroutines)
		for i, l := range lockers {
			measure(ctx, l, names, cfg.warmup) // fills connection pools and script caches
			locks.FlushAfter(ctx, impls[i].Name, l, progress)
		}
		for r := range cfg.rounds {
			fmt.Fprintf(progress, "[%d/%d] %v: round %d/%d\n", n+1, len(scs), sc, r+1, cfg.rounds)
			for k := range lockers {
				i := (r + k) % len(lockers)
				rd := measure(ctx, lockers[i], names, cfg.duration)
				locks.FlushAfter(ctx, impls[i].Name, lockers[i], progress)
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("interrupted: %w", err)
				}
				if rd.errors > 0 {
					fmt.Fprintf(progress, "  warning: %s: %d of %d cycles failed; first: %v\n", impls[i].Name, rd.errors, rd.ops, rd.firstErr)
				}
				res[i].rounds = append(res[i].rounds, rd)
			}
		}
		results = append(results, res...)
	}
	return results, nil
}

// lockNames returns the lock names of each goroutine: its own
// namesPerGoroutine names in the distinct mode, one shared name in the
// contended mode.
func lockNames(mode string, goroutines int) [][]string {
	names := make([][]string, goroutines)
	for g := range names {
		if mode == contended {
			names[g] = []string{"contended"}
			continue
		}
		names[g] = make([]string, namesPerGoroutine)
		for i := range names[g] {
			names[g][i] = fmt.Sprintf("g%d-%d", g, i)
		}
	}
	return names
}
