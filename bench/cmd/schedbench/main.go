// Command schedbench measures the scheduler at scale: J jobs due every
// second on 3 scheduler replicas over 5 redis-servers (which it starts
// itself), for J = 1, 100, 1000, 5000. Each replica is a process of its
// own, as in a deployment, started from this program's executable: the
// replicas share no Go runtime. For every J it reports the start delay of
// the runs (p50, p99, and how many runs each round's percentiles rest on:
// a round measures at least -min-samples runs, running more ticks for
// small J), whether every tick of every job ran exactly once
// (duplicates, misses), the Redis calls the replicas sent per job and
// tick, and the CPU the servers and the replicas' processes used. With -ahead, each number of jobs is also run with the ticks locked
// that long before they come (scheduler.WithLockAhead).
//
// Usage:
//
//	go run ./cmd/schedbench [-jobs 1,100,1000,5000] [-ahead 0,400ms] [-replicas 3] [-nodes 5]
//	    [-warmup 3s] [-measure 8s] [-min-samples 200] [-rounds 3] [-settle 10s]
//	    [-per-tick] [-cpuprofile file [-profile-jobs 1000]]   (writes file.0, file.1, ...: one per replica)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/redcron/redcron/bench/internal/cli"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/bench/internal/stats"
)

type config struct {
	jobs        []int
	aheads      []time.Duration
	replicas    int
	nodes       int
	warmup      time.Duration
	measure     time.Duration
	minSamples  int
	rounds      int
	settle      time.Duration
	cpuProfile  string
	profileJobs int
	perTick     bool
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == replicaArg {
		os.Exit(replicaMain(os.Stdin, os.Stdout, os.Stderr))
	}
	cli.Main("schedbench", parseFlags, run)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := cli.NewFlagSet("schedbench", stderr)
	jobs := fs.String("jobs", "1,100,1000,5000", "comma-separated numbers of jobs, each due every second")
	aheads := fs.String("ahead", "0", "comma-separated lock-ahead leads (scheduler.WithLockAhead), each run with every number of jobs")
	var c config
	fs.IntVar(&c.replicas, "replicas", 3, "scheduler replicas, each with its own clients, nodes and Redlock")
	fs.IntVar(&c.nodes, "nodes", 5, "redis-servers")
	fs.DurationVar(&c.warmup, "warmup", 3*time.Second, "unmeasured run before the window (whole seconds)")
	fs.DurationVar(&c.measure, "measure", 8*time.Second, "measured window of ticks (whole seconds); longer for J below -min-samples / ticks")
	fs.IntVar(&c.minSamples, "min-samples", 200, "runs a round's start-delay percentiles rest on at least: a round of J jobs measures max(-measure, ceil(min-samples / J) s) of ticks")
	fs.IntVar(&c.rounds, "rounds", 3, "runs per number of jobs, interleaved; medians over them")
	fs.DurationVar(&c.settle, "settle", 10*time.Second, "how long after the window to wait for its ticks to be handled by every replica")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the first measured window of -profile-jobs, replica i's to this file's name followed by .i")
	fs.BoolVar(&c.perTick, "per-tick", false, "after each round, print each window tick's start delays (p50, p99, max) and its runs and p99 by replica")
	fs.IntVar(&c.profileJobs, "profile-jobs", 1000, "number of jobs whose windows -cpuprofile covers")
	if err := cli.Parse(fs, args); err != nil {
		return config{}, err
	}
	var err error
	if c.jobs, err = cli.PositiveInts("jobs", *jobs); err != nil {
		return config{}, err
	}
	if c.aheads, err = cli.Durations("ahead", *aheads, 0, 900*time.Millisecond); err != nil {
		return config{}, err
	}
	c.warmup, c.measure = c.warmup.Round(time.Second), c.measure.Round(time.Second)
	if c.replicas < 1 || c.nodes < 1 || c.rounds < 1 || c.measure < time.Second || c.warmup < time.Second || c.settle < 0 || c.minSamples < 0 {
		return config{}, errors.New("-replicas, -nodes, -rounds at least 1; -measure and -warmup at least 1s; -settle and -min-samples not negative")
	}
	return c, nil
}

func run(ctx context.Context, cfg config, env cli.Env, stdout, stderr io.Writer) error {
	redisnode.SilenceClientLogs()
	cl, err := redisnode.Start(env.RedisBin, cfg.nodes)
	if err != nil {
		cl.Close() // the servers that did start
		return err
	}
	defer cl.Close()
	servers, admin := cl.Servers, cl.Clients
	profile := cfg.cpuProfile

	var results []result
	setups := cfg.setups()
	for r := range cfg.rounds {
		for k := range setups {
			su := setups[(r+k)%len(setups)]
			fmt.Fprintf(stderr, "round %d/%d: %s\n", r+1, cfg.rounds, su)
			var p string
			if su.jobs == cfg.profileJobs {
				p, profile = profile, "" // the first window only
			}
			res, err := runOnce(ctx, cfg, servers, admin, su, r, p, stderr)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", su, r+1, err)
			}
			fmt.Fprintf(stderr, "  %s\n", res.brief())
			if cfg.perTick {
				for _, t := range res.perTick {
					fmt.Fprintf(stderr, "    %v\n", t)
				}
			}
			results = append(results, res)
			waited := quiesce(ctx, admin)
			fmt.Fprintf(stderr, "  quiet after %v; goroutines left in the replicas after their shutdown: %v\n",
				waited.Round(10*time.Millisecond), res.goroutinesLeft)
		}
	}
	writeReport(stdout, env.Machine, cfg, results)
	return nil
}

// ticks returns the number of ticks a round of jobs jobs measures: those
// of -measure, or more, so that the round has at least -min-samples runs.
func (c config) ticks(jobs int) int {
	return stats.TicksFor(jobs, int(c.measure/time.Second), c.minSamples)
}

// setup is one configuration measured: a number of jobs and a lock-ahead.
type setup struct {
	jobs  int
	ahead time.Duration
}

func (su setup) String() string {
	if su.ahead == 0 {
		return fmt.Sprintf("%d jobs", su.jobs)
	}
	return fmt.Sprintf("%d jobs, ahead %v", su.jobs, su.ahead)
}

// setups returns every pair of a number of jobs and a lead, by lead.
func (c config) setups() []setup {
	var out []setup
	for _, a := range c.aheads {
		for _, j := range c.jobs {
			out = append(out, setup{jobs: j, ahead: a})
		}
	}
	return out
}
