// Command demo shows redcron's scheduler at work: several replicas of a
// service run the same jobs every second, and each tick of each job runs
// on exactly one of them, through a Redlock over five Redis nodes, while
// nodes die and come back and one replica stalls.
//
// It needs no Redis: by default the nodes are in-process miniredis
// servers, each a real TCP server on the loopback interface. With -redis it
// runs against real servers instead (then nodes are not killed, but a
// replica is still stalled).
//
//	go run ./examples/demo
//	go run ./examples/demo -duration 20s -replicas 4 -jobs 2
//	go run ./examples/demo -redis 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
//	go run ./examples/demo -hold    # the status page stays up after the summary, until Ctrl-C
//
// It ends with a verification computed from what actually ran, and exits
// with status 1 if a tick ran twice, a tick was missed while a quorum of
// nodes was up, or fencing tokens went backwards; 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Fixed parameters of the demo.
const (
	miniNodes   = 5               // in-process nodes
	lockTTL     = 2 * time.Second // every job's lease
	nodeTimeout = 100 * time.Millisecond
	minDuration = 12 * time.Second // the scenario does not fit in less
	maxReplicas = 10
	maxJobs     = 10
)

// config is what the flags ask for.
type config struct {
	redisAddrs  []string // real servers; empty for in-process miniredis nodes
	duration    time.Duration
	replicas    int
	jobs        int
	quiet       bool
	page        string // the status page's address; "": none
	hold        bool   // keep the page up after the summary, until interrupted
	lockTTL     time.Duration
	nodeTimeout time.Duration
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs the demo and returns the exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "demo:", err)
		return 2
	}
	// go-redis logs every failed dial to stderr; the demo kills nodes on
	// purpose, and reports what matters itself.
	redis.SetLogger(discardLogger{})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := run(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	if !sum.ok() {
		return 1
	}
	return 0
}

// parseFlags parses and validates the command line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := config{lockTTL: lockTTL, nodeTimeout: nodeTimeout}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	redisList := fs.String("redis", "", "comma-separated `host:port` list of real Redis masters to use instead of in-process miniredis nodes")
	fs.DurationVar(&cfg.duration, "duration", 40*time.Second, "how long to run; the fault scenario is scaled to it (at least 12s)")
	fs.IntVar(&cfg.replicas, "replicas", 3, fmt.Sprintf("number of scheduler replicas (2 to %d)", maxReplicas))
	fs.IntVar(&cfg.jobs, "jobs", 3, fmt.Sprintf("number of jobs, each running every second (1 to %d)", maxJobs))
	fs.BoolVar(&cfg.quiet, "quiet", false, "print only the final summary")
	fs.StringVar(&cfg.page, "page", "127.0.0.1:0", "`host:port` of the fleet's status page while the demo runs (port 0: a free one; empty: none)")
	fs.BoolVar(&cfg.hold, "hold", false, "after the summary, keep the status page (and the nodes it reads) up until Ctrl-C")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: demo [-duration d] [-replicas n] [-jobs n] [-redis host:port,...] [-page host:port] [-hold] [-quiet]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	if cfg.duration < minDuration {
		return config{}, fmt.Errorf("-duration %v is too short: the scenario needs at least %v", cfg.duration, minDuration)
	}
	if cfg.replicas < 2 || cfg.replicas > maxReplicas {
		return config{}, fmt.Errorf("-replicas %d is out of range: need 2 to %d (one replica is stalled, another takes over)", cfg.replicas, maxReplicas)
	}
	if cfg.jobs < 1 || cfg.jobs > maxJobs {
		return config{}, fmt.Errorf("-jobs %d is out of range: need 1 to %d", cfg.jobs, maxJobs)
	}
	if cfg.hold && cfg.page == "" {
		return config{}, errors.New("-hold keeps the status page up, but -page is empty (no page)")
	}
	if *redisList != "" {
		addrs, err := parseAddrs(*redisList)
		if err != nil {
			return config{}, fmt.Errorf("-redis: %w", err)
		}
		cfg.redisAddrs = addrs
	}
	return cfg, nil
}

// parseAddrs splits a comma-separated list of host:port addresses.
func parseAddrs(list string) ([]string, error) {
	var addrs []string
	seen := make(map[string]bool)
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSpace(a)
		host, port, err := net.SplitHostPort(a)
		switch {
		case a == "":
			return nil, errors.New("empty address in the list")
		case err != nil:
			return nil, fmt.Errorf("address %q: want host:port", a)
		case host == "" || port == "":
			return nil, fmt.Errorf("address %q: want host:port with both parts", a)
		case seen[a]:
			return nil, fmt.Errorf("address %q appears twice: the nodes must be independent masters", a)
		}
		seen[a] = true
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// run runs the whole demo: it starts the nodes and the replicas, plays the
// scenario while printing what runs where, stops everything and verifies
// what ran. The error is for setup failures; the verdict is in the
// summary.
func run(ctx context.Context, cfg config, out io.Writer) (summary, error) {
	nar := &narrator{w: out, quiet: cfg.quiet}
	names := jobNames(cfg.jobs)
	rec := newRecorder(names)

	var (
		cl  *cluster
		err error
	)
	if len(cfg.redisAddrs) > 0 {
		cl, err = watchCluster(ctx, cfg.redisAddrs, cfg.nodeTimeout, rec, nar)
	} else {
		cl, err = startCluster(miniNodes, rec)
	}
	if err != nil {
		return summary{}, err
	}
	defer cl.close()

	w := &workload{names: names, rec: rec, slow: newSlowRun(names[0], 3*cfg.lockTTL)}
	prefix := "redcron-demo-" + randomHex(4) // this run's keys only
	reps := make([]*replica, 0, cfg.replicas)
	defer func() {
		for _, r := range reps {
			r.close()
		}
	}()
	for i := range cfg.replicas {
		r, err := newReplica(replicaName(i), cfg, cl.addrs, !cl.external(), prefix, w, rec)
		if err != nil {
			return summary{}, err
		}
		reps = append(reps, r)
	}

	p := newPlan(cfg.duration)
	nar.intro(cfg, cl, reps, names, prefix, p)
	var page *statusPage
	if cfg.page != "" {
		page, err = servePage(cfg.page, cfg, cl.addrs, !cl.external(), prefix, reps[0].sched.Entries)
		if err != nil {
			return summary{}, fmt.Errorf("-page: %w", err)
		}
		defer page.close()
		nar.printf("status page: http://%s/ (read-only; the fleet as %s sees it, while the demo runs)\n\n", page.addr, reps[0].id)
	}

	// Start every replica. Run blocks until Shutdown.
	var runWG sync.WaitGroup
	beatCtx, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	for _, r := range reps {
		runWG.Go(func() { _ = r.sched.Run(context.WithoutCancel(ctx)) })
		runWG.Go(func() { r.scan.Run(beatCtx) })
	}
	t0 := time.Now()
	end := t0.Add(cfg.duration)

	scCtx, stopScenario := context.WithCancel(ctx)
	defer stopScenario()
	sc := &scenario{cfg: cfg, plan: p, cl: cl, reps: reps, slow: w.slow, rec: rec, nar: nar, t0: t0}
	var bg sync.WaitGroup
	bg.Go(func() { sc.run(scCtx) })
	bg.Go(func() { nar.live(ctx, rec, names, len(cl.addrs), t0, end, cfg.duration) })

	interrupted := !sleepUntil(ctx, end)
	stopScenario()
	stopAt := time.Now()

	// Graceful stop: no new tick starts; running jobs finish.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	var shutWG sync.WaitGroup
	for _, r := range reps {
		shutWG.Go(func() {
			if err := r.sched.Shutdown(shutCtx); err != nil {
				nar.say("%s: shutdown: %v", r.id, err)
			}
		})
	}
	shutWG.Wait()
	cancel()
	stopBeats()
	runWG.Wait()
	bg.Wait()
	if interrupted {
		nar.say("interrupted after %v; verifying what ran so far", stopAt.Sub(t0).Round(time.Second))
	}

	sum := rec.summarize(verifyParams{
		from:   t0.Truncate(time.Second).Add(2 * time.Second),
		to:     stopAt.Add(-time.Second),
		quorum: cl.quorum(),
		nodes:  len(cl.addrs),
		before: faultMarginBefore,
		after:  cfg.lockTTL + faultMarginAfterTTL,
	})
	sum.write(out)
	if cfg.hold && page != nil && !interrupted {
		fmt.Fprintf(out, "\nthe demo has ended; its status page stays up at http://%s/ until Ctrl-C\n", page.addr)
		<-ctx.Done()
	}
	return sum, nil
}

// sleepUntil waits until t and reports whether it did, rather than ctx
// ending first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// discardLogger silences go-redis's internal logging.
type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}
