// Package ledger reads the jobs' ledgers from the nodes and merges them
// into one history: each node keeps its own copy of a lock's records
// (internal/engine), written by the commits and releases that reached it.
package ledger

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// Run is one record of a job's history, merged over the nodes.
type Run struct {
	engine.Record
	// State is "started" (no release reached a node: running, or its
	// replica died), "released", "lost" (the lock had gone on more nodes
	// than held it at the release) or "missed" (a tick that ran nowhere,
	// with the reasons in Error) or "operator" (an operator's action:
	// Result is paused, resumed, triggered or leaks_fixed, Owner who, Start
	// when).
	State string `json:"state"`
	// Nodes is how many nodes hold the record.
	Nodes int `json:"nodes"`
}

// The states of a Run.
const (
	StateStarted  = "started"
	StateReleased = "released"
	StateLost     = "lost"
	StateMissed   = "missed"
	StateOperator = "operator"
)

// The actions of an operator's record (StateOperator), in its Result.
const (
	ActionPaused     = "paused"
	ActionResumed    = "resumed"
	ActionTriggered  = "triggered"
	ActionLeaksFixed = "leaks_fixed"
)

// Read returns up to count of the newest records of the lock's ledger,
// merged over nodes, newest first, and the errors of the nodes that could
// not be read (one per node, in their order; nil for a node that was).
func Read(ctx context.Context, nodes []*engine.Node, k engine.LockKeys, count int) ([]Run, []error) {
	entries, errs := ReadNodes(ctx, nodes, k, count)
	runs := Merge(entries)
	return runs[:min(len(runs), count)], errs
}

// ReadMany returns, by lock name, up to count of the newest records of
// each of the locks lks, merged over nodes, newest first: it reads each
// shard's ledger once from each node, up to 8 shards at a time, whatever
// the number of locks. A node that could not be read is left out.
func ReadMany(ctx context.Context, nodes []*engine.Node, lks []engine.LockKeys, count int) map[string][]Run {
	byShard := map[string][]engine.LockKeys{}
	for _, lk := range lks {
		byShard[lk.Ledger] = append(byShard[lk.Ledger], lk)
	}
	out := make(map[string][]Run, len(lks))
	var mu sync.Mutex
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, group := range byShard {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			copies := make([]map[string][]engine.Entry, len(nodes))
			engine.OnEach(nodes, func(i int, n *engine.Node) (err error) {
				copies[i], _, err = n.ShardLedger(ctx, group[0])
				return err
			})
			for _, lk := range group {
				perNode := make([][]engine.Entry, len(nodes))
				for i := range copies {
					perNode[i] = copies[i][lk.Name]
				}
				runs := Merge(perNode)
				mu.Lock()
				out[lk.Name] = runs[:min(len(runs), count)]
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// ReadNodes returns up to count of the newest entries of the lock's ledger
// on each node, in parallel, and each node's error (nil for a node that
// was read), in the nodes' order.
func ReadNodes(ctx context.Context, nodes []*engine.Node, k engine.LockKeys, count int) ([][]engine.Entry, []error) {
	entries := make([][]engine.Entry, len(nodes))
	errs := engine.OnEach(nodes, func(i int, n *engine.Node) (err error) {
		entries[i], err = n.Ledger(ctx, k, count)
		return err
	})
	return entries, errs
}

// Merge merges the entries of several nodes' copies of one ledger, newest
// first (by tick or start, then fence).
func Merge(nodes [][]engine.Entry) []Run {
	type acc struct {
		best   engine.Entry
		counts map[engine.RecordState]int
		nodes  int
	}
	byID := map[string]*acc{}
	for _, es := range nodes {
		seen := map[string]bool{}
		for _, e := range es {
			id := identity(e)
			a := byID[id]
			if a == nil {
				a = &acc{best: e, counts: map[engine.RecordState]int{}}
				byID[id] = a
			}
			a.counts[e.State]++
			if !seen[id] {
				seen[id] = true
				a.nodes++
			}
			if rank(e.State) > rank(a.best.State) {
				a.best = e
			}
		}
	}
	out := make([]Run, 0, len(byID))
	for _, a := range byID {
		r := Run{Record: a.best.Record, Nodes: a.nodes}
		switch a.best.State {
		case engine.RecordStarted:
			r.State = StateStarted
		case engine.RecordMissed:
			r.State = StateMissed
		case engine.RecordOperator:
			r.State = StateOperator
		default:
			r.State = StateReleased
			if a.counts[engine.RecordLost] > a.counts[engine.RecordReleased] {
				r.State = StateLost
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Run) int {
		return cmp.Or(cmp.Compare(score(b), score(a)), cmp.Compare(b.Fence, a.Fence), cmp.Compare(b.Start, a.Start))
	})
	return out
}

// identity is what makes copies of one record the same record on several
// nodes: an acquisition's fence (unique to it when fencing is on) or its
// owner, tick and start; a missed tick's tick; an operator's action, its
// operator, time and action.
func identity(e engine.Entry) string {
	r := e.Record
	switch {
	case e.State == engine.RecordMissed:
		return "m" + strconv.FormatInt(r.Tick, 10)
	case e.State == engine.RecordOperator:
		return "a" + r.Owner + "\x00" + strconv.FormatInt(r.Start, 10) + "\x00" + r.Result
	case r.Fence != 0:
		return "f" + strconv.FormatUint(r.Fence, 10)
	}
	return "o" + r.Owner + "\x00" + strconv.FormatInt(r.Tick, 10) + "\x00" + strconv.FormatInt(r.Start, 10)
}

// rank orders the states of one record's copies: a final record tells
// more than a started one, and a release that found the lock more than
// one that did not.
func rank(s engine.RecordState) int {
	switch s {
	case engine.RecordReleased:
		return 3
	case engine.RecordLost:
		return 2
	case engine.RecordMissed, engine.RecordOperator:
		return 1
	}
	return 0
}

// score is where a record stands in the history: its tick, or for a
// record without one (a trigger's run, an operator's action), its start.
func score(r Run) int64 {
	if r.Tick != 0 {
		return r.Tick
	}
	return r.Start
}

// Time returns a record's unix ms as a time, the zero time for 0.
func Time(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// OnceRan reports whether a record, by its state, tick (unix ms) and the
// number of nodes holding it, is the run of the one tick of a one-time
// job of spec ("@at t"): a final record (released or lost) of tick t, or
// its started record on a quorum of the nodes (a run still going, or whose
// replica died: claimed, so it runs no more; a started record on fewer may
// be a claim given up whose free did not reach them). Such a job is done:
// the tick's mark refuses it from then on (while the state TTL keeps it).
func OnceRan(spec, state string, tick int64, nodes, quorum int) bool {
	f := strings.Fields(spec)
	if len(f) != 2 || f[0] != "@at" || !(state == StateReleased || state == StateLost || state == StateStarted && nodes >= quorum) {
		return false
	}
	at, err := time.Parse(time.RFC3339, f[1])
	return err == nil && tick == at.UnixMilli()
}
