package mutex

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redcron/redcron/internal/lockwire"
)

// releases counts the calls a Redlock has sent that may leave a key behind
// and that their node has not answered yet (releases, and acquisitions,
// whose late answers may queue a release), so that Flush can wait for
// them: Release returns once its outcome is known, and an attempt's
// clean-up runs in the background.
type releases struct {
	// n is a plain atomic counter: every vote and release of every lock
	// counts here, and a mutex taken by each of them made a convoy of
	// thousands of goroutines once a backlog built up (a replica stalled
	// for seconds after a node outage).
	n    atomic.Int64
	mu   sync.Mutex    // guards idle, taken as n falls to 0 and by wait
	idle chan struct{} // made by wait while calls are under way, closed as n falls to 0
}

// add counts k more calls under way.
func (p *releases) add(k int) { p.n.Add(int64(k)) }

// done counts one call answered (or given up by its node).
func (p *releases) done() {
	if p.n.Add(-1) != 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// wait returns nil when no call is under way, or ctx's error first.
func (p *releases) wait(ctx context.Context) error {
	for {
		p.mu.Lock()
		if p.n.Load() == 0 {
			p.mu.Unlock()
			return nil
		}
		if p.idle == nil {
			p.idle = make(chan struct{})
		}
		idle := p.idle
		p.mu.Unlock()
		select {
		case <-idle: // n fell to 0; calls may have started since
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Flush waits until every release this Redlock has sent, and every
// acquisition (whose late answer may call for a release), is answered by
// its node or given up, or until ctx is done, and then returns ctx's
// error. Release returns once its outcome is known from a majority of
// nodes, and a failed acquisition's clean-up goes on in the background, so
// a slow node may get its release later; each release is given up once the
// lock would have expired by itself, or after ten node timeouts (at least a
// second), whichever comes first. Call Flush before the process exits, so
// that no lock is left behind on a slow node. With other goroutines still
// locking through the Redlock, Flush waits for their calls too.
func (r *Redlock) Flush(ctx context.Context) error {
	if w := lockwire.FromContext(ctx); w != nil {
		r.wire(w) // redcron's own wiring asks, and no flush
		return nil
	}
	r.flushEnds()
	return r.pending.wait(ctx)
}
