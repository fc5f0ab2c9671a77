package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/leakscan"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// jobSpec is every job's schedule: every second (WithSeconds).
const jobSpec = "* * * * * *"

// replica is one replica of the service: its own Redis clients to every
// node (behind a gate the demo can close), its own Redlock and its own
// Scheduler with the same jobs as every other replica.
type replica struct {
	id      string
	gate    *gate
	clients []*redis.Client
	sched   *scheduler.Scheduler
	scan    *leakscan.Scanner // its heartbeat, as redcron.New wires it (no scans)
}

// replicaName is the id of replica i (0-based).
func replicaName(i int) string { return fmt.Sprintf("r%d", i+1) }

// newReplica builds a replica over the nodes at addrs. trusted says that
// the nodes may vote as soon as they restart (miniredis has no uptime to
// check); prefix keeps this run's keys apart.
func newReplica(id string, cfg config, addrs []string, trusted bool, prefix string, w *workload, rec *recorder) (*replica, error) {
	r := &replica{id: id, gate: newGate()}
	nodes := make([]*store.Node, len(addrs))
	for i, addr := range addrs {
		c := redis.NewClient(&redis.Options{
			Addr:   addr,
			Dialer: r.gate.dial,
			// Dead nodes must fail fast: one dial, no retries, and the
			// Redlock's per-node timeout on every call.
			DialTimeout:           2 * cfg.nodeTimeout,
			ReadTimeout:           5 * cfg.nodeTimeout,
			WriteTimeout:          5 * cfg.nodeTimeout,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1,
			DialerRetries:         1,
			PoolSize:              8,
			PoolTimeout:           cfg.nodeTimeout,
			DisableIdentity:       true,
		})
		r.clients = append(r.clients, c)
		n, err := store.NewNode(nodeName(i), c)
		if err != nil {
			r.close()
			return nil, err
		}
		nodes[i] = n
	}
	opts := []mutex.Option{
		mutex.WithNodeTimeout(cfg.nodeTimeout),
		// A real node that restarted votes only after this much uptime, so
		// keep it short; it must cover the longest lock TTL.
		mutex.WithMaxTTL(cfg.lockTTL),
		mutex.WithKeyPrefix(prefix),
		// The fence counters and occurrence marks of the demo's jobs
		// expire ten minutes after their last use: long enough to cover
		// the jobs' misfire grace and the lead (mutex.MaxReach).
		mutex.WithStateTTL(10 * time.Minute),
		mutex.WithObserver(func(ev mutex.Event) { rec.lockEvent(id, ev) }),
		mutex.WithOwnerCheck(func(owner string, extending bool) error { return r.scan.Check(owner, extending) }),
	}
	if trusted {
		// miniredis does not report its uptime, so the restart check cannot
		// work; the demo's restarted nodes lose their data on purpose.
		opts = append(opts, mutex.WithTrustedNodes())
	}
	rl, err := mutex.New(nodes, opts...)
	if err != nil {
		r.close()
		return nil, err
	}
	if r.scan, err = leakscan.New(rl, id, leakscan.WithInterval(0)); err != nil {
		r.close()
		return nil, err
	}
	s, err := scheduler.New(scheduler.NewRedlockLocker(rl),
		scheduler.WithSeconds(),
		scheduler.WithInstanceID(id),
		scheduler.WithObserver(observer{replica: id, rec: rec}.Observe),
	)
	if err != nil {
		r.close()
		return nil, err
	}
	r.sched = s
	for _, name := range w.names {
		if err := s.Add(name, jobSpec, w.job(id), scheduler.WithLockTTL(cfg.lockTTL)); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// close closes the replica's clients.
func (r *replica) close() {
	for _, c := range r.clients {
		_ = c.Close()
	}
}

// observer feeds one replica's scheduler events to the recorder.
type observer struct {
	replica string
	rec     *recorder
}

// Observe implements func(scheduler.Event).
func (o observer) Observe(ev scheduler.Event) { o.rec.event(o.replica, ev) }

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)
}
