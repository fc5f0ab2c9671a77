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
// that long before they come (scheduler.WithLockAhead); with -ledger on,off,
// also with the lock ledger off (mutex.WithLedger(0, 0)), and the report
// compares the two.
//
// -wiring redcron builds each replica with redcron.NewWithClients
// instead of from the library's parts, with untrusted nodes (measured once
// every node votes); -lock-ttl, -max-ttl and -job-sleep set the jobs' lock
// TTL, the max TTL and how long each run sleeps; -shape midnight is issue
// 30's reproduction. -rush makes all jobs due at one instant (a daily
// spec), then idle. -crash kills replica 0 in each round's window and
// reports how long and how many of its jobs stalled (crash.go).
//
// Usage:
//
//	go run ./cmd/schedbench [-jobs 1,100,1000,5000] [-ahead 0,400ms] [-ledger on,off] [-replicas 3] [-nodes 5]
//	    [-warmup 3s] [-measure 8s] [-min-samples 200] [-rounds 3] [-settle 10s]
//	    [-wiring scheduler|redcron] [-lock-ttl d] [-max-ttl d] [-job-sleep d] [-shape midnight]
//	    [-rush [-rush-lead 20s] [-idle 10s]] [-crash 5s]
//	    [-per-tick] [-cpuprofile file [-profile-jobs 1000]]   (writes file.0, file.1, ...: one per replica)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/cli"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/bench/internal/stats"
)

type config struct {
	jobs        []int
	wiring      string        // wiringScheduler or wiringRedcron: how a replica is built
	lockTTL     time.Duration // each job's scheduler.WithLockTTL; 0: the library's default (30 s)
	maxTTL      time.Duration // mutex.WithMaxTTL; 0: the library's default (1 min)
	jobSleep    time.Duration // how long each run sleeps after recording its start
	shape       string        // the preset applied, if any
	rush        bool          // one tick of a daily spec, all jobs due at once (see rush.go)
	rushLead    time.Duration // from the replicas' start to the rush's tick, at least
	idle        time.Duration // measured after the rush's tick
	baseline    string        // a schedbench executable built at another commit, whose replicas every setup is also run with
	aheads      []time.Duration
	ledgers     []bool // the lock ledger on (true) or off, each run with every number of jobs and lead
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
	crash       time.Duration // SIGKILL replica 0 this long after each round's window starts; 0: no crash
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == replicaArg {
		os.Exit(replicaMain(os.Stdin, os.Stdout, os.Stderr))
	}
	cli.Main("schedbench", parseFlags, run)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := cli.NewFlagSet("schedbench", stderr)
	jobs := fs.String("jobs", "1,100,1000,5000", "comma-separated numbers of jobs, each due every second (with -rush: at one instant)")
	aheads := fs.String("ahead", "0", "comma-separated lock-ahead leads (scheduler.WithLockAhead), each run with every number of jobs")
	ledgers := fs.String("ledger", "on", "comma-separated: on (the default ledger) and/or off (mutex.WithLedger(0, 0)), each run with every number of jobs and lead")
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
	fs.StringVar(&c.wiring, "wiring", wiringScheduler, "how each replica is built: "+wiringScheduler+" (scheduler.New over mutex.New with WithTrustedNodes and a heartbeat, no scans) or "+
		wiringRedcron+" (redcron.NewWithClients: untrusted nodes, which vote once up for the max TTL; heartbeat, leak scans, job table)")
	fs.DurationVar(&c.lockTTL, "lock-ttl", 0, "each job's lock TTL (scheduler.WithLockTTL); 0: the library's default, 30s")
	fs.DurationVar(&c.maxTTL, "max-ttl", 0, "the Redlock's max TTL (mutex.WithMaxTTL); 0: the library's default, 1m")
	fs.DurationVar(&c.jobSleep, "job-sleep", 0, "how long each run sleeps after recording its start")
	fs.StringVar(&c.shape, "shape", "", "a preset for the flags not given: "+shapeMidnight+" (issue 30's reproduction: -wiring "+wiringRedcron+
		" -max-ttl 10s -lock-ttl 8s -job-sleep 10ms -jobs 1000,5000,10000 -measure 20s; with -rush, -jobs 100000)")
	fs.BoolVar(&c.rush, "rush", false, "the rush: each number of jobs due at one instant, a daily spec \"S M H * * *\" (UTC) for an instant -rush-lead after the replicas start, then idle for -idle")
	fs.DurationVar(&c.rushLead, "rush-lead", 20*time.Second, "with -rush: from the replicas' start to the tick, at least; it must cover their start-up and the registration of the jobs")
	fs.StringVar(&c.baseline, "baseline", "", "also run every setup with replicas from this schedbench executable, built at another library commit (the baseline), interleaved, and compare")
	fs.DurationVar(&c.idle, "idle", 10*time.Second, "with -rush: the measured time after the tick")
	fs.DurationVar(&c.crash, "crash", 0, "in each round, SIGKILL replica 0 this long after the window's first tick (at least 1s; not with -rush), and report the stall: "+
		"the jobs that missed ticks after it and until when; -measure must be at least this + 2 × the lease TTL + 3s (the lease TTL: the shard leases' and the replica anchors', "+
		"min(max TTL, 10s), with -wiring "+wiringRedcron+"; the jobs' lock TTL with -wiring "+wiringScheduler+"), so that the window shows the recovery")
	if err := cli.Parse(fs, args); err != nil {
		return config{}, err
	}
	if err := applyShape(fs, c.shape, c.rush); err != nil {
		return config{}, err
	}
	var err error
	if c.jobs, err = cli.PositiveInts("jobs", *jobs); err != nil {
		return config{}, err
	}
	if c.aheads, err = cli.Durations("ahead", *aheads, 0, 900*time.Millisecond); err != nil {
		return config{}, err
	}
	for _, l := range strings.Split(*ledgers, ",") {
		switch l {
		case "on", "off":
			c.ledgers = append(c.ledgers, l == "on")
		default:
			return config{}, fmt.Errorf("-ledger: %q is neither on nor off", l)
		}
	}
	c.warmup, c.measure = c.warmup.Round(time.Second), c.measure.Round(time.Second)
	if c.replicas < 1 || c.nodes < 1 || c.rounds < 1 || c.measure < time.Second || c.warmup < time.Second || c.settle < 0 || c.minSamples < 0 {
		return config{}, errors.New("-replicas, -nodes, -rounds at least 1; -measure and -warmup at least 1s; -settle and -min-samples not negative")
	}
	switch {
	case c.wiring != wiringScheduler && c.wiring != wiringRedcron:
		return config{}, fmt.Errorf("-wiring: %q is neither %s nor %s", c.wiring, wiringScheduler, wiringRedcron)
	case c.lockTTL != 0 && c.lockTTL < time.Second:
		return config{}, fmt.Errorf("-lock-ttl: %v is below 1s (the library's least)", c.lockTTL)
	case c.maxTTL < 0 || c.jobSleep < 0:
		return config{}, errors.New("-max-ttl and -job-sleep: not negative")
	case c.lockTTL > c.effectiveMaxTTL():
		return config{}, fmt.Errorf("-lock-ttl %v is above the max TTL %v", c.lockTTL, c.effectiveMaxTTL())
	case c.rush && (c.rushLead < 2*time.Second || c.idle < time.Second):
		return config{}, errors.New("-rush-lead at least 2s, -idle at least 1s")
	}
	c.rushLead, c.idle = c.rushLead.Round(time.Second), c.idle.Round(time.Second)
	if err := c.checkCrash(); err != nil {
		return config{}, err
	}
	if c.baseline != "" {
		if c.baseline, err = exec.LookPath(c.baseline); err != nil {
			return config{}, fmt.Errorf("-baseline: %w", err)
		}
		if c.baseline, err = filepath.Abs(c.baseline); err != nil {
			return config{}, fmt.Errorf("-baseline: %w", err)
		}
	}
	return c, nil
}

// The ways a replica is built (-wiring).
const (
	wiringScheduler = "scheduler" // scheduler.New over mutex.New(WithTrustedNodes) and a heartbeat
	wiringRedcron   = "redcron"   // redcron.NewWithClients, every option at its default but those asked
)

// libraryMaxTTL is mutex's default max TTL, which -max-ttl 0 leaves.
const libraryMaxTTL = time.Minute

// effectiveMaxTTL returns the Redlock's max TTL.
func (c config) effectiveMaxTTL() time.Duration {
	if c.maxTTL == 0 {
		return libraryMaxTTL
	}
	return c.maxTTL
}

// fleetLeaseTTL is the TTL of the shard leases and of the replica anchors
// of a replica built by redcron.NewWithClients, unless the max TTL is
// lower: internal/fleet's shardTTL (newShards), which both take
// (internal/shard's Keeper). A crashed replica's shards stay held, and the
// runs claimed under its anchor look running, until these expire.
const fleetLeaseTTL = 10 * time.Second

// leaseTTL returns the TTL that bounds how long a crashed replica's jobs
// stall: with -wiring redcron, that of the shard leases and the replica
// anchors (fleetLeaseTTL, at most the max TTL); with -wiring scheduler,
// where every replica claims every tick, the jobs' lock TTL (a run's lock
// left by the crashed replica is held until it expires).
func (c config) leaseTTL() time.Duration {
	if c.wiring == wiringRedcron {
		return min(fleetLeaseTTL, c.effectiveMaxTTL())
	}
	if c.lockTTL == 0 {
		return libraryLockTTL
	}
	return c.lockTTL
}

// libraryLockTTL is the scheduler's default lock TTL, which -lock-ttl 0
// leaves.
const libraryLockTTL = 30 * time.Second

// crashMargin is how much longer than the crash and two lease TTLs the
// window must last (-crash): a stall up to the lease TTL is followed by at
// least a lease TTL and this of ticks run in full.
const crashMargin = 3 * time.Second

// checkCrash checks -crash against the other flags.
func (c config) checkCrash() error {
	switch {
	case c.crash == 0:
		return nil
	case c.crash < time.Second:
		return fmt.Errorf("-crash: %v is below 1s (the window's first tick must run before the crash)", c.crash)
	case c.rush:
		return errors.New("-crash: not with -rush (the crash is measured on jobs due every second)")
	case c.replicas < 2:
		return fmt.Errorf("-crash: -replicas %d leaves no replica to take over", c.replicas)
	}
	if need := c.crash + 2*c.leaseTTL() + crashMargin; c.measure < need {
		return fmt.Errorf("-crash %v: -measure %v is too short: the window must cover the crash, two lease TTLs (%v) and %v, at least %v",
			c.crash, c.measure, c.leaseTTL(), crashMargin, need)
	}
	return nil
}

// shapeMidnight is issue 30's reproduction: 5 redis-servers without
// persistence, 3 replica processes each built with redcron.NewWithClients
// (WithSeconds, max TTL 10 s, lock TTL 8 s, every other option at its
// default), jobs "* * * * * *" that sleep 10 ms, started together and
// measured for 20 s once every node votes.
const shapeMidnight = "midnight"

// applyShape sets the flags of the preset called shape that the command
// line did not set.
func applyShape(fs *flag.FlagSet, shape string, rush bool) error {
	var preset [][2]string
	switch shape {
	case "":
		return nil
	case shapeMidnight:
		jobs := "1000,5000,10000"
		if rush {
			jobs = "100000"
		}
		preset = [][2]string{{"wiring", wiringRedcron}, {"max-ttl", "10s"}, {"lock-ttl", "8s"}, {"job-sleep", "10ms"},
			{"jobs", jobs}, {"measure", "20s"}, {"nodes", "5"}, {"replicas", "3"}}
	default:
		return fmt.Errorf("-shape: %q is not a preset (%s)", shape, shapeMidnight)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, p := range preset {
		if !set[p[0]] {
			if err := fs.Set(p[0], p[1]); err != nil {
				return fmt.Errorf("-shape %s: -%s %s: %w", shape, p[0], p[1], err)
			}
		}
	}
	return nil
}

func run(ctx context.Context, cfg config, env cli.Env, stdout, stderr io.Writer) error {
	redisnode.SilenceClientLogs()
	cl, err := redisnode.Start(env.RedisBin, cfg.nodes)
	if err != nil {
		cl.Close() // the servers that did start
		return err
	}
	defer cl.Close()
	serversUp := time.Now()
	servers, admin := cl.Servers, cl.Clients
	exe, err := os.Executable()
	if err != nil {
		return err
	}
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
			x := exe
			if su.baseline {
				x = cfg.baseline
			}
			res, err := runOnce(ctx, cfg, x, servers, admin, serversUp, su, r, p, stderr)
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
	if c.rush {
		return 1
	}
	return stats.TicksFor(jobs, int(c.measure/time.Second), c.minSamples)
}

// setup is one configuration measured: a number of jobs, a lock-ahead,
// and the lock ledger on (the default) or off.
type setup struct {
	jobs     int
	ahead    time.Duration
	noLedger bool
	baseline bool // the replicas run the -baseline executable
}

func (su setup) String() string {
	s := fmt.Sprintf("%d jobs", su.jobs)
	if su.ahead != 0 {
		s += fmt.Sprintf(", ahead %v", su.ahead)
	}
	if su.noLedger {
		s += ", ledger off"
	}
	if su.baseline {
		s += ", baseline"
	}
	return s
}

// ledgerModes returns the ledger settings to run: c.ledgers, or the
// default (on) alone.
func (c config) ledgerModes() []bool {
	if len(c.ledgers) == 0 {
		return []bool{true}
	}
	return c.ledgers
}

// setups returns every combination of a number of jobs, a lead and a
// ledger setting, by lead, then ledger setting; with -baseline, each
// followed by its twin run by the baseline's replicas.
func (c config) setups() []setup {
	var out []setup
	for _, a := range c.aheads {
		for _, l := range c.ledgerModes() {
			for _, j := range c.jobs {
				out = append(out, setup{jobs: j, ahead: a, noLedger: !l})
				if c.baseline != "" {
					out = append(out, setup{jobs: j, ahead: a, noLedger: !l, baseline: true})
				}
			}
		}
	}
	return out
}
