// Command startbench measures what the scheduler itself adds to the start
// delay of the runs due at one tick, without Redis: J jobs due every
// second, on one scheduler with lock-ahead over a locker that grants every
// lease at once, against two floors that Go itself sets on the same
// machine, measured in the same run:
//
//   - timers: J goroutines each wait on a timer of its own for the tick
//     and start a goroutine for the job, as a scheduler that starts each
//     run on its own timer would;
//   - gate: J goroutines wait for one channel that one timer closes at the
//     tick, and run the job at once.
//
// The start delay is the job's first action minus its tick. For every J it
// reports the p50 and p99 over all runs of a round, medians over the
// rounds, and the ratios of the scheduler's p99 to the floors' and to its
// own at J = 1. A round of J jobs measures max(-ticks, ceil(-min-samples /
// J)) ticks, so that its percentiles rest on at least -min-samples runs
// (at J = 1 and 5 ticks, a "p99" would be the largest of 5 delays); the
// report gives the runs per round.
//
// Usage:
//
//	go run ./cmd/startbench [-jobs 1,100,1000,5000] [-ways timers,gate,scheduler] [-ahead 500ms] [-ticks 5] [-min-samples 200] [-rounds 3]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/bench/internal/cli"
	"github.com/redcron/redcron/bench/internal/stats"
	"github.com/redcron/redcron/bench/internal/table"
	"github.com/redcron/redcron/scheduler"
)

type config struct {
	jobs       []int
	ways       []way // the ways measured, in the order of allWays
	ahead      time.Duration
	ticks      int
	minSamples int
	rounds     int
}

func main() { cli.Main("startbench", parseFlags, run) }

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := cli.NewFlagSet("startbench", stderr)
	jobs := fs.String("jobs", "1,100,1000,5000", "comma-separated numbers of jobs, each due every second")
	ways := fs.String("ways", "timers,gate,scheduler", "comma-separated ways of starting to measure (timers, gate, scheduler): one alone, to profile it")
	var c config
	fs.DurationVar(&c.ahead, "ahead", 500*time.Millisecond, "the scheduler's lock-ahead lead (scheduler.WithLockAhead)")
	fs.IntVar(&c.ticks, "ticks", 5, "ticks measured per round and number of jobs; more for J below -min-samples / ticks")
	fs.IntVar(&c.minSamples, "min-samples", 200, "runs a round's percentiles rest on at least: a round of J jobs measures max(-ticks, ceil(min-samples / J)) ticks")
	fs.IntVar(&c.rounds, "rounds", 3, "rounds, each measuring every number of jobs and way of starting; medians over them")
	if err := cli.Parse(fs, args); err != nil {
		return config{}, err
	}
	var err error
	if c.jobs, err = cli.PositiveInts("jobs", *jobs); err != nil {
		return config{}, err
	}
	if c.ways, err = pickWays(*ways); err != nil {
		return config{}, err
	}
	if c.ahead <= 0 || c.ahead > 900*time.Millisecond || c.ticks < 1 || c.rounds < 1 || c.minSamples < 0 {
		return config{}, errors.New("-ahead between 0 (excluded) and 900ms; -ticks and -rounds at least 1; -min-samples not negative")
	}
	return c, nil
}

// ticksFor returns the number of ticks a round of jobs jobs measures:
// -ticks, or more, so that the round has at least -min-samples runs.
func (c config) ticksFor(jobs int) int { return stats.TicksFor(jobs, c.ticks, c.minSamples) }

// way is one way of starting J runs at a tick.
type way struct {
	name string
	// ticks returns the start delays of the runs of jobs jobs at each of
	// ticks ticks.
	ticks func(ctx context.Context, cfg config, jobs, ticks int) ([]time.Duration, error)
}

var allWays = []way{{"timers", timers}, {"gate", gate}, {"scheduler", sched}}

// hasWay reports whether ways has the way called name.
func hasWay(ways []way, name string) bool {
	return slices.ContainsFunc(ways, func(w way) bool { return w.name == name })
}

// pickWays returns the ways a -ways list names, in the order of allWays.
func pickWays(list string) ([]way, error) {
	want := make(map[string]bool)
	for _, f := range strings.Split(list, ",") {
		name := strings.TrimSpace(f)
		if !hasWay(allWays, name) {
			return nil, fmt.Errorf("-ways: unknown way %q (want timers, gate or scheduler)", name)
		}
		want[name] = true
	}
	var out []way
	for _, w := range allWays {
		if want[w.name] {
			out = append(out, w)
		}
	}
	return out, nil
}

// result is one round of one way with one number of jobs.
type result struct {
	way      string
	jobs     int
	p50, p99 time.Duration
	runs     int
}

func run(ctx context.Context, cfg config, env cli.Env, stdout, stderr io.Writer) error {
	var results []result
	for r := range cfg.rounds {
		for _, j := range cfg.jobs {
			for k := range cfg.ways {
				w := cfg.ways[(r+k)%len(cfg.ways)]
				delays, err := w.ticks(ctx, cfg, j, cfg.ticksFor(j))
				if err != nil {
					return fmt.Errorf("%s, %d jobs, round %d: %w", w.name, j, r+1, err)
				}
				slices.Sort(delays)
				res := result{way: w.name, jobs: j, runs: len(delays),
					p50: stats.Percentile(delays, 0.5), p99: stats.Percentile(delays, 0.99)}
				fmt.Fprintf(stderr, "round %d/%d: %d jobs, %s: p50 %v, p99 %v of %d runs\n", r+1, cfg.rounds, j, w.name,
					res.p50.Round(time.Microsecond), res.p99.Round(time.Microsecond), res.runs)
				results = append(results, res)
			}
		}
	}
	env.Machine.WriteHeader(stdout)
	fmt.Fprintf(stdout, "start delay (ms), p50 / p99, medians of %d rounds of max(%d, ceil(%d / J)) ticks; the scheduler with lock-ahead %v\n\n",
		cfg.rounds, cfg.ticks, cfg.minSamples, cfg.ahead)
	t := table.New(stdout)
	fmt.Fprintln(t, "jobs\tticks\truns/round\ttimers\tgate\tscheduler\tscheduler p99 / gate p99\tscheduler p99 / its J=1 p99\tgate p99 / its J=1 p99")
	med := func(w string, j int, f func(result) time.Duration) time.Duration {
		var ds []time.Duration
		for _, r := range results {
			if r.way == w && r.jobs == j {
				ds = append(ds, f(r))
			}
		}
		return stats.MedianDuration(ds)
	}
	p50 := func(r result) time.Duration { return r.p50 }
	p99 := func(r result) time.Duration { return r.p99 }
	cell := func(w string, j int) string {
		if !hasWay(cfg.ways, w) {
			return "-"
		}
		return fmt.Sprintf("%.2f / %.2f", stats.Millis(med(w, j, p50)), stats.Millis(med(w, j, p99)))
	}
	ratio := func(a, b time.Duration) string {
		if a == 0 || b == 0 { // a way not measured
			return "-"
		}
		return fmt.Sprintf("%.1f×", float64(a)/float64(b))
	}
	// runs returns the fewest runs a round of j jobs had, over ways and
	// rounds: what each percentile rests on.
	runs := func(j int) int {
		n := -1
		for _, r := range results {
			if r.jobs == j && (n < 0 || r.runs < n) {
				n = r.runs
			}
		}
		return n
	}
	one := slices.Min(cfg.jobs)
	for _, j := range cfg.jobs {
		fmt.Fprintf(t, "%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", j, cfg.ticksFor(j), runs(j), cell("timers", j), cell("gate", j), cell("scheduler", j),
			ratio(med("scheduler", j, p99), med("gate", j, p99)),
			ratio(med("scheduler", j, p99), med("scheduler", one, p99)),
			ratio(med("gate", j, p99), med("gate", one, p99)))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(stdout, "\nticks: per round and way, max(-ticks, ceil(-min-samples / J)); runs/round: the start delays each round's p50 and p99 rest on.")
	return err
}

// nextTick returns the next whole second at least 100ms away.
func nextTick() time.Time {
	return time.Now().Add(100 * time.Millisecond).Truncate(time.Second).Add(time.Second)
}

// eachTick calls start for each of ticks ticks, with the tick and room for
// J start delays, and returns the delays of all ticks. start starts J runs
// at the tick, each recording its delay, and waits for them.
func eachTick(ctx context.Context, jobs, ticks int, start func(tick time.Time, delays []time.Duration)) ([]time.Duration, error) {
	var all []time.Duration
	for range ticks {
		delays := make([]time.Duration, jobs)
		start(nextTick(), delays)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		all = append(all, delays...)
	}
	return all, nil
}

// timers starts each of J runs on a timer of its own, in a goroutine of
// its own, at each of ticks ticks.
func timers(ctx context.Context, _ config, jobs, ticks int) ([]time.Duration, error) {
	return eachTick(ctx, jobs, ticks, func(tick time.Time, delays []time.Duration) {
		var wg sync.WaitGroup
		for j := range delays {
			wg.Go(func() {
				t := time.NewTimer(time.Until(tick))
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
				done := make(chan struct{})
				go func() {
					delays[j] = time.Since(tick)
					close(done)
				}()
				<-done
			})
		}
		wg.Wait()
	})
}

// gate starts J goroutines, waiting on one channel, that one timer closes
// at each of ticks ticks.
func gate(ctx context.Context, _ config, jobs, ticks int) ([]time.Duration, error) {
	return eachTick(ctx, jobs, ticks, func(tick time.Time, delays []time.Duration) {
		open := make(chan struct{})
		var wg sync.WaitGroup
		for j := range delays {
			wg.Go(func() {
				<-open
				delays[j] = time.Since(tick)
			})
		}
		t := time.NewTimer(time.Until(tick))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		close(open)
		wg.Wait()
	})
}

// sched runs J jobs due every second on one scheduler with lock-ahead over
// freeLocker, and returns the start delays of the runs of ticks ticks,
// after one unmeasured tick.
func sched(ctx context.Context, cfg config, jobs, ticks int) ([]time.Duration, error) {
	first := nextTick().Add(time.Second)
	end := first.Add(time.Duration(ticks) * time.Second)
	want := jobs * ticks
	delays := make([]time.Duration, want)
	var n atomic.Int64
	all := make(chan struct{})
	job := scheduler.JobFunc(func(_ context.Context, info scheduler.RunInfo) error {
		d := time.Since(info.Tick)
		if info.Tick.Before(first) || !info.Tick.Before(end) {
			return nil
		}
		if i := n.Add(1); i <= int64(want) {
			delays[i-1] = d
			if i == int64(want) {
				close(all)
			}
		}
		return nil
	})
	s, err := scheduler.New(freeLocker{}, scheduler.WithSeconds(), scheduler.WithLockAhead(cfg.ahead))
	if err != nil {
		return nil, err
	}
	for j := range jobs {
		if err := s.Add("j"+strconv.Itoa(j), "* * * * * *", job); err != nil {
			return nil, err
		}
	}
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	t := time.NewTimer(time.Until(end.Add(2 * time.Second)))
	defer t.Stop()
	select {
	case <-all:
	case <-t.C:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		return nil, err
	}
	if err := <-ran; !errors.Is(err, scheduler.ErrClosed) && ctx.Err() == nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if got := int(min(n.Load(), int64(want))); got < want {
		return nil, fmt.Errorf("%d of %d runs started in the window", got, want)
	}
	return delays, nil
}

// freeLocker grants every lease at once, without I/O.
type freeLocker struct{}

func (freeLocker) Acquire(context.Context, scheduler.LockRequest) (scheduler.Lease, error) {
	return &freeLease{}, nil
}

func (freeLocker) AcquireAll(_ context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	out := make([]scheduler.LockResult, len(reqs))
	for i := range out {
		out[i].Lease = &freeLease{}
	}
	return out
}

// freeLease is a lease that cannot be lost. Keep gives it a context of its
// own, cancelled by Release, as a lease of a real locker has.
type freeLease struct{ stop context.CancelFunc }

func (*freeLease) Fence() uint64 { return 0 }

func (l *freeLease) Keep(ctx context.Context) context.Context {
	ctx, l.stop = context.WithCancel(ctx)
	return ctx
}

func (l *freeLease) Release(context.Context, scheduler.Outcome) error {
	if l.stop != nil {
		l.stop()
	}
	return nil
}
