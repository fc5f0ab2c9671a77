// Command lockbench measures the throughput and latency of lock
// acquire+release cycles of several Redlock implementations, in the same
// run and on the same redis-server processes, which it starts itself.
//
// Usage:
//
//	go run ./cmd/lockbench [-nodes 1,5] [-goroutines 1,16] [-names distinct,contended]
//	    [-impls raw,redcron-nofence,redcron-fence,redsync] [-duration 1.5s] [-rounds 5]
//	    (redcron-fence-noledger, redcron-nofence-noledger: the same with the
//	    lock ledger off, reported against their twins as "ledger on ÷ off")
//	    [-json] [-cpuprofile file]
//	go run ./cmd/lockbench -wake 50 [-nodes 1,5] [-impls ...] [-rounds 5]
//	    (the wake latency of a waiting Lock: from a release to the
//	    waiter's return, for the implementations that can wait)
package main

import (
	"context"
	"io"
	"slices"

	"github.com/redcron/redcron/bench/internal/cli"
	"github.com/redcron/redcron/bench/internal/prof"
	"github.com/redcron/redcron/bench/internal/redisnode"
)

func main() { cli.Main("lockbench", parseFlags, run) }

// run starts the servers, runs the benchmark and writes the report to
// stdout (progress goes to stderr). The servers are killed when it
// returns, also when ctx is cancelled by a signal.
func run(ctx context.Context, cfg config, env cli.Env, stdout, stderr io.Writer) error {
	cl, err := redisnode.Start(env.RedisBin, slices.Max(cfg.nodes))
	if err != nil {
		cl.Close() // the servers that did start
		return err
	}
	defer cl.Close()
	if cfg.wake > 0 {
		rs, err := wakeBench(ctx, cfg, cl.Clients, stderr)
		if err != nil {
			return err
		}
		writeWake(stdout, env.Machine, cfg, rs)
		return nil
	}
	results, err := prof.CPU(cfg.cpuProfile, func() ([]result, error) {
		return benchmark(ctx, cfg, cl.Clients, stderr)
	})
	if err != nil {
		return err
	}
	sums, costs := summarize(results), ledgerCosts(results)
	if cfg.json {
		return writeJSON(stdout, env.Machine, cfg, sums, costs)
	}
	writeTable(stdout, env.Machine, cfg, sums, costs)
	return nil
}
