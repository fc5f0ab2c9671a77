package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/bench/internal/locks"
	"github.com/redcron/redcron/bench/internal/redisnode"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redis/go-redis/v9"
)

// replica is one scheduler replica with its own clients, nodes and
// Redlock, in a process of its own (see replicaMain), built one of two
// ways (replicaSpec.Wiring): from the library's parts (s and scan) or by
// its front door (front).
type replica struct {
	id      int
	clients []*redis.Client
	rl      *mutex.Redlock
	counter *cmdCounter

	s     *scheduler.Scheduler
	scan  *leakscan.Scanner  // the heartbeats, as the front door keeps them; no scans
	front *redcron.Scheduler // wiringRedcron: all of it
}

// newReplica builds replica spec.ID over the servers at spec.Addrs, its
// jobs' ticks locked spec.Ahead before they come, with the lock ledger on
// (the default) or off (spec.NoLedger); its events go to col. It adds no
// job (addJobs).
//
// wiringScheduler: scheduler.New over mutex.New with WithTrustedNodes
// (brand-new servers vote at once), a key prefix, a mutex observer and
// the heartbeat check (WithOwnerCheck), and a leakscan.Scanner that keeps
// the heartbeat without scanning; over the benchmarks' clients
// (redisnode.NewClient).
//
// wiringRedcron: redcron.NewWithClients, over clients made as redcron.New
// makes them (1 s timeouts, no command retries, one dial per attempt),
// with scheduler.WithSeconds and only what the benchmark needs to tell
// runs apart and count them: a key prefix of the run's, observers, and
// replica-N as the instance ID. The nodes are not trusted: a server votes
// only once it has been up for the max TTL (and, for a tick, since the
// max TTL and 3 s before it).
func newReplica(spec replicaSpec, col *collector) (*replica, error) {
	id := spec.ID
	rep := &replica{id: id, counter: newCmdCounter()}
	for _, a := range spec.Addrs {
		var c *redis.Client
		if spec.Wiring == wiringRedcron {
			c = frontDoorClient(a)
		} else {
			c = redisnode.NewClient(a)
		}
		c.AddHook(rep.counter)
		rep.clients = append(rep.clients, c)
	}
	opts := []mutex.Option{mutex.WithKeyPrefix(spec.Prefix), mutex.WithObserver(col.lockObserver(id))}
	if spec.MaxTTL > 0 {
		opts = append(opts, mutex.WithMaxTTL(spec.MaxTTL))
	}
	if spec.NoLedger {
		opts = append(opts, mutex.WithLedger(0, 0))
	}
	instance := fmt.Sprintf("replica-%d", id)
	schedOpts := []scheduler.Option{scheduler.WithSeconds(), scheduler.WithObserver(col.observer(id)), scheduler.WithInstanceID(instance)}
	if spec.Ahead > 0 {
		schedOpts = append(schedOpts, scheduler.WithLockAhead(spec.Ahead))
	}
	var err error
	if spec.Wiring == wiringRedcron {
		clients := make([]redis.UniversalClient, len(rep.clients))
		for i, c := range rep.clients {
			clients[i] = c
		}
		rep.front, err = redcron.NewWithClients(clients, redcron.WithLockOptions(opts...), redcron.WithSchedulerOptions(schedOpts...))
		if err != nil {
			rep.close()
			return nil, err
		}
		rep.rl = rep.front.Locks()
		return rep, nil
	}
	opts = append(opts, mutex.WithTrustedNodes(),
		mutex.WithOwnerCheck(func(owner string, extending bool) error { return rep.scan.Check(owner, extending) }))
	if rep.rl, err = locks.NewRedlock(rep.clients, opts...); err != nil {
		rep.close()
		return nil, err
	}
	if rep.scan, err = leakscan.New(rep.rl, instance, leakscan.WithInterval(0)); err != nil {
		rep.close()
		return nil, err
	}
	if rep.s, err = scheduler.New(scheduler.NewRedlockLocker(rep.rl), schedOpts...); err != nil {
		rep.close()
		return nil, err
	}
	return rep, nil
}

// frontDoorClient returns a client of the server at addr with the options
// redcron.New gives its own.
func frontDoorClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
}

// addJobs adds spec.Jobs jobs named j0, j1, ..., on spec.Spec, each with
// spec.LockTTL if set: each records its start (col.jobStarted), then
// sleeps spec.JobSleep.
func (r *replica) addJobs(spec replicaSpec, col *collector) error {
	sleep := spec.JobSleep
	job := scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
		col.jobStarted(r.id, info)
		if sleep <= 0 {
			return nil
		}
		t := time.NewTimer(sleep)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	var opts []scheduler.JobOption
	if spec.LockTTL > 0 {
		opts = append(opts, scheduler.WithLockTTL(spec.LockTTL))
	}
	add := func(name string) error { return r.s.Add(name, spec.Spec, job, opts...) }
	if r.front != nil {
		add = func(name string) error { return r.front.Add(name, spec.Spec, job, opts...) }
	}
	for j := range spec.Jobs {
		if err := add("j" + strconv.Itoa(j)); err != nil {
			return err
		}
	}
	return nil
}

// run runs the replica until ctx is done or shutdown is called.
func (r *replica) run(ctx context.Context) error {
	if r.front != nil {
		return r.front.Run(ctx)
	}
	go r.scan.Run(ctx) // heartbeats until the replica ends
	return r.s.Run(ctx)
}

// shutdown stops the replica's scheduler gracefully.
func (r *replica) shutdown(ctx context.Context) error {
	if r.front != nil {
		return r.front.Shutdown(ctx)
	}
	return r.s.Shutdown(ctx)
}

func (r *replica) close() {
	for _, c := range r.clients {
		_ = c.Close()
	}
}

// nodeStats returns the lock traffic of the replica's nodes, summed.
func (r *replica) nodeStats() engine.Stats {
	var sum engine.Stats
	for _, n := range lockwire.Of(r.rl).Nodes {
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
