package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/cli"
	"github.com/redcron/redcron/bench/internal/locks"
)

// Name modes: how the goroutines of a scenario pick lock names.
const (
	distinct  = "distinct"  // every goroutine has its own names
	contended = "contended" // all goroutines fight over one name
)

// defaultImpls are the implementations measured unless -impls says
// otherwise; "raw" is the reference.
var defaultImpls = []string{"raw", "redcron-nofence", "redcron-fence", "redsync", "bsm-redislock"}

// config is the parsed command line.
type config struct {
	nodes      []int
	goroutines []int
	names      []string
	impls      []locks.Impl
	duration   time.Duration
	warmup     time.Duration
	rounds     int
	json       bool
	cpuProfile string
	wake       int // waits per implementation and round of the wake-latency benchmark; 0 for the throughput one
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := cli.NewFlagSet("lockbench", stderr)
	nodes := fs.String("nodes", "1,5", "comma-separated node counts")
	goroutines := fs.String("goroutines", "1,16", "comma-separated numbers of concurrent goroutines")
	names := fs.String("names", "distinct,contended", "comma-separated name modes: distinct, contended")
	impls := fs.String("impls", strings.Join(defaultImpls, ","), "comma-separated implementations, of: "+strings.Join(locks.Names(), ", "))
	var c config
	fs.DurationVar(&c.duration, "duration", 1500*time.Millisecond, "length of one measurement")
	fs.DurationVar(&c.warmup, "warmup", 200*time.Millisecond, "unmeasured run of each implementation before each scenario")
	fs.IntVar(&c.rounds, "rounds", 5, "measurements per scenario and implementation, interleaved")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of a table")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurements (client side) to this file")
	fs.IntVar(&c.wake, "wake", 0, "measure the wake latency instead (release to the waiter's return): this many waits per implementation and round")
	if err := cli.Parse(fs, args); err != nil {
		return config{}, err
	}

	var err error
	if c.nodes, err = cli.PositiveInts("nodes", *nodes); err != nil {
		return config{}, err
	}
	if c.goroutines, err = cli.PositiveInts("goroutines", *goroutines); err != nil {
		return config{}, err
	}
	for _, n := range strings.Split(*names, ",") {
		if n != distinct && n != contended {
			return config{}, fmt.Errorf("-names: %q is neither %s nor %s", n, distinct, contended)
		}
		c.names = append(c.names, n)
	}
	if c.impls, err = locks.Parse(*impls); err != nil {
		return config{}, fmt.Errorf("-impls: %w", err)
	}
	if c.duration <= 0 || c.warmup < 0 || c.rounds < 1 {
		return config{}, errors.New("-duration must be positive, -warmup not negative, -rounds at least 1")
	}
	if c.wake < 0 || c.wake > 0 && c.json {
		return config{}, errors.New("-wake must not be negative, and has no -json report")
	}
	return c, nil
}

// scenarios returns every combination of node count, goroutines and name
// mode.
func (c config) scenarios() []scenario {
	var scs []scenario
	for _, n := range c.nodes {
		for _, g := range c.goroutines {
			for _, m := range c.names {
				scs = append(scs, scenario{Nodes: n, Goroutines: g, Names: m})
			}
		}
	}
	return scs
}
