package leaks

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
	"github.com/redis/go-redis/v9"
)

// Scanner scans a set of nodes for leaked locks. Its fields are set by the
// caller; Settle and Logger have defaults (10 s, silent).
type Scanner struct {
	Nodes  []*engine.Node
	Keys   engine.Keyspace
	Quorum int
	// MaxAge reports locks acquired longer ago as OverAge; 0: never.
	MaxAge time.Duration
	// Settle is how old a lock must be before it is reported as a
	// minority, so that acquisitions in flight are not.
	Settle time.Duration
	Logger *slog.Logger
}

// Scan SCANs every node (never KEYS) for the keys under the prefix and
// classifies them, now, without waiting for its turn. It reads only. Nodes
// that cannot be scanned are listed in the report's Errors; the error is
// non-nil only when no node could be scanned. A node not scanned counts as
// if it held a copy of every lock and a heartbeat of every owner, so that
// no live lock is reported, or fixed, as a leak: with nodes missing, a
// lock is a minority, or its owner dead, only if it would be whatever they
// hold. Locks without an owner are never orphaned.
func (s *Scanner) Scan(ctx context.Context) (*Report, error) {
	start := time.Now()
	rep := &Report{Prefix: s.Keys.Prefix(), Nodes: len(s.Nodes), Quorum: s.Quorum, Counts: map[string]int{}, Paused: map[string]int{},
		States: map[string]int{}, Running: map[string][]string{}, Beats: map[string]engine.Beat{}}
	for _, c := range AllClasses() {
		rep.Counts[c.String()] = 0
	}
	byID, live := s.read(ctx, rep)
	if len(rep.Errors) == len(s.Nodes) {
		return rep, fmt.Errorf("redcron: leak scan: no node could be scanned: %w", errors.Join(rep.Errors...))
	}
	for owner := range live {
		rep.Live = append(rep.Live, owner)
	}
	slices.Sort(rep.Live)
	order := make(map[string]int, len(s.Nodes))
	for i, n := range s.Nodes {
		order[n.Name()] = i
	}
	now := time.Now()
	for _, f := range byID {
		s.classify(f, rep, now)
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
		return strings.Compare(a.Kind, b.Kind)
	})
	rep.Took = time.Since(start)
	for _, f := range rep.Leaks() {
		nodes := make([]string, len(f.Copies))
		for i, c := range f.Copies {
			nodes[i] = c.Node
		}
		s.logger().LogAttrs(ctx, slog.LevelWarn, "leaked lock", slog.String("lock", f.Name),
			slog.Any("classes", f.Classes), slog.Any("nodes", nodes))
	}
	return rep, nil
}

// read scans every node in parallel and groups the copies by lock (or by
// key, for foreign keys); it returns the groups and the owners with a live
// heartbeat on some node. Nodes that fail go to rep.Errors.
func (s *Scanner) read(ctx context.Context, rep *Report) (map[string]*Finding, map[string]bool) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		byID = map[string]*Finding{}
		live = map[string]bool{}
	)
	for _, n := range s.Nodes {
		wg.Go(func() {
			copies, states, running, err := s.scanNode(ctx, n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rep.Errors = append(rep.Errors, err)
				return
			}
			for name := range states {
				rep.States[name]++
			}
			for name, value := range running {
				rep.Running[name] = append(rep.Running[name], value)
			}
			rep.Scanned += len(copies)
			for _, c := range copies {
				kind, name := s.Keys.Parse(c.Key)
				if own(rep, live, kind, name, c) {
					continue
				}
				id := kind.String() + "\x00" + name
				if kind != engine.KindLock {
					id, name = "key\x00"+c.Key, c.Key
				}
				f := byID[id]
				if f == nil {
					f = &Finding{Name: name, Kind: kind.String()}
					byID[id] = f
				}
				f.Copies = append(f.Copies, c)
			}
		})
	}
	wg.Wait()
	return byID, live
}

// own records in rep (and live) a copy of one of redcron's own keys that
// is not a leak, and reports whether c is one: a pause (it lasts until it
// is resumed), a ledger, a trigger's request and the set of them, a
// waiter's turn, a heartbeat and the scan turn (they expire by
// themselves).
func own(rep *Report, live map[string]bool, kind engine.KeyKind, name string, c Copy) bool {
	switch {
	case kind == engine.KindPause:
		rep.Paused[name]++
	case c.TTL <= 0:
		return false
	case kind == engine.KindLedger && c.Type == "zset":
	case kind == engine.KindTrigger && c.Type == "string", kind == engine.KindTriggers && c.Type == "set", kind == engine.KindScanTurn,
		kind == engine.KindTurn && c.Type == "string",
		kind == engine.KindJobTable && c.Type == "hash", kind == engine.KindReplicas && c.Type == "zset":
	case kind == engine.KindHeartbeat:
		live[name] = true
		if b := engine.ParseBeat(c.Value); rep.Beats[name].SentMS <= b.SentMS {
			rep.Beats[name] = b // the latest the nodes hold
		}
	default:
		return false
	}
	return true
}

// classify sets the classes of f's copies, each judged by its own value,
// and f's, their union.
func (s *Scanner) classify(f *Finding, rep *Report, now time.Time) {
	copiesOf := map[string]int{} // lock value → the copies holding it
	for i := range f.Copies {
		c := &f.Copies[i]
		if c.TTL == -1 {
			c.Classes = append(c.Classes, NoExpiry)
		}
		switch {
		case f.Kind == "lock":
			v, err := engine.ParseValue(c.Value)
			if c.Type != "string" || err != nil {
				c.Classes = append(c.Classes, Unparseable)
				continue
			}
			c.Owner, c.Acquired = v.Owner, v.Acquired
			if v.Occurrence > 0 {
				c.Occurrence = time.UnixMilli(v.Occurrence)
			}
			copiesOf[c.Value]++
		case f.Kind == "state" && c.Type != "hash", f.Kind == "ledger" && c.Type != "zset",
			f.Kind == "trigger" && c.Type != "string", f.Kind == "triggers" && c.Type != "set", f.Kind == "foreign":
			c.Classes = append(c.Classes, Unparseable)
		}
	}
	unscanned := len(rep.Errors)
	for i := range f.Copies {
		c := &f.Copies[i]
		if c.Acquired.IsZero() {
			continue
		}
		age := now.Sub(c.Acquired)
		if c.Owner != "" && unscanned == 0 && !slices.Contains(rep.Live, c.Owner) {
			c.Classes = append(c.Classes, Orphaned)
		}
		if copiesOf[c.Value]+unscanned < s.Quorum && age > s.settle() {
			c.Classes = append(c.Classes, Minority)
		}
		if s.MaxAge > 0 && age > s.MaxAge {
			c.Classes = append(c.Classes, OverAge)
		}
	}
	for _, class := range AllClasses() {
		if slices.ContainsFunc(f.Copies, func(c Copy) bool { return slices.Contains(c.Classes, class) }) {
			f.Classes = append(f.Classes, class)
		}
	}
}

// settle returns Settle, or its default, 10 s.
func (s *Scanner) settle() time.Duration {
	if s.Settle <= 0 {
		return 10 * time.Second
	}
	return s.Settle
}

// logger returns Logger, or a silent one.
func (s *Scanner) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// scanNode reads node n's keys under the prefix: every key's copy, the
// locks its shards' states name, and the runs claimed in bulk going on.
func (s *Scanner) scanNode(ctx context.Context, n *engine.Node) (copies []Copy, states map[string]bool, running map[string]string, err error) {
	states = map[string]bool{}    // the locks in the shards' states
	running = map[string]string{} // the locks' running values there
	err = n.Scan(ctx, s.Keys.Pattern(), func(ki engine.KeyInfo) error {
		if ki.Type != "none" { // "none": gone between SCAN and the read
			copies = append(copies, Copy{Node: n.Name(), Key: ki.Key, Type: ki.Type, Value: ki.Value, TTL: ki.TTL})
		}
		if kind, _ := s.Keys.Parse(ki.Key); kind == engine.KindState {
			for f, v := range ki.Fields {
				if name, ok := engine.StateField(f); ok {
					states[name] = true
				} else if name, ok := engine.RunningField(f); ok {
					running[name] = v
				}
			}
		}
		return nil
	})
	if err == nil {
		err = stillRunning(ctx, n, running)
	}
	return copies, states, running, err
}

// stillRunning keeps, of the running values read on n (by lock), the
// parts' own values whose parent (a replica's anchor) still holds there:
// one GET per anchor, all in one round trip. A part whose replica died
// leaves its running value behind until its job's next claim.
func stillRunning(ctx context.Context, n *engine.Node, running map[string]string) error {
	if len(running) == 0 {
		return nil
	}
	gets := map[string]*redis.StringCmd{}
	pipe := n.Client().Pipeline()
	for _, r := range running {
		if p, _, ok := engine.ParseRunning(r); ok && gets[p.Key] == nil {
			gets[p.Key] = pipe.Get(ctx, p.Key)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("%s: anchors of running parts: %w", n.Name(), err)
	}
	for name, r := range running {
		p, value, ok := engine.ParseRunning(r)
		if !ok || gets[p.Key].Val() != p.Value {
			delete(running, name)
			continue
		}
		running[name] = value
	}
	return nil
}
