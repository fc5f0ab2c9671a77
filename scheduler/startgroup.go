package scheduler

import (
	"sync"
	"sync/atomic"
	"time"
)

// maxStartWait bounds how long after its gate opens a start group waits
// for the runs of its members to start.
const maxStartWait = 100 * time.Millisecond

// minStartWait is how long after its gate opens a start group of more
// than one member waits at least, however fast its members started: the
// other replicas' runs of the same tick may take longer to start than
// this replica's, and releases sent meanwhile would compete with them for
// the CPU, the replicas' and the Redis servers'.
const minStartWait = 20 * time.Millisecond

// startGroup is the runs of one tick whose leases one batch won (or a
// retry of it, before the tick). Their goroutines wait on one gate, opened
// by one timer at the tick, and start together.
//
// Their handlers then keep the leases until every member has started, and
// as long again (at least minStartWait, at most maxStartWait after the
// gate opened), so that releases do not compete for the CPU with the
// starts still under way, here or on the other replicas. A run that ended
// meanwhile is shown finished at once, with its job's own duration; its
// lock is released and its end reported after the wait. A member that will
// not start does not wait.
//
// The methods of a nil *startGroup do nothing.
type startGroup struct {
	left   atomic.Int64  // members whose outcome is not known yet
	size   atomic.Int64  // members, those that joined included
	all    chan struct{} // closed when the handlers' wait ends
	close  sync.Once     // closes all
	gate   chan struct{} // closed when the gate opens
	opens  time.Time     // when the gate opens, by the monotonic clock
	opener *time.Timer   // opens the gate, or nil if it was open at once
	bound  *time.Timer   // ends the wait maxStartWait after the opening
}

// wait waits for g's gate to open.
func (g *startGroup) wait() { <-g.gate }

// startGroups returns the start group of each of a batch's ticks: one
// group for the ticks of one instant whose leases the batch won (results,
// one per tick), its members, and whose first attempts were undecided,
// which may join it if a retry wins the lease before the gate opens; nil
// for the ticks refused, and for a won tick that no other won or
// undecided tick of its instant could start with. (An instant whose
// attempts were all undecided has no group: its retries start on their
// own.) With lock-ahead, a batch can hold ticks of several instants (jobs
// whose leads differ): a run waits only for those due with it. now is the
// time by the scheduler's clock, from which the gates' timers are set.
func startGroups(ticks []dueTick, results []LockResult, now time.Time) []*startGroup {
	type count struct{ won, undecided int }
	counts := make(map[int64]count) // by tick, in Unix ns (ticks may differ in location)
	for i, r := range results {
		c := counts[ticks[i].tick.UnixNano()]
		switch {
		case r.won():
			c.won++
		case !refused(r.Err):
			c.undecided++
		default:
			continue
		}
		counts[ticks[i].tick.UnixNano()] = c
	}
	groups := make(map[int64]*startGroup, len(counts))
	for t, c := range counts {
		// A lone winner needs a group only if a retry may join it, which
		// it may until the gate opens, at the tick.
		wait := time.Unix(0, t).Sub(now)
		if c.won > 1 || c.won == 1 && c.undecided > 0 && wait > 0 {
			groups[t] = newStartGroup(c.won, wait)
		}
	}
	out := make([]*startGroup, len(ticks))
	for i, r := range results {
		if !refused(r.Err) { // won or undecided
			out[i] = groups[ticks[i].tick.UnixNano()]
		}
	}
	return out
}

// newStartGroup returns a group of n members whose gate opens after wait;
// n must be at least 1.
func newStartGroup(n int, wait time.Duration) *startGroup {
	g := &startGroup{all: make(chan struct{}), gate: make(chan struct{})}
	g.left.Store(int64(n))
	g.size.Store(int64(n))
	wait = max(wait, 0)
	g.opens = time.Now().Add(wait)
	if wait > 0 {
		g.opener = time.AfterFunc(wait, func() { close(g.gate) })
	} else {
		close(g.gate)
	}
	g.bound = time.AfterFunc(wait+maxStartWait, g.closeAll)
	return g
}

// done records that one member's run has started, or that it will not
// start. Each member calls it once. After the last, the handlers' wait
// ends as long after as the members took from the gate's opening, but no
// sooner than minStartWait after the opening, or at its bound if that
// comes first; at once if the group had one member only, whose release
// delays no other start of its own replica.
func (g *startGroup) done() {
	if g == nil || g.left.Add(-1) != 0 {
		return
	}
	if g.opener != nil && g.opener.Stop() {
		// Every member was withdrawn: let their goroutines end now.
		close(g.gate)
	}
	switch took := time.Since(g.opens); {
	case took <= 0 || g.size.Load() == 1:
		// Every member was done before the gate opened, or the only one is.
		g.bound.Stop()
		g.closeAll()
	case 2*took < maxStartWait:
		g.bound.Reset(max(took, minStartWait-took))
	}
}

// join adds a member to g, a run whose lease was won after g was made (by
// a retry of the batch's undecided first attempt, or, rarely, won again
// by a member whose lease was lost before the tick), and reports whether
// it did. It does not once g's gate has opened, or once g's wait for its
// members has ended (every member done before the tick): the run then
// starts on its own.
func (g *startGroup) join() bool {
	if g == nil {
		return false
	}
	select {
	case <-g.gate:
		return false
	default:
	}
	for {
		n := g.left.Load()
		if n <= 0 {
			return false
		}
		if g.left.CompareAndSwap(n, n+1) {
			g.size.Add(1)
			return true
		}
	}
}

func (g *startGroup) closeAll() { g.close.Do(func() { close(g.all) }) }
