package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redcron/redcron/bench/internal/prof"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/internal/redisproc"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// replica is one scheduler replica with its own clients, nodes and Redlock,
// as in a separate process.
type replica struct {
	id      int
	clients []*redis.Client
	rl      *mutex.Redlock
	s       *scheduler.Scheduler
	counter *cmdCounter
	runErr  error
}

// newReplica builds replica id over the servers, with su.jobs trivial jobs
// due every second, named j0, j1, ..., locked su.ahead before their ticks;
// its events go to col.
func newReplica(id int, servers []*redisproc.Server, prefix string, su setup, col *collector) (*replica, error) {
	rep := &replica{id: id, counter: newCmdCounter()}
	for _, s := range servers {
		c := redisnode.NewClient(s.Addr())
		c.AddHook(rep.counter)
		rep.clients = append(rep.clients, c)
	}
	var err error
	rep.rl, err = locks.NewRedlock(rep.clients, mutex.WithTrustedNodes(), mutex.WithKeyPrefix(prefix),
		mutex.WithObserver(col.lockObserver(id)))
	if err != nil {
		rep.close()
		return nil, err
	}
	rep.s, err = scheduler.New(scheduler.NewRedlockLocker(rep.rl),
		scheduler.WithSeconds(),
		scheduler.WithObserver(col.observer(id)),
		scheduler.WithInstanceID(fmt.Sprintf("replica-%d", id)),
		scheduler.WithLeakScan(0),
		scheduler.WithLockAhead(su.ahead))
	if err != nil {
		rep.close()
		return nil, err
	}
	job := scheduler.JobFunc(func(_ context.Context, info scheduler.RunInfo) error {
		col.jobStarted(info)
		return nil
	})
	for j := range su.jobs {
		if err := rep.s.Add("j"+strconv.Itoa(j), "* * * * * *", job); err != nil {
			rep.close()
			return nil, err
		}
	}
	return rep, nil
}

func (r *replica) close() {
	for _, c := range r.clients {
		_ = c.Close()
	}
}

// nodeStats returns the lock traffic of the replica's nodes, summed.
func (r *replica) nodeStats() store.Stats {
	var sum store.Stats
	for _, n := range r.rl.Nodes() {
		s := n.Stats()
		sum.Calls += s.Calls
		sum.Pipelines += s.Pipelines
		sum.Failed += s.Failed
		sum.Skipped += s.Skipped
	}
	return sum
}

// cmdCounter is a go-redis hook that counts the commands a client sends,
// by name, pipelined or not.
type cmdCounter struct {
	mu     sync.Mutex
	counts map[string]uint64
}

func newCmdCounter() *cmdCounter { return &cmdCounter{counts: make(map[string]uint64)} }

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds)
		return next(ctx, cmds)
	}
}

func (c *cmdCounter) add(cmds []redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cmds {
		name := cmd.Name()
		if name == "evalsha" {
			name += ":" + scriptOp(cmd.Args())
		}
		c.counts[name]++
	}
}

// scriptOp tells which of the library's lock scripts an EVALSHA runs, from
// the shape of its arguments (store/lua): every script carries k locks
// after one leading argument; acquire and commit as 2k keys and 3k
// arguments (the leading one "0" or "1" for acquire, the state TTL in ms
// for commit), release as 2k keys and 2k arguments, extend as k keys and
// 2k arguments.
func scriptOp(args []any) string {
	// evalsha sha numkeys key... arg...
	if len(args) < 4 {
		return "other"
	}
	nkeys, _ := strconv.Atoi(fmt.Sprint(args[2]))
	nargs := len(args) - 3 - nkeys - 1 // after the leading argument
	switch {
	case nkeys <= 0:
		return "other"
	case nargs == nkeys && nkeys%2 == 0:
		return "release"
	case nargs == 2*nkeys:
		return "extend"
	case nkeys%2 == 0 && nargs == 3*nkeys/2:
		if first := fmt.Sprint(args[3+nkeys]); first == "0" || first == "1" {
			return "acquire"
		}
		return "commit"
	}
	return "other"
}

func (c *cmdCounter) snapshot() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]uint64, len(c.counts))
	for k, v := range c.counts {
		m[k] = v
	}
	return m
}

// profiler writes one CPU profile, of the first measured window it is
// started for.
type profiler struct {
	path    string
	stopCPU func() error // while the profile is being written
	started bool
	err     error
}

func newProfiler(path string) *profiler { return &profiler{path: path} }

func (p *profiler) start() {
	if p.path == "" || p.started {
		return
	}
	p.started = true
	p.stopCPU, p.err = prof.StartCPU(p.path)
}

func (p *profiler) stop() {
	if p.stopCPU == nil {
		return
	}
	if err := p.stopCPU(); p.err == nil {
		p.err = err
	}
	p.stopCPU = nil
}

func (p *profiler) close() error {
	p.stop()
	return p.err
}
