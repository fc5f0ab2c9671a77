package mutex

import (
	"context"
	"sync"
)

// releases counts the calls a Redlock has sent that may leave a key behind
// and that their node has not answered yet (releases, and acquisitions,
// whose late answers may queue a release), so that Flush can wait for
// them: Release returns once its outcome is known, and an attempt's
// clean-up runs in the background.
type releases struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n falls to 0; replaced when it rises
}

// add counts k more calls under way.
func (p *releases) add(k int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		p.idle = make(chan struct{})
	}
	p.n += k
}

// done counts one call answered (or given up by its node).
func (p *releases) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n--
	if p.n == 0 {
		close(p.idle)
	}
}

// wait returns nil when no call is under way, or ctx's error first.
func (p *releases) wait(ctx context.Context) error {
	p.mu.Lock()
	idle, n := p.idle, p.n
	p.mu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
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
	r.flushEnds()
	return r.pending.wait(ctx)
}
