// Command lockbench measures the throughput and latency of lock
// acquire+release cycles of several Redlock implementations, in the same
// run and on the same redis-server processes, which it starts itself.
//
// Usage:
//
//	go run ./cmd/lockbench [-nodes 1,5] [-goroutines 1,16] [-names distinct,contended]
//	    [-impls raw,redcron-nofence,redcron-fence,redsync] [-duration 1.5s] [-rounds 5]
//	    [-json] [-cpuprofile file]
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/redcron/redcron/bench/internal/machine"
	"github.com/redcron/redcron/bench/internal/prof"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(1)
	}
}

// run parses args, starts the servers, runs the benchmark and writes the
// report to stdout (progress goes to stderr). The servers are killed when
// it returns, also when ctx is cancelled by a signal.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	bin, err := redisnode.BinPath()
	if err != nil {
		return err
	}
	m, err := machine.Describe(bin)
	if err != nil {
		return err
	}

	servers, err := redisnode.StartN(bin, slices.Max(cfg.nodes))
	defer redisnode.StopAll(servers)
	if err != nil {
		return err
	}
	clients := make([]*redis.Client, len(servers))
	for i, s := range servers {
		clients[i] = redisnode.NewClient(s.Addr())
		defer clients[i].Close()
	}

	stopProfile, err := prof.StartCPU(cfg.cpuProfile)
	if err != nil {
		return err
	}
	results, err := benchmark(ctx, cfg, clients, stderr)
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	sums := summarize(results)
	if cfg.json {
		return writeJSON(stdout, m, cfg, sums)
	}
	writeTable(stdout, m, cfg, sums)
	return nil
}
