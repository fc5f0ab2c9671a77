package redcron_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// fleet is several scheduler replicas in one process, each with its own
// clients to the same real Redis masters, recording every execution.
type fleet struct {
	t        *testing.T
	cluster  *redistest.Cluster
	replicas []*replica
	mu       sync.Mutex
	execs    []execution
	skips    map[string]int
	results  map[string]int
	tickLog  map[int64][]string // per tick (unix ms): what each replica did, for failure messages
	exited   chan *replica      // replicas whose Run returned
}

type fleetConfig struct {
	nodes, replicas int
	offsets         []time.Duration // per replica clock offset
	trusted         bool            // nodes vote at once (no restart quarantine)
	maxTTL          time.Duration   // mutex.WithMaxTTL; 0 for the default
	proxies         bool            // each replica reaches each node through its own proxy
	options         []scheduler.Option
}

type replica struct {
	idx     int
	id      string
	sched   *scheduler.Scheduler
	proxies []*redistest.Proxy // by node, if fleetConfig.proxies
	done    chan struct{}      // closed when Run returned
	runErr  error              // Run's result, once done is closed
	stopped bool               // Shutdown was called
}

// execution is one run of a job, as the job itself saw it.
type execution struct {
	replica    int
	job        string
	tick       time.Time
	fence      uint64
	start, end time.Time // real time, same process: comparable across replicas
	cause      error     // context.Cause of the job's context when it returned
}

// jobFunc is a job under test: it learns which replica runs it.
type jobFunc func(ctx context.Context, info scheduler.RunInfo, replica int) error

func newFleet(t *testing.T, cfg fleetConfig) *fleet {
	t.Helper()
	var opts []redistest.Option
	if cfg.proxies {
		opts = append(opts, redistest.WithProxy())
	}
	f := &fleet{t: t, cluster: redistest.Start(t, cfg.nodes, opts...),
		skips: map[string]int{}, results: map[string]int{},
		exited: make(chan *replica, cfg.replicas)}
	for i := range cfg.replicas {
		f.replicas = append(f.replicas, f.newReplica(i, cfg))
	}
	return f
}

func (f *fleet) newReplica(i int, cfg fleetConfig) *replica {
	t := f.t
	r := &replica{idx: i, id: fmt.Sprintf("replica-%d", i), done: make(chan struct{})}
	var nodes []*store.Node
	for _, s := range f.cluster.Nodes() {
		addr := s.ServerAddr()
		if cfg.proxies {
			p := s.NewProxy(t)
			r.proxies = append(r.proxies, p)
			addr = p.Addr()
		}
		c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond,
			ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { c.Close() })
		n, err := store.NewNode(s.ServerAddr(), c)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	var mopts []mutex.Option
	if cfg.trusted {
		mopts = append(mopts, mutex.WithTrustedNodes())
	}
	if cfg.maxTTL != 0 {
		mopts = append(mopts, mutex.WithMaxTTL(cfg.maxTTL))
	}
	rl, err := mutex.New(nodes, mopts...)
	if err != nil {
		t.Fatal(err)
	}
	var offset time.Duration
	if i < len(cfg.offsets) {
		offset = cfg.offsets[i]
	}
	r.sched, err = scheduler.New(scheduler.NewRedlockLocker(rl), append([]scheduler.Option{
		scheduler.WithSeconds(),
		scheduler.WithInstanceID(r.id),
		scheduler.WithClock(func() time.Time { return time.Now().Add(offset) }),
		scheduler.WithObserver(observerFunc(f.observe)),
	}, cfg.options...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type observerFunc func(scheduler.Event)

func (o observerFunc) Observe(e scheduler.Event) { o(e) }

func (f *fleet) observe(e scheduler.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tickLog == nil {
		f.tickLog = map[int64][]string{}
	}
	if !e.Tick.IsZero() {
		line := e.Instance + " " + string(e.Kind)
		if e.Kind == scheduler.KindSkipped {
			line += " " + e.Skip
		}
		if e.Err != nil {
			line += ": " + e.Err.Error()
		}
		f.tickLog[e.Tick.UnixMilli()] = append(f.tickLog[e.Tick.UnixMilli()], line)
	}
	switch e.Kind {
	case "skipped":
		f.skips[e.Skip]++
	case "run_finished":
		f.results[e.Result]++
	}
}

// add registers job on every replica.
func (f *fleet) add(name, spec string, job jobFunc, opts ...scheduler.JobOption) {
	f.addOn(f.replicas, name, spec, job, opts...)
}

// addOn registers job on the replicas rs.
func (f *fleet) addOn(rs []*replica, name, spec string, job jobFunc, opts ...scheduler.JobOption) {
	for _, r := range rs {
		err := r.sched.Add(name, spec, scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
			ex := execution{replica: r.idx, job: info.Job, tick: info.Tick, fence: info.Fence, start: time.Now()}
			err := job(ctx, info, r.idx)
			ex.end, ex.cause = time.Now(), context.Cause(ctx)
			f.mu.Lock()
			f.execs = append(f.execs, ex)
			f.mu.Unlock()
			return err
		}), opts...)
		if err != nil {
			f.t.Fatal(err)
		}
	}
}

// start runs every replica until the test ends.
func (f *fleet) start() { f.startOn(f.replicas) }

// startOn runs the replicas rs until the test ends.
func (f *fleet) startOn(rs []*replica) {
	for _, r := range rs {
		go func() {
			r.runErr = r.sched.Run(context.Background())
			close(r.done)
			f.exited <- r
		}()
	}
	f.t.Cleanup(func() {
		for _, r := range rs {
			if !r.stopped {
				f.shutdown(r, 10*time.Second)
			}
		}
	})
}

// shutdown shuts r down within d and waits for Run to return.
func (f *fleet) shutdown(r *replica, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	r.stopped = true
	err := r.sched.Shutdown(ctx)
	<-r.done
	if !errors.Is(r.runErr, scheduler.ErrClosed) {
		f.t.Errorf("%s: Run returned %v, want ErrClosed", r.id, r.runErr)
	}
	return err
}

// wait lets the fleet run for d, failing the test if a replica's Run
// returns without being shut down.
func (f *fleet) wait(d time.Duration) {
	f.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return
		case r := <-f.exited:
			if !r.stopped {
				f.t.Fatalf("%s: Run returned early: %v", r.id, r.runErr)
			}
		}
	}
}

// executions returns the executions so far, by start time.
func (f *fleet) executions() []execution {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.execs)
	slices.SortFunc(out, func(a, b execution) int { return a.start.Compare(b.start) })
	return out
}

func (f *fleet) skipCount(r string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.skips[r]
}

// checkOncePerTick fails unless every per-second tick of job in [from, to]
// ran exactly once, and fences grow with ticks.
func (f *fleet) checkOncePerTick(job string, from, to time.Time) {
	f.t.Helper()
	runs := map[int64][]execution{} // by tick in unix ms
	for _, e := range f.executions() {
		if e.job == job {
			runs[e.tick.UnixMilli()] = append(runs[e.tick.UnixMilli()], e)
		}
	}
	n := 0
	for tick := from.Truncate(time.Second).Add(time.Second); !tick.After(to); tick = tick.Add(time.Second) {
		n++
		switch got := runs[tick.UnixMilli()]; len(got) {
		case 1:
		case 0:
			f.mu.Lock()
			what := f.tickLog[tick.UnixMilli()]
			f.mu.Unlock()
			f.t.Errorf("%s tick %s: never ran; the replicas: %q", job, tick.Format("15:04:05"), what)
		default:
			var who []int
			for _, e := range got {
				who = append(who, e.replica)
			}
			f.t.Errorf("%s tick %s: ran %d times, on replicas %v", job, tick.Format("15:04:05"), len(got), who)
		}
	}
	if n < 5 {
		f.t.Errorf("window %v..%v holds only %d ticks", from, to, n)
	}
	f.checkFences(job)
}

// checkFences fails unless fences strictly increase with ticks.
func (f *fleet) checkFences(job string) {
	f.t.Helper()
	var execs []execution
	for _, e := range f.executions() {
		if e.job == job {
			execs = append(execs, e)
		}
	}
	slices.SortFunc(execs, func(a, b execution) int { return a.tick.Compare(b.tick) })
	for i := 1; i < len(execs); i++ {
		if execs[i].fence <= execs[i-1].fence {
			f.t.Errorf("%s: fence %d at tick %s after fence %d at tick %s", job, execs[i].fence,
				execs[i].tick.Format("15:04:05.000"), execs[i-1].fence, execs[i-1].tick.Format("15:04:05.000"))
		}
	}
}

// checkNoOverlap fails if two executions of job overlapped in time.
func (f *fleet) checkNoOverlap(job string) {
	f.t.Helper()
	var prev *execution
	for _, e := range f.executions() {
		if e.job != job {
			continue
		}
		if prev != nil && e.start.Before(prev.end) {
			f.t.Errorf("%s: run of tick %s (replica %d) started before the run of tick %s (replica %d) ended",
				job, e.tick.Format("15:04:05"), e.replica, prev.tick.Format("15:04:05"), prev.replica)
		}
		prev = &e
	}
}
