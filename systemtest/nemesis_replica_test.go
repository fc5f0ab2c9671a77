package systemtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// nemesisEnv carries a replica process's configuration: the test binary
// started with it set runs one scheduler replica (runReplicaProcess)
// instead of the tests.
const nemesisEnv = "REDCRON_NEMESIS_REPLICA"

// replicaConfig is a nemesis replica's configuration.
type replicaConfig struct {
	ID        string        `json:"id"`
	Nodes     []string      `json:"nodes"` // the addresses to dial (the replica's proxies)
	Names     []string      `json:"names"` // the nodes' names (the servers' own addresses)
	Store     string        `json:"store"` // the fenced store's address
	History   string        `json:"history"`
	MaxTTL    time.Duration `json:"max_ttl"`
	LockTTL   time.Duration `json:"lock_ttl"`
	Grace     time.Duration `json:"grace"`
	LockAhead time.Duration `json:"lock_ahead"`
	CatchUp   time.Duration `json:"catch_up"` // 0: off
	Offset    time.Duration `json:"offset"`   // the scheduler's clock offset at start
	Once      string        `json:"once"`     // if set, the time of a one-time job "once" (about 3 s long) it also runs
	// FrontDoor builds the replica as users do, with redcron.NewWithClients:
	// its ticks claimed in bulk by the holders of their shards. Otherwise
	// it is a scheduler over a RedlockLocker: a lock per tick.
	FrontDoor bool `json:"front_door"`
	Bulk      int  `json:"bulk"` // the number of bulk jobs it also runs (see bulkJobs)
	// Limited adds limitedJobs, which share a cluster-wide limit of
	// limitedPermits (scheduler.WithClusterLimit).
	Limited bool `json:"limited"`
}

// record is one line of a replica's history: a run's start, cancellation
// or end, a write to the fenced store, or a skipped tick. Times are the
// machine's real clock, in unix nanoseconds, comparable across processes.
type record struct {
	Ev      string `json:"ev"` // start, cancel, end, write, skip
	Replica string `json:"replica"`
	Job     string `json:"job,omitempty"`
	Tick    int64  `json:"tick,omitempty"` // unix ms
	Fence   uint64 `json:"fence,omitempty"`
	Seq     int    `json:"seq,omitempty"`  // a write's number within its run
	T       int64  `json:"t"`              // when it happened (a write: when it was sent)
	Done    int64  `json:"done,omitempty"` // a write: when its answer came
	OK      bool   `json:"ok,omitempty"`   // a write: accepted by the store
	Reason  string `json:"reason,omitempty"`
	Err     string `json:"err,omitempty"`
}

// history appends records to a file, one JSON line per write(2), so that
// a replica killed at any moment leaves whole lines behind.
type history struct {
	mu sync.Mutex
	f  *os.File
}

func (h *history) add(r record) {
	line, _ := json.Marshal(r)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = h.f.Write(append(line, '\n'))
}

// runReplicaProcess runs one nemesis replica until SIGTERM (a graceful
// shutdown) or SIGKILL. Its standard input takes "offset <duration>"
// lines, which set its scheduler's clock offset.
func runReplicaProcess(raw string) int {
	var cfg replicaConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "nemesis replica:", err)
		return 2
	}
	f, err := os.OpenFile(cfg.History, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nemesis replica:", err)
		return 2
	}
	h := &history{f: f}
	var offset atomic.Int64
	offset.Store(int64(cfg.Offset))
	go readOffsets(&offset)
	s, err := newNemesisScheduler(cfg, h, &offset)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nemesis replica:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(sctx)
	}()
	_ = s.Run(context.Background())
	return 0
}

// readOffsets sets offset from the "offset <duration>" lines of stdin.
func readOffsets(offset *atomic.Int64) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "offset "); ok {
			if d, err := time.ParseDuration(v); err == nil {
				offset.Store(int64(d))
			}
		}
	}
}

// nemesisRunner is a nemesis replica's scheduler: the front door's, or
// a scheduler over a RedlockLocker with the leak scanner that keeps its
// heartbeat.
type nemesisRunner interface {
	Add(name, spec string, job scheduler.JobFunc, opts ...scheduler.JobOption) error
	Run(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// lockPerTick is a scheduler over a RedlockLocker, whose Run also keeps
// its replica's heartbeat (its scanner does not scan).
type lockPerTick struct {
	*scheduler.Scheduler
	scan *leakscan.Scanner
}

func (l lockPerTick) Run(ctx context.Context) error {
	scanCtx, stopScan := context.WithCancel(context.Background())
	defer stopScan()
	go l.scan.Run(scanCtx)
	return l.Scheduler.Run(ctx)
}

// newNemesisScheduler builds the replica's scheduler with nemesisJobs, the
// bulk jobs and the one-time job its configuration asks for.
func newNemesisScheduler(cfg replicaConfig, h *history, offset *atomic.Int64) (nemesisRunner, error) {
	clients := make([]*redis.Client, len(cfg.Nodes))
	for i, addr := range cfg.Nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second,
			WriteTimeout: time.Second, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	}
	schedOpts := []scheduler.Option{
		scheduler.WithSeconds(),
		scheduler.WithInstanceID(cfg.ID),
		scheduler.WithLockAhead(cfg.LockAhead),
		scheduler.WithClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }),
		scheduler.WithObserver(observerFunc(func(e scheduler.Event) {
			if e.Kind == "skipped" {
				r := record{Ev: "skip", Replica: cfg.ID, Job: e.Job, Tick: e.Tick.UnixMilli(), T: time.Now().UnixNano(), Reason: e.Skip}
				if e.Err != nil {
					r.Err = e.Err.Error()
				}
				h.add(r)
			}
		})),
	}
	scanOpts := []leakscan.Option{leakscan.WithHeartbeat(time.Second, 3*time.Second), leakscan.WithInterval(0)}
	var s nemesisRunner
	if cfg.FrontDoor {
		ucs := make([]redis.UniversalClient, len(clients))
		for i, c := range clients {
			ucs[i] = c
		}
		fd, err := redcron.NewWithClients(ucs, redcron.WithLockOptions(mutex.WithMaxTTL(cfg.MaxTTL)),
			redcron.WithSchedulerOptions(schedOpts...), redcron.WithLeakScanOptions(scanOpts...))
		if err != nil {
			return nil, err
		}
		s = fd
	} else {
		var nodes []*store.Node
		for i, c := range clients {
			n, err := store.NewNode(cfg.Names[i], c)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, n)
		}
		var scan *leakscan.Scanner
		rl, err := mutex.New(nodes, mutex.WithMaxTTL(cfg.MaxTTL),
			mutex.WithOwnerCheck(func(owner string, extending bool) error { return scan.Check(owner, extending) }))
		if err != nil {
			return nil, err
		}
		if scan, err = leakscan.New(rl, cfg.ID, scanOpts...); err != nil {
			return nil, err
		}
		sched, err := scheduler.New(scheduler.NewRedlockLocker(rl), schedOpts...)
		if err != nil {
			return nil, err
		}
		s = lockPerTick{sched, scan}
	}
	sc := redis.NewClient(&redis.Options{Addr: cfg.Store, MaxRetries: -1})
	opts := []scheduler.JobOption{scheduler.WithLockTTL(cfg.LockTTL), scheduler.WithMisfireGrace(cfg.Grace)}
	if cfg.CatchUp > 0 {
		opts = append(opts, scheduler.WithCatchUp(cfg.CatchUp))
	}
	for _, j := range append(slices.Clone(nemesisJobs), bulkJobs(cfg.Bulk)...) {
		if err := s.Add(j.name, j.spec, nemesisJob(cfg.ID, h, sc, j.writes), opts...); err != nil {
			return nil, err
		}
	}
	if cfg.Limited {
		// Each limited job's own listener records its events as "job-"
		// and the kind, beside the scheduler-wide observer's skips.
		listen := scheduler.WithJobObserver(func(e scheduler.Event) {
			r := record{Ev: "job-" + string(e.Kind), Replica: cfg.ID, Job: e.Job, Tick: e.Tick.UnixMilli(), T: time.Now().UnixNano(), Reason: e.Skip}
			h.add(r)
		})
		for i := range limitedJobs {
			job := nemesisJob(cfg.ID, h, sc, []time.Duration{0, limitedRun})
			if err := s.Add(fmt.Sprint("limited-", i), "*/10 * * * * *", job, append(opts, scheduler.WithClusterLimit("reports", limitedPermits),
				scheduler.WithTags("reports"), listen)...); err != nil {
				return nil, err
			}
		}
	}
	if cfg.Once != "" {
		job := nemesisJob(cfg.ID, h, sc, []time.Duration{0, 3 * time.Second})
		if err := s.Add("once", "@at "+cfg.Once, job, opts...); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// The limited jobs (replicaConfig.Limited): limitedJobs jobs due together
// every 10 s, each running limitedRun, under one cluster-wide limit of
// limitedPermits, tagged "reports", each with a listener of its own.
const (
	limitedJobs    = 5
	limitedRun     = 3 * time.Second
	limitedPermits = 2
)

// nemesisJobDef is one of the nemesis' jobs: its name, spec, period and
// the pauses after which it writes to the fenced store.
type nemesisJobDef struct {
	name, spec string
	every, at  time.Duration // due every, at an offset of at
	writes     []time.Duration
}

// bulkJobs returns n bulk jobs: "bulk-00000" on, each due every 5 minutes
// at its own second of them (n/300 due each second: what the replicas
// carry under the race detector beside the faults), running a few µs and
// writing nothing: they fill the shards with many jobs each, and the
// checker holds each of their ticks to the same rules as the others'.
func bulkJobs(n int) []nemesisJobDef {
	out := make([]nemesisJobDef, n)
	for i := range out {
		at := i % 300
		out[i] = nemesisJobDef{name: fmt.Sprintf("bulk-%05d", i), spec: fmt.Sprintf("%d %d/5 * * * *", at%60, at/60),
			every: 5 * time.Minute, at: time.Duration(at) * time.Second}
	}
	return out
}

// nemesisJobs are the jobs every replica runs: "short" (a few ms, every
// second), "long" (about 2.4 s, every second, so most of its ticks are
// overlap skips) and "rare" (every 15 s: a tick whose successor is far
// off, as a daily job's is, so that only its own mark protects it). Each
// writes to the fenced store after each of its pauses.
var nemesisJobs = []nemesisJobDef{
	{"short", "* * * * * *", time.Second, 0, []time.Duration{0, 20 * time.Millisecond}},
	{"long", "* * * * * *", time.Second, 0, []time.Duration{0, 800 * time.Millisecond, 800 * time.Millisecond, 800 * time.Millisecond}},
	{"rare", "*/15 * * * * *", 15 * time.Second, 0, []time.Duration{0, 20 * time.Millisecond}},
}

// nemesisJob returns a job that records its start, the cancellation of
// its context and its end, and makes one fenced write after each pause
// of writes, while its context is live. Write i of a run carries the
// fence 4 × run fence + i: increasing within a run, and every write of a
// later run (a larger run fence) above every write of an earlier one.
func nemesisJob(id string, h *history, sc *redis.Client, writes []time.Duration) scheduler.JobFunc {
	return scheduler.JobFunc(func(ctx context.Context, run scheduler.RunInfo) error {
		base := record{Replica: id, Job: run.Job, Tick: run.Tick.UnixMilli(), Fence: run.Fence}
		at := func(ev string) record { r := base; r.Ev, r.T = ev, time.Now().UnixNano(); return r }
		h.add(at("start"))
		stop := context.AfterFunc(ctx, func() {
			r := at("cancel")
			r.Err = fmt.Sprint(context.Cause(ctx))
			h.add(r)
		})
		defer stop()
		for i, pause := range writes {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			if ctx.Err() != nil {
				break
			}
			w := at("write")
			w.Seq = i
			wctx, cancel := context.WithTimeout(context.Background(), time.Second)
			ok, err := store.FencedSet(wctx, sc, "nemesis:"+run.Job, 4*run.Fence+uint64(i), id+" "+strconv.Itoa(i))
			cancel()
			w.Done, w.OK = time.Now().UnixNano(), ok
			if err != nil {
				w.Err = err.Error()
			}
			h.add(w)
		}
		h.add(at("end"))
		return nil
	})
}
