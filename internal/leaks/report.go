package leaks

import (
	"errors"
	"slices"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// Report is the result of a scan over every node.
type Report struct {
	Prefix   string
	Nodes    int
	Quorum   int
	Findings []Finding              // by name; locks, states and foreign keys
	Live     []string               // owners with a live heartbeat on some node scanned
	Beats    map[string]engine.Beat // each live owner's heartbeat: the latest the nodes hold
	Paused   map[string]int         // paused locks: the nodes scanned that have their pause key
	States   map[string]int         // locks with a fence or a mark in their shard's state: the nodes scanned that have one
	// Running are the values of the runs claimed in bulk (parts) going on
	// now, by lock: one per node scanned whose state names it as running
	// and whose anchor still holds there.
	Running map[string][]string
	Errors  []error        // nodes that could not be scanned, one error each
	Counts  map[string]int // leaked findings by class name, every class present
	Scanned int            // keys read, over all nodes
	Took    time.Duration  // how long the scan took
}

// Finding is a lock name (or a foreign key) with its copies and the classes
// of leak its copies fall in (in class order); a live, healthy lock has no
// classes.
type Finding struct {
	Name    string  // the lock's name, or the key of a foreign key
	Kind    string  // lock, state, ledger, trigger, triggers, heartbeat, scan_turn or foreign
	Copies  []Copy  // in the order of the Redlock's nodes
	Classes []Class // the union of the copies' classes
}

// Copy is one node's copy of a key.
type Copy struct {
	Node  string        // the node's name
	Key   string        // the key
	Type  string        // the Redis type
	Value string        // the value, for strings
	TTL   time.Duration // -1: no expiry
	// Owner, Acquired and Occurrence are read from a lock's value, when Key
	// is a lock key holding one (Occurrence: the tick it claims, or zero).
	Owner      string
	Acquired   time.Time
	Occurrence time.Time
	// Classes are the classes of leak this copy falls in, judged by its
	// own value: a live lock's copies fall in none, even next to a dead
	// owner's leftover under the same name.
	Classes []Class
}

// Leaks returns the findings that fall in some class.
func (r *Report) Leaks() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if len(f.Classes) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// in reports whether c falls in one of classes, or in any class if
// classes is empty.
func (c *Copy) in(classes []Class) bool {
	if len(classes) == 0 {
		return len(c.Classes) > 0
	}
	return slices.ContainsFunc(classes, func(k Class) bool { return slices.Contains(c.Classes, k) })
}

// JobTables returns the live owners that publish a job table, by its
// digest, each list sorted: more than one digest means the replicas do not
// run the same jobs. Owners without one (older replicas, or replicas that
// set none) are left out.
func (r *Report) JobTables() map[string][]string {
	out := map[string][]string{}
	for _, owner := range r.Live {
		if d := r.Beats[owner].JobTable; d != "" {
			out[d] = append(out[d], owner) // Live is sorted
		}
	}
	return out
}

// Readable returns the nodes, of those given, that the scan could read: the
// ones no error of Errors names.
func (r *Report) Readable(nodes []*engine.Node) []*engine.Node {
	failed := map[string]bool{}
	for _, err := range r.Errors {
		if ne := (*engine.Error)(nil); errors.As(err, &ne) {
			failed[ne.Node] = true
		}
	}
	var out []*engine.Node
	for _, n := range nodes {
		if !failed[n.Name()] {
			out = append(out, n)
		}
	}
	return out
}
