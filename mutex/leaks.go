package mutex

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// LeakClass is a reason a key is reported by the leak scan.
type LeakClass uint8

// The classes of leaks.
const (
	// LeakNoExpiry: a key with no TTL: it will never go away by itself.
	LeakNoExpiry LeakClass = iota + 1
	// LeakOrphaned: a lock whose owner has no live heartbeat on any node
	// (and every node was scanned): its holder has not beaten for longer
	// than its heartbeat TTL plus the max TTL, so none of its leases can
	// still be valid. A heartbeat on one node is enough to count as live:
	// the others may have lost it in a restart.
	LeakOrphaned
	// LeakMinority: a lock present on fewer nodes than a quorum, acquired
	// longer ago than the settle time: the leftover of a failed
	// acquisition or of a node that missed a release.
	LeakMinority
	// LeakOverAge: a lock held for longer than ScanOptions.MaxAge.
	LeakOverAge
	// LeakUnparseable: a key under the prefix that the library did not
	// write (a foreign value or type).
	LeakUnparseable
)

// LeakClasses returns every class, in order.
func LeakClasses() []LeakClass {
	return []LeakClass{LeakNoExpiry, LeakOrphaned, LeakMinority, LeakOverAge, LeakUnparseable}
}

// String returns the class's snake_case name, usable as a metric label.
func (c LeakClass) String() string {
	switch c {
	case LeakNoExpiry:
		return "no_expiry"
	case LeakOrphaned:
		return "orphaned"
	case LeakMinority:
		return "minority"
	case LeakOverAge:
		return "over_age"
	case LeakUnparseable:
		return "unparseable"
	}
	return fmt.Sprintf("LeakClass(%d)", int(c))
}

// ScanOptions configures a leak scan.
type ScanOptions struct {
	// MaxAge reports locks acquired longer ago than this as over-age;
	// 0 turns the check off.
	MaxAge time.Duration
	// Settle is how old a lock must be before it is reported as a
	// minority (so that acquisitions in flight are not); default 10s.
	Settle time.Duration
}

// Copy is one node's copy of a key.
type Copy struct {
	Node  string        // the node's name
	Key   string        // the key
	Type  string        // the Redis type
	Value string        // the value, for strings
	TTL   time.Duration // -1: no expiry
	// Lock is the parsed lock value, when Key is a lock key holding one.
	Lock *engine.Value
	// Classes are the classes of leak this copy falls in, judged by its
	// own value: a live lock's copies fall in none, even next to a dead
	// owner's leftover under the same name.
	Classes []LeakClass
}

// in reports whether c falls in one of classes, or in any class if
// classes is empty.
func (c *Copy) in(classes []LeakClass) bool {
	if len(classes) == 0 {
		return len(c.Classes) > 0
	}
	return slices.ContainsFunc(classes, func(k LeakClass) bool { return slices.Contains(c.Classes, k) })
}

// Finding is a lock name (or a foreign key) with its copies and the
// classes of leak its copies fall in (in the order of LeakClasses); a
// live, healthy lock has no classes.
type Finding struct {
	Name    string // the lock's name, or the key of a foreign key
	Kind    engine.KeyKind
	Copies  []Copy // in the order of the nodes given to New
	Classes []LeakClass
}

// Leaked reports whether the finding falls in any class.
func (f *Finding) Leaked() bool { return len(f.Classes) > 0 }

// Has reports whether the finding falls in class c.
func (f *Finding) Has(c LeakClass) bool { return slices.Contains(f.Classes, c) }

// ScanReport is the result of a leak scan over every node.
type ScanReport struct {
	Prefix   string
	Nodes    int
	Quorum   int
	Findings []Finding      // by name; locks, states and foreign keys
	Live     []string       // owners with a live heartbeat on some node scanned
	Errors   []error        // nodes that could not be scanned (wrapped *engine.Error)
	Counts   map[string]int // leaked findings by class name
	Scanned  int            // keys read, over all nodes
	Took     time.Duration  // how long the scan took
}

// Leaks returns the findings that fall in some class.
func (r *ScanReport) Leaks() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Leaked() {
			out = append(out, f)
		}
	}
	return out
}

// unscanned returns the number of nodes that could not be scanned (one
// error each). Such a node may hold any key: it counts as holding a
// heartbeat of every owner and a copy of every lock, so that no live lock
// is taken for a leak.
func (r *ScanReport) unscanned() int { return len(r.Errors) }

// ScanLeaks SCANs every node (never KEYS) for the keys under the prefix
// and classifies them. It reads only. Nodes that cannot be scanned are
// listed in the report's Errors; the error is non-nil only when no node
// could be scanned. A node not scanned is counted as if it held a copy of
// every lock and a heartbeat of every owner, so that no live lock is
// reported, or fixed, as a leak: with nodes missing, a lock is a minority,
// or its owner dead, only if it would be whatever they hold.
// Classification needs the heartbeats, so a lock's orphaned status is
// only as good as the owners' heartbeats (see the scheduler's
// WithHeartbeat); locks without an owner are never orphaned.
func (r *Redlock) ScanLeaks(ctx context.Context, opts ScanOptions) (*ScanReport, error) {
	if opts.Settle <= 0 {
		opts.Settle = 10 * time.Second
	}
	start := time.Now()
	rep := &ScanReport{Prefix: r.keys.Prefix(), Nodes: len(r.nodes), Quorum: r.quorum, Counts: map[string]int{}}
	for _, c := range LeakClasses() {
		rep.Counts[c.String()] = 0
	}
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		byName = map[string]*Finding{}
		beats  = map[string]int{} // owner → nodes with a live heartbeat
	)
	for _, n := range r.nodes {
		wg.Go(func() {
			var copies []Copy
			err := n.Scan(ctx, r.keys.Pattern(), func(ki engine.KeyInfo) error {
				if ki.Type == "none" {
					return nil // gone between SCAN and the read: released meanwhile
				}
				copies = append(copies, Copy{Node: n.Name(), Key: ki.Key, Type: ki.Type, Value: ki.Value, TTL: ki.TTL})
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rep.Errors = append(rep.Errors, err)
				return
			}
			rep.Scanned += len(copies)
			for _, c := range copies {
				kind, name := r.keys.Parse(c.Key)
				if kind == engine.KindHeartbeat && c.TTL > 0 {
					beats[name]++
					continue
				}
				id := kind.String() + "\x00" + name
				if kind == engine.KindForeign || kind == engine.KindHeartbeat {
					id, name = "key\x00"+c.Key, c.Key
				}
				f := byName[id]
				if f == nil {
					f = &Finding{Name: name, Kind: kind}
					byName[id] = f
				}
				f.Copies = append(f.Copies, c)
			}
		})
	}
	wg.Wait()
	if len(rep.Errors) == len(r.nodes) {
		return rep, fmt.Errorf("mutex: leak scan: no node could be scanned: %w", errors.Join(rep.Errors...))
	}
	for owner := range beats {
		rep.Live = append(rep.Live, owner)
	}
	slices.Sort(rep.Live)
	now := time.Now()
	order := make(map[string]int, len(r.nodes))
	for i, n := range r.nodes {
		order[n.Name()] = i
	}
	for _, f := range byName {
		r.classify(f, rep, opts, now)
		slices.SortFunc(f.Copies, func(a, b Copy) int { return order[a.Node] - order[b.Node] })
		rep.Findings = append(rep.Findings, *f)
		for _, c := range f.Classes {
			rep.Counts[c.String()]++
		}
	}
	slices.SortFunc(rep.Findings, func(a, b Finding) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.Kind) - int(b.Kind)
	})
	rep.Took = time.Since(start)
	for _, f := range rep.Leaks() {
		nodes := make([]string, len(f.Copies))
		for i, c := range f.Copies {
			nodes[i] = c.Node
		}
		r.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "leaked lock", slog.String("lock", f.Name),
			slog.Any("classes", f.Classes), slog.Any("nodes", nodes))
	}
	return rep, nil
}

// classify sets the classes of f's copies, each judged by its own value,
// and f's, their union.
func (r *Redlock) classify(f *Finding, rep *ScanReport, opts ScanOptions, now time.Time) {
	copiesOf := map[string]int{} // lock value → the copies holding it
	for i := range f.Copies {
		c := &f.Copies[i]
		if c.TTL == -1 {
			c.Classes = append(c.Classes, LeakNoExpiry)
		}
		switch f.Kind {
		case engine.KindLock:
			v, err := engine.ParseValue(c.Value)
			if c.Type != "string" || err != nil {
				c.Classes = append(c.Classes, LeakUnparseable)
				continue
			}
			c.Lock = &v
			copiesOf[c.Value]++
		case engine.KindState:
			if c.Type != "hash" {
				c.Classes = append(c.Classes, LeakUnparseable)
			}
		case engine.KindForeign:
			c.Classes = append(c.Classes, LeakUnparseable)
		}
	}
	for i := range f.Copies {
		c := &f.Copies[i]
		if c.Lock == nil {
			continue
		}
		age := now.Sub(c.Lock.Acquired)
		if c.Lock.Owner != "" && rep.unscanned() == 0 && !slices.Contains(rep.Live, c.Lock.Owner) {
			c.Classes = append(c.Classes, LeakOrphaned)
		}
		if copiesOf[c.Value]+rep.unscanned() < r.quorum && age > opts.Settle {
			c.Classes = append(c.Classes, LeakMinority)
		}
		if opts.MaxAge > 0 && age > opts.MaxAge {
			c.Classes = append(c.Classes, LeakOverAge)
		}
	}
	for _, class := range LeakClasses() {
		if slices.ContainsFunc(f.Copies, func(c Copy) bool { return slices.Contains(c.Classes, class) }) {
			f.Classes = append(f.Classes, class)
		}
	}
}

// FixResult says what FixLeaks did with one copy.
type FixResult struct {
	Node    string
	Key     string
	Deleted bool
	// Reason says why a copy was not deleted: "changed" (it no longer
	// holds the scanned value, or is gone), "not_string" (a hash or other
	// type cannot be compared), or "error" (see Err).
	Reason string
	Err    error // the node's error, if any
}

// FixLeaks deletes the copies of the report's leaked findings that
// themselves fall in one of classes (in any class if none is given; see
// Copy.Classes), each by compare-and-delete against the value that was
// scanned, so a key that changed hands since the scan is never touched,
// and the copies of a live lock that share its name with a leftover are
// not either. Keys that are not strings (a foreign hash, a state hash
// without a TTL) cannot be compared and are left alone.
//
// Mind LeakOverAge: an over-age lock may belong to a live owner still
// running its job; deleting it lets another replica take the lock before
// the holder's next extension notices the loss and cancels its job.
func (r *Redlock) FixLeaks(ctx context.Context, rep *ScanReport, classes ...LeakClass) []FixResult {
	nodes := map[string]*engine.Node{}
	for _, n := range r.nodes {
		nodes[n.Name()] = n
	}
	var out []FixResult
	for _, f := range rep.Leaks() {
		for _, c := range f.Copies {
			if !c.in(classes) {
				continue
			}
			res := FixResult{Node: c.Node, Key: c.Key}
			n := nodes[c.Node]
			switch {
			case c.Type != "string":
				res.Reason = "not_string"
			case n == nil:
				res.Reason, res.Err = "error", fmt.Errorf("mutex: fix: unknown node %q", c.Node)
			default:
				res.Deleted, res.Err = n.DeleteIfValue(ctx, c.Key, c.Value)
				switch {
				case res.Err != nil:
					res.Reason = "error"
				case !res.Deleted:
					res.Reason = "changed"
				}
			}
			out = append(out, res)
		}
	}
	return out
}
