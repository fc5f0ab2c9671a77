package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The node's lock scripts are pipelined: calls from any number of
// goroutines queue up, and one worker goroutine per node sends whatever is
// queued as one pipeline, so concurrent lock operations on a node share a
// round trip (and adjacent calls of one script share a script call,
// mergeCalls), and a caller costs no goroutine. The worker starts with the
// first call and ends after idleTimeout without calls; nothing needs to be
// closed. A caller that waits for its answer at once (MayBlock) and finds
// the node idle sends its calls itself, from its own goroutine, saving the
// worker's two hand-offs; calls made meanwhile queue for the worker, which
// it starts when it is done. On a single-server client the calls go on
// one connection (see conn.go).
const (
	idleTimeout     = time.Second
	maxBatch        = 512              // calls per pipeline
	defaultDeadline = 10 * time.Second // for calls whose context has none
	// maxPipelineItems bounds the locks (parts) a pipeline carries, and so
	// the time the server takes to answer it (some tens of µs a lock):
	// under load, the calls behind wait in the queue, where those whose
	// context ends are completed unsent, rather than in a pipeline whose
	// answers come after its deadline and mark the node as failing.
	maxPipelineItems = 2048
)

// call is one script invocation waiting for the node's worker.
type call struct {
	ctx    context.Context
	script *script
	keys   []string
	args   []any            // the script's leading argument, then the locks' arguments
	items  int              // the number of locks the call carries
	done   func(*redis.Cmd) // called once, from the worker or from submit; must not block
	// cleanup calls (releases) are sent even while the node backs off: a
	// key left behind blocks others until it expires.
	cleanup bool
	// plain, for an acquire call of one lock, sends it as plain commands
	// (see plainAcquire), and as the script only when they cannot tell.
	plain *plainAcquire
}

// batcher queues calls for one node and runs its worker.
type batcher struct {
	n      *Node
	mu     sync.Mutex
	queue  []*call
	urgent []*call // extensions: sent ahead of the queue, so that a lease kept alive never waits behind claims
	// active: a sender owns the node's sending, the worker goroutine or a
	// caller sending its own calls (submit); the fields below marked "the
	// sender's" are used by it alone.
	active bool
	worker bool // the worker goroutine is running
	parked bool // the worker waits for calls: the connection may be closed
	wake   chan struct{}
	health health
	stats  Stats
	// loaded are the scripts the server answered without NOSCRIPT: the
	// others go as EVAL, with their source, so that a script's first call
	// is not answered NOSCRIPT and sent again after the calls that
	// followed it (a node's calls run in the order they were made, but for
	// the extensions, sent ahead). The sender's.
	loaded map[*script]bool
	// conn is the connection the calls go on (single-server clients), and
	// server what its first pipeline's INFO said (nil until read). The
	// sender's; the idle closer takes them while no sender is active.
	conn   *redis.Conn
	server *serverRead
	// lastSent is when a sender last finished; closing says the idle
	// closer (closeIdle) is armed.
	lastSent time.Time
	closing  bool
	// settled says a pipeline went through the client's pool: a Conn made
	// before the client initialised a connection of its own races with it
	// (go-redis v9.23: a Conn writes the options it shares with its client,
	// the maintenance notifications' mode, under a lock of its own, as it
	// initialises its first connection). The sender's.
	settled bool
}

// Stats counts a node's lock traffic.
type Stats struct {
	Calls     uint64 // script calls sent (a NOSCRIPT retry counts again, as does a plain acquisition the script had to decide)
	Plain     uint64 // acquisitions sent as plain commands, not a script call (see plainAcquire)
	Pipelines uint64 // round trips that carried them
	Failed    uint64 // pipelines that failed with a network error or a timeout
	Skipped   uint64 // calls failed at once: node backing off, or context done
}

// Stats returns the node's lock traffic so far.
func (n *Node) Stats() Stats {
	n.batch.mu.Lock()
	defer n.batch.mu.Unlock()
	return n.batch.stats
}

func newBatcher(n *Node) *batcher {
	return &batcher{n: n, wake: make(chan struct{}, 1)}
}

// submit queues calls, together so that they share a pipeline, and
// completes at once those whose context is done, or all of them when the
// node is backing off (cleanup calls excepted). With inline set (the
// caller waits for the answers at once, see MayBlock) and the node idle
// and healthy, the caller sends them itself instead, before submit
// returns.
func (b *batcher) submit(inline bool, calls ...*call) {
	var failed, live []*call
	var errs []error
	now := time.Now()
	b.mu.Lock()
	queued := len(b.queue) + len(b.urgent)
	down := b.health.check(now)
	for _, c := range calls {
		err := c.ctx.Err()
		if err != nil {
			err = notSent(err)
		} else if down != nil && !c.cleanup {
			err = down
		}
		if err != nil {
			b.stats.Skipped++
			failed, errs = append(failed, c), append(errs, err)
			continue
		}
		live = append(live, c)
	}
	if inline && len(live) > 0 && !b.active && queued == 0 && down == nil && b.health.failures == 0 {
		b.active = true
		b.mu.Unlock()
		for i, c := range failed {
			c.done(failedCmd(c.ctx, errs[i]))
		}
		b.flush(live)
		b.release()
		return
	}
	for _, c := range live {
		if c.script == extendScript {
			b.urgent = append(b.urgent, c)
		} else {
			b.queue = append(b.queue, c)
		}
	}
	after := len(b.queue) + len(b.urgent)
	start := !b.active && after > queued
	if start {
		b.active, b.worker = true, true
	}
	wake := b.worker && after > queued
	b.mu.Unlock()
	for i, c := range failed {
		c.done(failedCmd(c.ctx, errs[i]))
	}
	switch {
	case start:
		go b.work()
	case wake:
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// release ends a caller's own sending (submit): the calls queued meanwhile
// go to the worker, started for them; with none, the node is idle, and
// its connection is given back after connIdle unless used again.
func (b *batcher) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue)+len(b.urgent) > 0 {
		b.worker = true
		go b.work()
		return
	}
	b.active = false
	b.idled()
}

// work sends the queued calls, a pipeline at a time, until the queue has
// been empty for idleTimeout.
func (b *batcher) work() {
	idle := time.NewTimer(idleTimeout)
	defer idle.Stop()
	for {
		b.mu.Lock()
		batch := b.take()
		b.parked = len(batch) == 0
		if b.parked {
			b.idled()
		}
		b.mu.Unlock()
		if len(batch) > 0 {
			b.flush(batch)
			idle.Reset(idleTimeout)
			continue
		}
		select {
		case <-b.wake:
		case <-idle.C:
			b.mu.Lock()
			if len(b.queue)+len(b.urgent) == 0 {
				b.active, b.worker, b.parked = false, false, false
				conn := b.detach()
				b.mu.Unlock()
				if conn != nil {
					_ = conn.Close()
				}
				return
			}
			b.mu.Unlock()
			idle.Reset(idleTimeout)
		}
	}
}

// take removes from the queue the calls of the next pipeline: every
// urgent call, then the queued ones in order, up to maxBatch calls and
// maxPipelineItems locks (at least one call). Called with b.mu held.
func (b *batcher) take() []*call {
	batch := b.urgent
	b.urgent = nil
	n, items := 0, 0
	for n < len(b.queue) && len(batch) < maxBatch {
		c := b.queue[n]
		if len(batch) > 0 && items+c.items > maxPipelineItems {
			break
		}
		batch, items, n = append(batch, c), items+c.items, n+1
	}
	if n == len(b.queue) {
		b.queue = nil
	} else {
		b.queue = b.queue[n:]
	}
	return batch
}

// liveCalls completes, unsent, the calls of batch whose context ended while
// queued, and returns the others with the latest of their deadlines.
func liveCalls(batch []*call) ([]*call, time.Time) {
	var deadline time.Time
	live := make([]*call, 0, len(batch))
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.done(failedCmd(c.ctx, notSent(err)))
			continue
		}
		live = append(live, c)
		d, ok := c.ctx.Deadline()
		if !ok {
			d = time.Now().Add(defaultDeadline)
		}
		if d.After(deadline) {
			deadline = d
		}
	}
	return live, deadline
}

// send sends batch in one pipeline, and the calls a server answered with
// NOSCRIPT (a new or restarted server) again with their scripts, in one
// more. It returns each call's command and how many were sent again.
func (b *batcher) send(ctx context.Context, batch []*call) ([]*redis.Cmd, int) {
	cmds := b.exec(ctx, batch, false)
	var again []int
	for i := range batch {
		if cmds[i] == nil || isNoScript(cmds[i].Err()) { // nil: plain commands that could not tell
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		calls := make([]*call, len(again))
		for j, i := range again {
			calls[j] = batch[i]
		}
		for j, cmd := range b.exec(ctx, calls, true) {
			cmds[again[j]] = cmd
		}
	}
	return cmds, len(again)
}

// flush sends batch as one pipeline (two if the server lacked a script)
// and completes every call. Calls whose context ended while queued are
// completed with its error, unsent.
func (b *batcher) flush(batch []*call) {
	live, deadline := liveCalls(batch)
	skipped := len(batch) - len(live)
	if len(live) == 0 {
		b.mu.Lock()
		b.stats.Skipped += uint64(skipped)
		b.mu.Unlock()
		return
	}
	batch = live
	b.askInfo(batch)
	if b.n.singleServer() {
		batch = mergeCalls(batch)
	}
	for _, c := range batch {
		c.script = c.script.lean(c.items)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmds, again := b.send(ctx, batch)
	failed, broken := false, false
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			failed = failed || !ServerError(err)
			broken = true
		}
	}
	if broken && b.conn != nil {
		// Whatever the error, the next pipeline goes on a new connection
		// and reads the server again.
		_ = b.detach().Close()
	} else {
		b.readInfo(batch, cmds)
	}
	b.settled = b.settled || !broken
	b.mu.Lock()
	b.health.record(time.Now(), failed)
	plain := 0
	for _, c := range batch {
		if c.plain != nil && c.args[0] != "1" { // sent as plain commands (exec)
			plain++
		}
	}
	b.stats.Calls += uint64(len(batch) - plain + again)
	b.stats.Plain += uint64(plain)
	b.stats.Pipelines += 1 + uint64(min(again, 1))
	b.stats.Skipped += uint64(skipped)
	if failed {
		b.stats.Failed++
	}
	b.mu.Unlock()
	for i, c := range batch {
		c.done(cmds[i])
	}
}

// exec sends calls as one pipeline of EVALSHA, or, if load is set or the
// script was not seen loaded (b.loaded), of EVAL, which runs each script
// with its source and caches it on the server the call's keys are on. (A SCRIPT LOAD has no key: on a Cluster
// or Ring client it would reach one server, not those that answered
// NOSCRIPT.)
func (b *batcher) exec(ctx context.Context, calls []*call, load bool) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	pipe := b.pipeline()
	if b.loaded == nil {
		b.loaded = map[*script]bool{}
	}
	single := b.n.singleServer() // a Cluster's servers each load a script on its first NOSCRIPT
	for i, c := range calls {
		switch {
		case c.plain != nil && !load && c.args[0] != "1":
			c.plain.queue(ctx, pipe)
		case load || single && !b.loaded[c.script]:
			cmds[i] = c.script.Eval(ctx, pipe, c.keys, c.args...)
		default:
			cmds[i] = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, c := range calls {
		if c.plain != nil && !load && c.args[0] != "1" {
			if cmd, ok := c.plain.answer(ctx); ok {
				cmds[i] = cmd
			} // else nil: sent again as the script (send)
			continue
		}
		err := cmds[i].Err()
		switch {
		case isNoScript(err): // the server restarted: its cache is empty
			clear(b.loaded)
		case err == nil || errors.Is(err, redis.Nil) || ServerError(err):
			b.loaded[c.script] = true
		}
	}
	return cmds
}
