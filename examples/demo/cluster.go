package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// cluster is the set of independent Redis masters the replicas lock on:
// in-process miniredis servers that the demo can kill and restart, or real
// servers given with -redis, which it only watches.
type cluster struct {
	addrs []string
	rec   *recorder

	mu      sync.Mutex
	servers []*miniredis.Miniredis // nil for real servers
	up      []bool

	stopProbe context.CancelFunc // real servers only
	probeDone chan struct{}
}

// nodeName is the name of node i (0-based) in the Redlock and in logs.
func nodeName(i int) string { return fmt.Sprintf("node%d", i+1) }

// startCluster starts n miniredis servers on free loopback ports.
func startCluster(n int, rec *recorder) (*cluster, error) {
	c := &cluster{rec: rec, servers: make([]*miniredis.Miniredis, n), up: make([]bool, n)}
	for i := range n {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			c.close()
			return nil, fmt.Errorf("starting miniredis node %d: %w", i+1, err)
		}
		// By default miniredis only expires keys when told to (FastForward);
		// lock TTLs must run in real time here.
		m.ClockTTL(true)
		c.servers[i], c.up[i] = m, true
		c.addrs = append(c.addrs, m.Addr())
	}
	rec.nodesUp(time.Now(), n)
	return c, nil
}

// watchCluster checks that a quorum of the real servers answers, then
// pings them in the background to record when they go down or come back,
// so that the verification knows when a quorum was up.
func watchCluster(ctx context.Context, addrs []string, timeout time.Duration, rec *recorder, nar *narrator) (*cluster, error) {
	c := &cluster{addrs: addrs, rec: rec, up: make([]bool, len(addrs))}
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, DialTimeout: timeout, ReadTimeout: timeout,
			WriteTimeout: timeout, MaxRetries: -1, DialerRetries: 1, PoolSize: 1, DisableIdentity: true})
	}
	closeAll := func() {
		for _, cl := range clients {
			_ = cl.Close()
		}
	}
	ping := func(ctx context.Context, i int) error {
		ctx, cancel := context.WithTimeout(ctx, 2*timeout)
		defer cancel()
		return clients[i].Ping(ctx).Err()
	}
	var errs []error
	n := 0
	for i := range addrs {
		if err := ping(ctx, i); err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", nodeName(i), addrs[i], err))
			continue
		}
		c.up[i] = true
		n++
	}
	if n < c.quorum() {
		closeAll()
		return nil, fmt.Errorf("only %d of %d Redis servers answer, below the quorum of %d: %w", n, len(addrs), c.quorum(), errors.Join(errs...))
	}
	for _, err := range errs {
		nar.say("warning: %v", err)
	}
	rec.nodesUp(time.Now(), n)

	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	c.stopProbe, c.probeDone = stop, make(chan struct{})
	go func() {
		defer close(c.probeDone)
		defer closeAll()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
			}
			for i := range addrs {
				ok := ping(pctx, i) == nil
				c.mu.Lock()
				changed := c.up[i] != ok
				c.up[i] = ok
				up := c.countLocked()
				c.mu.Unlock()
				if changed && pctx.Err() == nil {
					now := time.Now()
					state := map[bool]string{true: "answers again", false: "stopped answering"}[ok]
					rec.nodesUp(now, up)
					rec.fault(now, fmt.Sprintf("%s %s", nodeName(i), state))
					nar.say("%s (%s) %s: %d of %d up", nodeName(i), addrs[i], state, up, len(addrs))
				}
			}
		}
	}()
	return c, nil
}

// external reports whether the nodes are real servers given with -redis.
func (c *cluster) external() bool { return c.servers == nil }

// quorum is the number of nodes a lock needs.
func (c *cluster) quorum() int { return len(c.addrs)/2 + 1 }

// upCount returns how many nodes are up.
func (c *cluster) upCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.countLocked()
}

func (c *cluster) countLocked() int {
	n := 0
	for _, u := range c.up {
		if u {
			n++
		}
	}
	return n
}

// kill stops in-process nodes abruptly: their listeners and every client
// connection are closed, and their data is gone.
func (c *cluster) kill(nodes ...int) error {
	if c.external() {
		return errors.New("cannot kill real servers")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for _, i := range nodes {
		if !c.up[i] {
			return fmt.Errorf("%s is already down", nodeName(i))
		}
		c.servers[i].Close()
		c.up[i] = false
		c.rec.fault(now, nodeName(i)+" killed")
	}
	c.rec.nodesUp(now, c.countLocked())
	return nil
}

// restart starts new, empty in-process servers on the addresses of killed
// nodes, as a Redis restarted without persistence would be.
func (c *cluster) restart(nodes ...int) error {
	if c.external() {
		return errors.New("cannot restart real servers")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range nodes {
		if c.up[i] {
			return fmt.Errorf("%s is not down", nodeName(i))
		}
		m, err := startAt(c.addrs[i])
		if err != nil {
			return fmt.Errorf("restarting %s on %s: %w", nodeName(i), c.addrs[i], err)
		}
		c.servers[i], c.up[i] = m, true
		now := time.Now()
		c.rec.fault(now, nodeName(i)+" restarted")
		c.rec.nodesUp(now, c.countLocked())
	}
	return nil
}

// startAt starts an empty miniredis on addr, retrying for a second in
// case the port is briefly unavailable.
func startAt(addr string) (*miniredis.Miniredis, error) {
	deadline := time.Now().Add(time.Second)
	for {
		m := miniredis.NewMiniRedis()
		err := m.StartAddr(addr)
		if err == nil {
			m.ClockTTL(true)
			return m, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// close stops the nodes, or the probe of real ones.
func (c *cluster) close() {
	if c.stopProbe != nil {
		c.stopProbe()
		<-c.probeDone
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.servers {
		if m != nil && c.up[i] {
			m.Close()
		}
	}
}
