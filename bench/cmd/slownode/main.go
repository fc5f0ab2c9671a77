// Command slownode measures how lock acquisition copes with one bad node
// out of five: the median latency of one acquisition attempt (TryLock) and
// of the release that follows, for each implementation, with all nodes
// healthy and with the first node slowed by a TCP latency proxy (after the
// connections were made, or from the start), killed, or hung (SIGSTOP), in
// the same run, interleaved round-robin. One goroutine starts a cycle every
// -interval, as a scheduler takes its locks, rather than back to back.
//
// Usage:
//
//	go run ./cmd/slownode [-impls raw,redcron-nofence,redcron-fence,redsync,redsync-failfast]
//	    [-conditions healthy,slow,slowcold,dead,hung] [-slow 50ms] [-duration 1.5s] [-interval 50ms]
//	    [-rounds 5] [-min-samples 3] [-warmup 300ms] [-cpuprofile file]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/bench/internal/cli"
	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redcron/redcron/bench/internal/prof"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/internal/redisproc"
	"github.com/redcron/redcron/internal/tcpproxy"
	"github.com/redis/go-redis/v9"
)

// Conditions of the first node; the other four are always healthy.
const (
	healthy  = "healthy"  // answers directly
	slow     = "slow"     // answers through a proxy that adds -slow to every round trip, from after the warm-up
	slowCold = "slowcold" // the same, slow from the start: connections are dialled through the slow path
	dead     = "dead"     // its redis-server was killed after the warm-up: connections are refused
	hung     = "hung"     // its redis-server was stopped (SIGSTOP) after the warm-up: connections hang
)

var allConditions = []string{healthy, slow, slowCold, dead, hung}

// nodes is the number of nodes; the first is the one made bad.
const nodes = 5

type config struct {
	impls      []locks.Impl
	conditions []string
	slow       time.Duration
	duration   time.Duration
	interval   time.Duration
	warmup     time.Duration
	rounds     int
	minSamples int
	cpuProfile string
}

func main() { cli.Main("slownode", parseFlags, run) }

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := cli.NewFlagSet("slownode", stderr)
	impls := fs.String("impls", strings.Join(locks.Names(), ","), "comma-separated implementations")
	conds := fs.String("conditions", strings.Join(allConditions, ","), "comma-separated conditions of the first node: "+strings.Join(allConditions, ", "))
	var c config
	fs.DurationVar(&c.slow, "slow", 50*time.Millisecond, "round-trip time added to the slow node (half each way)")
	fs.DurationVar(&c.duration, "duration", 1500*time.Millisecond, "length of one measurement")
	fs.DurationVar(&c.interval, "interval", 50*time.Millisecond, "start a cycle every interval (0: back to back)")
	fs.DurationVar(&c.warmup, "warmup", 300*time.Millisecond, "unmeasured run of each implementation and condition, before and again after the node is made bad")
	fs.IntVar(&c.rounds, "rounds", 5, "measurements per condition and implementation, interleaved")
	fs.IntVar(&c.minSamples, "min-samples", 3, "a measurement goes on past -duration until it has this many cycles")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurements to this file")
	if err := cli.Parse(fs, args); err != nil {
		return config{}, err
	}
	var err error
	if c.impls, err = locks.Parse(*impls); err != nil {
		return config{}, fmt.Errorf("-impls: %w", err)
	}
	for _, n := range strings.Split(*conds, ",") {
		if !slices.Contains(allConditions, n) {
			return config{}, fmt.Errorf("-conditions: unknown condition %q (known: %s)", n, strings.Join(allConditions, ", "))
		}
		c.conditions = append(c.conditions, n)
	}
	if c.duration <= 0 || c.warmup < 0 || c.interval < 0 || c.rounds < 1 || c.minSamples < 1 || c.slow < 0 {
		return config{}, errors.New("-duration must be positive, -warmup, -interval and -slow not negative, -rounds and -min-samples at least 1")
	}
	return c, nil
}

// cluster is the servers and the client sets of every condition.
type cluster struct {
	servers []*redisproc.Server // the healthy five, then the dead and hung twins of the first
	proxy   *tcpproxy.Proxy     // in front of the first server, for the slow condition
	cold    *tcpproxy.Proxy     // another one, for the slowcold condition
	slowRTT time.Duration
	clients map[string][]*redis.Client
	dead    *redisproc.Server
	hung    *redisproc.Server
	all     []*redis.Client
}

// startCluster starts five servers, two proxies in front of the first one
// (one slow from the start, one slowed later), and two more servers standing for the first node in the dead and hung
// conditions. Nodes 2-5 are shared by every condition.
func startCluster(bin string, slowRTT time.Duration) (*cluster, error) {
	c := &cluster{clients: make(map[string][]*redis.Client), slowRTT: slowRTT}
	servers, err := redisnode.StartN(bin, nodes+2)
	c.servers = servers
	if err != nil {
		return c, err
	}
	c.dead, c.hung = servers[nodes], servers[nodes+1]
	if c.proxy, err = tcpproxy.New(servers[0].Addr()); err != nil {
		return c, err
	}
	if c.cold, err = tcpproxy.New(servers[0].Addr()); err != nil {
		return c, err
	}
	c.cold.SetLatency(slowRTT / 2)
	client := func(addr string) *redis.Client {
		cl := redisnode.NewClient(addr)
		c.all = append(c.all, cl)
		return cl
	}
	rest := make([]*redis.Client, nodes-1)
	for i := range rest {
		rest[i] = client(servers[i+1].Addr())
	}
	first := map[string]string{healthy: servers[0].Addr(), slow: c.proxy.Addr(), slowCold: c.cold.Addr(),
		dead: c.dead.Addr(), hung: c.hung.Addr()}
	for cond, addr := range first {
		c.clients[cond] = append([]*redis.Client{client(addr)}, rest...)
	}
	return c, nil
}

// breakNodes slows the proxy, kills the dead twin and pauses the hung one.
func (c *cluster) breakNodes() error {
	c.proxy.SetLatency(c.slowRTT / 2)
	c.dead.Kill()
	return c.hung.Pause()
}

func (c *cluster) close() {
	for _, cl := range c.all {
		_ = cl.Close()
	}
	if c.hung != nil {
		_ = c.hung.Resume()
	}
	if c.proxy != nil {
		c.proxy.Close()
	}
	if c.cold != nil {
		c.cold.Close()
	}
	redisnode.StopAll(c.servers)
}

func run(ctx context.Context, cfg config, env cli.Env, stdout, stderr io.Writer) error {
	redisnode.SilenceClientLogs()
	cl, err := startCluster(env.RedisBin, cfg.slow)
	defer cl.close()
	if err != nil {
		return err
	}
	res, err := prof.CPU(cfg.cpuProfile, func() (map[key][]round, error) {
		return benchmark(ctx, cfg, cl, stderr)
	})
	if err != nil {
		return err
	}
	writeReport(stdout, env.Machine, cfg, res)
	return nil
}
