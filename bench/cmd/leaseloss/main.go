// Command leaseloss measures how long a kept-alive lease goes on looking
// held after it stopped being provable: from the instant the lease becomes
// unprovable to the cancellation of the context that mutex.Lock.KeepAlive
// returned (the scheduler cancels a job's context from it).
//
// Two ways to lose a lease, on 5 redis-servers it starts itself:
//
//   - del: the lock key is deleted (DEL through another client) on a
//     majority of nodes at a random phase of the extension timer; the
//     lease is unprovable from the last DEL's answer on.
//   - pause: a majority of the redis-server processes are stopped
//     (SIGSTOP) at a random phase; the lease is unprovable from its
//     validity deadline (Lock.Until) on, since the keys still exist on the
//     stopped nodes until then. The nodes are continued (SIGCONT) after.
//
// Usage:
//
//	go run ./cmd/leaseloss [-ttl 3s] [-node-timeout 250ms] [-reps 30] [-pause-reps 20]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/bench/internal/cli"
	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redcron/redcron/bench/internal/machine"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/bench/internal/table"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/mutex"
	"github.com/redis/go-redis/v9"
)

const nodes = 5

type config struct {
	ttl, nodeTimeout time.Duration
	reps, pauseReps  int
}

func main() { cli.Main("leaseloss", parseFlags, run) }

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := cli.NewFlagSet("leaseloss", stderr)
	var c config
	fs.DurationVar(&c.ttl, "ttl", 3*time.Second, "lock TTL (extensions every TTL/3)")
	fs.DurationVar(&c.nodeTimeout, "node-timeout", 250*time.Millisecond, "mutex.WithNodeTimeout")
	fs.IntVar(&c.reps, "reps", 30, "repetitions of the del variant")
	fs.IntVar(&c.pauseReps, "pause-reps", 20, "repetitions of the pause variant")
	if err := cli.Parse(fs, args); err != nil {
		return config{}, err
	}
	if c.reps < 0 || c.pauseReps < 0 || c.ttl < 4*c.nodeTimeout {
		return config{}, errors.New("-reps and -pause-reps not negative; -ttl at least 4 × -node-timeout")
	}
	return c, nil
}

// sample is one repetition: the loss's detection delay, and the phase at
// which the lease was broken (time since KeepAlive started, modulo TTL/3).
type sample struct {
	detect time.Duration
	phase  time.Duration
	// held is how long after the breaking action the context was
	// cancelled (pause: the validity left when the nodes stopped).
	held  time.Duration
	cause string
}

func run(ctx context.Context, cfg config, env cli.Env, stdout, stderr io.Writer) error {
	redisnode.SilenceClientLogs()
	cl, err := redisnode.Start(env.RedisBin, nodes) // its clients are the lock's
	defer func() {
		for _, s := range cl.Servers {
			_ = s.Resume() // a stopped process is killed all the same, but be tidy
		}
		cl.Close()
	}()
	if err != nil {
		return err
	}
	admin := make([]*redis.Client, nodes) // the saboteur's
	for i, s := range cl.Servers {
		admin[i] = redisnode.NewClient(s.Addr())
		defer admin[i].Close()
	}
	rl, err := locks.NewRedlock(cl.Clients, mutex.WithTrustedNodes(), mutex.WithNodeTimeout(cfg.nodeTimeout), mutex.WithKeyPrefix("leaseloss"))
	if err != nil {
		return err
	}
	majority := cl.Servers[:len(lockwire.Of(rl).Nodes)/2+1]

	var del, pause []sample
	for i := range cfg.reps {
		s, err := once(ctx, rl, cfg, fmt.Sprintf("del-%d", i), func(name string) (time.Time, error) {
			return deleteOn(ctx, rl, admin[:len(lockwire.Of(rl).Nodes)/2+1], name)
		}, func(*mutex.Lock) {})
		if err != nil {
			return fmt.Errorf("del %d: %w", i, err)
		}
		fmt.Fprintf(stderr, "del %2d: phase %4v, detected after %v (%s)\n", i+1, s.phase.Round(time.Millisecond), s.detect.Round(time.Microsecond), s.cause)
		del = append(del, s)
	}
	for i := range cfg.pauseReps {
		s, err := once(ctx, rl, cfg, fmt.Sprintf("pause-%d", i), func(string) (time.Time, error) {
			for _, sv := range majority {
				if err := sv.Pause(); err != nil {
					return time.Time{}, err
				}
			}
			return time.Time{}, nil // unprovable from Until on, known after the loss
		}, func(l *mutex.Lock) {
			for _, sv := range majority {
				_ = sv.Resume()
			}
		})
		if err != nil {
			return fmt.Errorf("pause %d: %w", i, err)
		}
		fmt.Fprintf(stderr, "pause %2d: phase %4v, cancelled %v after Until, %v after the pause (%s)\n", i+1,
			s.phase.Round(time.Millisecond), s.detect.Round(time.Microsecond), s.held.Round(time.Millisecond), s.cause)
		pause = append(pause, s)
	}
	writeReport(stdout, env.Machine, cfg, del, pause)
	return nil
}

// once takes a lock, keeps it alive, breaks it at a random phase with
// breakIt (which returns the instant the lease became unprovable, or the
// zero time when that is the lock's validity deadline), waits for the
// keepalive context to be cancelled and measures the delay. repair runs
// after the cancellation.
func once(ctx context.Context, rl *mutex.Redlock, cfg config, name string, breakIt func(name string) (time.Time, error), repair func(*mutex.Lock)) (sample, error) {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := rl.Lock(lctx, name, cfg.ttl)
	if err != nil {
		return sample{}, err
	}
	defer l.Release(context.Background())
	started := time.Now()
	kctx, stop := l.KeepAlive(ctx)
	defer stop()
	var (
		mu     sync.Mutex
		doneAt time.Time
	)
	gotDone := make(chan struct{})
	context.AfterFunc(kctx, func() {
		mu.Lock()
		doneAt = time.Now()
		mu.Unlock()
		close(gotDone)
	})
	// A uniform instant in the second extension period (between the
	// first extension, at TTL/3, and the second, at 2·TTL/3), so that
	// every phase of the extension timer is as likely.
	interval := cfg.ttl / 3
	time.Sleep(interval + rand.N(interval))
	broke := time.Now()
	phase := broke.Sub(started) % interval
	unprovable, err := breakIt(name)
	if err != nil {
		return sample{}, err
	}
	select {
	case <-gotDone:
	case <-time.After(2 * cfg.ttl):
		repair(l)
		return sample{}, fmt.Errorf("keepalive context not cancelled %v after the lease was broken", 2*cfg.ttl)
	case <-ctx.Done():
		repair(l)
		return sample{}, ctx.Err()
	}
	repair(l)
	mu.Lock()
	at := doneAt
	mu.Unlock()
	if unprovable.IsZero() {
		unprovable = l.Until()
	}
	cause := context.Cause(kctx)
	s := sample{detect: at.Sub(unprovable), phase: phase, held: at.Sub(broke), cause: "lost"}
	switch {
	case !errors.Is(cause, mutex.ErrLost):
		s.cause = fmt.Sprintf("unexpected cause: %v", cause)
	case strings.Contains(cause.Error(), "validity ran out"):
		s.cause = "lost: validity ran out"
	default:
		s.cause = "lost: majority not owner"
	}
	return s, nil
}

// deleteOn deletes the lock's key through the given clients, in parallel,
// and returns the instant the last DEL was answered.
func deleteOn(ctx context.Context, rl *mutex.Redlock, clients []*redis.Client, name string) (time.Time, error) {
	ks, err := engine.NewKeyspace(lockwire.Of(rl).KeyPrefix)
	if err != nil {
		return time.Time{}, err
	}
	keys, err := ks.Lock(name)
	if err != nil {
		return time.Time{}, err
	}
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			n, err := c.Del(ctx, keys.Lock).Result()
			if err == nil && n != 1 {
				err = fmt.Errorf("DEL %s on %s deleted %d keys", keys.Lock, c.Options().Addr, n)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return time.Now(), errors.Join(errs...)
}

func writeReport(w io.Writer, m machine.Machine, cfg config, del, pause []sample) {
	m.WriteHeader(w)
	budget := cfg.ttl/3 + cfg.nodeTimeout
	fmt.Fprintf(w, "run:     5 nodes, lock TTL %v (extended every %v), node timeout %v; goal: detection under TTL/3 + node timeout = %v\n\n",
		cfg.ttl, cfg.ttl/3, cfg.nodeTimeout, budget)
	tw := table.New(w)
	fmt.Fprintln(tw, "variant\tunprovable from\trepetitions\tdetection p50\tmax\tmin\tgoal\tcauses")
	row := func(name, from string, ss []sample, f func(sample) time.Duration, judge bool) {
		if len(ss) == 0 {
			return
		}
		ds := make([]time.Duration, len(ss))
		causes := map[string]int{}
		for i, s := range ss {
			ds[i] = f(s)
			causes[s.cause]++
		}
		slices.Sort(ds)
		var cs []string
		for _, k := range slices.Sorted(mapsKeys(causes)) {
			cs = append(cs, fmt.Sprintf("%s ×%d", k, causes[k]))
		}
		goal := "-"
		switch {
		case !judge:
		case ds[len(ds)-1] < budget:
			goal = "met"
		default:
			goal = "NOT met"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", name, from, len(ss),
			fmtDur(stats.MedianDuration(ds)), fmtDur(ds[len(ds)-1]), fmtDur(ds[0]), goal, strings.Join(cs, ", "))
	}
	row("del", "last DEL answered", del, func(s sample) time.Duration { return s.detect }, true)
	row("pause", "Lock.Until()", pause, func(s sample) time.Duration { return s.detect }, true)
	row("pause", "(SIGSTOP sent)", pause, func(s sample) time.Duration { return s.held }, false)
	tw.Flush()
	fmt.Fprintln(w, "\ndetection: keepalive context cancelled − unprovable instant. The (SIGSTOP sent) row is how long the holder")
	fmt.Fprintln(w, "kept a lease whose majority was stopped: the validity left at that instant, which is correct, not a delay.")
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func fmtDur(d time.Duration) string {
	if d < 10*time.Millisecond && d > -10*time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}
