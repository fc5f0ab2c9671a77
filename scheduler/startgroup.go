package scheduler

import (
	"sync/atomic"
	"time"
)

// maxStartWait bounds how long a finished run's release waits for the
// other runs of its batch to start.
const maxStartWait = 100 * time.Millisecond

// startGroup is the runs due at one tick whose leases a batch won at its
// first attempt. A run of the group that ends before the others have
// started waits for them, at most maxStartWait, before it releases its
// lease. With many jobs due at one tick, the releases of the jobs that end
// at once would otherwise compete for the CPU, the process' and the Redis
// servers', with the starts of the others, and delay them several times
// over. The tick is claimed already; during the wait the run still counts
// as running: its end is reported, and its lock released, after it.
//
// The methods of a nil *startGroup do nothing.
type startGroup struct {
	left atomic.Int64  // members whose outcome is not known yet
	all  chan struct{} // closed when left reaches zero
}

// startGroups returns the start group of each of a batch's ticks: one
// group for the ticks of one instant whose leases the batch won (results,
// one per tick), nil for the others and for a tick alone in its group.
// With lock-ahead, a batch can hold ticks of several instants (jobs whose
// leads differ): a run waits only for those due with it.
func startGroups(ticks []dueTick, results []LockResult) []*startGroup {
	won := make(map[int64]int) // by tick, in Unix ns (ticks may differ in location)
	for i, r := range results {
		if r.Err == nil && r.Lease != nil {
			won[ticks[i].tick.UnixNano()]++
		}
	}
	groups := make(map[int64]*startGroup, len(won))
	for t, n := range won {
		groups[t] = newStartGroup(n)
	}
	out := make([]*startGroup, len(ticks))
	for i, r := range results {
		if r.Err == nil && r.Lease != nil {
			out[i] = groups[ticks[i].tick.UnixNano()]
		}
	}
	return out
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
