package scheduler

import (
	"sync/atomic"
	"time"
)

// maxStartWait bounds how long a finished run's release waits for the
// other runs of its batch to start.
const maxStartWait = 100 * time.Millisecond

// startGroup is the runs whose leases a batch won at its first attempt:
// runs due at the same tick. A run of the group that ends before the
// others have started waits for them before it releases its lease (at most
// maxStartWait). With many jobs due at one tick, the releases of the jobs
// that end at once would otherwise compete for the CPU, the process' and
// the Redis servers', with the starts of the others, and delay them by
// several times. Holding a lease a few milliseconds longer costs nothing:
// its tick is already claimed.
//
// The methods of a nil *startGroup do nothing.
type startGroup struct {
	left atomic.Int64  // members whose outcome is not known yet
	all  chan struct{} // closed when left reaches zero
}

// newStartGroup returns a group of n members, or nil if n < 2.
func newStartGroup(n int) *startGroup {
	if n < 2 {
		return nil
	}
	g := &startGroup{all: make(chan struct{})}
	g.left.Store(int64(n))
	return g
}

// done records that one member's run has started, or that it will not
// start. Each member calls it once.
func (g *startGroup) done() {
	if g != nil && g.left.Add(-1) == 0 {
		close(g.all)
	}
}

// wait waits until every member is done, or for maxStartWait.
func (g *startGroup) wait() {
	if g == nil {
		return
	}
	t := time.NewTimer(maxStartWait)
	defer t.Stop()
	select {
	case <-g.all:
	case <-t.C:
	}
}
