package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redis/go-redis/v9"
)

// replica is one scheduler replica with its own clients, nodes and
// Redlock, in a process of its own (see replicaMain).
type replica struct {
	id      int
	clients []*redis.Client
	rl      *mutex.Redlock
	s       *scheduler.Scheduler
	scan    *leakscan.Scanner // the heartbeats, as the front door keeps them; no scans
	counter *cmdCounter
}

// newReplica builds replica id over the servers at addrs, with jobs
// trivial jobs due every second, named j0, j1, ..., locked ahead before
// their ticks, with the lock ledger on (the default) or off (noLedger);
// its events go to col.
func newReplica(id int, addrs []string, prefix string, jobs int, ahead time.Duration, noLedger bool, col *collector) (*replica, error) {
	rep := &replica{id: id, counter: newCmdCounter()}
	for _, a := range addrs {
		c := redisnode.NewClient(a)
		c.AddHook(rep.counter)
		rep.clients = append(rep.clients, c)
	}
	opts := []mutex.Option{mutex.WithTrustedNodes(), mutex.WithKeyPrefix(prefix),
		mutex.WithObserver(col.lockObserver(id)),
		mutex.WithOwnerCheck(func(owner string, extending bool) error { return rep.scan.Check(owner, extending) })}
	if noLedger {
		opts = append(opts, mutex.WithLedger(0, 0))
	}
	var err error
	rep.rl, err = locks.NewRedlock(rep.clients, opts...)
	if err != nil {
		rep.close()
		return nil, err
	}
	rep.scan, err = leakscan.New(rep.rl, fmt.Sprintf("replica-%d", id), leakscan.WithInterval(0))
	if err != nil {
		rep.close()
		return nil, err
	}
	rep.s, err = scheduler.New(scheduler.NewRedlockLocker(rep.rl),
		scheduler.WithSeconds(),
		scheduler.WithObserver(col.observer(id)),
		scheduler.WithInstanceID(fmt.Sprintf("replica-%d", id)),
		scheduler.WithLockAhead(ahead))
	if err != nil {
		rep.close()
		return nil, err
	}
	job := scheduler.JobFunc(func(_ context.Context, info scheduler.RunInfo) error {
		col.jobStarted(id, info)
		return nil
	})
	for j := range jobs {
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
func (r *replica) nodeStats() engine.Stats {
	var sum engine.Stats
	for _, n := range r.rl.Nodes() {
		s := (*engine.Node)(n).Stats()
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
// the shape of its arguments (internal/engine/lua): every script carries k
// locks after one leading argument. acquire has 3k keys (lock, state,
// pause) and 3k arguments, the leading one "0" or "1"; commit 4k keys
// (lock, state, ledger, trigger) and 8k arguments, the leading one the
// state TTL in ms; release 3k keys (lock, state, ledger) and 7k arguments;
// extend k keys and 2k arguments, the leading one "".
func scriptOp(args []any) string {
	// evalsha sha numkeys key... arg...
	if len(args) < 4 {
		return "other"
	}
	nkeys, _ := strconv.Atoi(fmt.Sprint(args[2]))
	if nkeys <= 0 || len(args) < 4+nkeys {
		return "other"
	}
	lead := fmt.Sprint(args[3+nkeys])
	nargs := len(args) - 3 - nkeys - 1 // after the leading argument
	switch {
	case lead == "" && nargs == 2*nkeys:
		return "extend"
	case nkeys%3 == 0 && nargs == nkeys && (lead == "0" || lead == "1"):
		return "acquire"
	case nkeys%4 == 0 && nargs == 2*nkeys:
		return "commit"
	case nkeys%3 == 0 && nargs == 7*nkeys/3:
		return "release"
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
