package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redcron/redcron/internal/leaks"
)

// Leak is one node's copy of a key Status reports as leaked, or of a live
// lock of the same name as a leaked copy (then without Classes).
type Leak struct {
	Name string // the lock's name; a foreign key's, the key
	Kind string // lock, state, ledger, trigger, triggers, heartbeat, scan_turn or foreign
	Node string
	Key  string
	Type string // the Redis type ("none": the key vanished during the scan)
	// Value is the value read, for a string: FixLeaks deletes the key
	// only while it still holds it.
	Value string
	// TTL is the key's remaining TTL: -1 (ns) when it has none, another
	// negative value when it vanished during the scan.
	TTL time.Duration
	// Owner and Acquired are read from a lock's value: its owner (a
	// replica's instance id) and when it was acquired, by the owner's
	// clock; zero for a key that holds no lock value.
	Owner    string
	Acquired time.Time
	// Classes are this copy's, judged by its own value: no_expiry (no
	// TTL), orphaned (its owner has no live heartbeat, every node
	// scanned), minority (on fewer nodes than a quorum, older than 10 s),
	// over_age (older than Options.MaxAge), unparseable (a key under the
	// prefix redcron did not write).
	Classes []string
	// Deleted, Reason and Err say, in FixLeaks's result, what it did:
	// Deleted, or left the copy alone for Reason "changed" (it no longer
	// holds Value, or is gone), "not_string" (it cannot be compared) or
	// "error" (Err, the node's).
	Deleted bool
	Reason  string
	Err     error
}

// FixLeaks deletes every copy of leaks that has a class (a Status's
// Leaks, or some of them), each by compare-and-delete against its Value,
// so a key that changed hands since the scan is left alone, and so are
// the copies of a live lock sharing a leftover's name; a key that is not
// a string (a hash without a TTL) cannot be compared and is always left
// alone. It records the fix in the ledger of each job whose lock lost a
// copy. It returns the copies it acted on, with what it did, and its
// error joins the nodes' errors (each naming its node and key).
//
// Mind over_age: a lock held longer than Options.MaxAge may belong to a
// live replica still running its job, which loses its lease.
func (c *Client) FixLeaks(ctx context.Context, found []Leak) ([]Leak, error) {
	rep := &leaks.Report{Prefix: c.cl.Keys.Prefix(), Nodes: len(c.cl.Nodes), Quorum: c.cl.Quorum()}
	byID := map[[2]string]int{} // name and kind → finding
	copies := map[[2]string]Leak{}
	for _, l := range found {
		cp := leaks.Copy{Node: l.Node, Key: l.Key, Type: l.Type, Value: l.Value, TTL: l.TTL, Owner: l.Owner, Acquired: l.Acquired}
		for _, name := range l.Classes {
			k, ok := classOf(name)
			if !ok {
				return nil, fmt.Errorf("fix leaks: %s on node %s: unknown class %q", l.Key, l.Node, name)
			}
			cp.Classes = append(cp.Classes, k)
		}
		id := [2]string{l.Name, l.Kind}
		i, ok := byID[id]
		if !ok {
			i, byID[id] = len(rep.Findings), len(rep.Findings)
			rep.Findings = append(rep.Findings, leaks.Finding{Name: l.Name, Kind: l.Kind})
		}
		f := &rep.Findings[i]
		f.Copies = append(f.Copies, cp)
		f.Classes = append(f.Classes, cp.Classes...) // non-empty: the finding leaked
		copies[[2]string{l.Node, l.Key}] = l
	}
	var out []Leak
	var errs []error
	for _, r := range c.cl.Fix(ctx, rep, c.who) {
		l := copies[[2]string{r.Node, r.Key}]
		l.Deleted, l.Reason, l.Err = r.Deleted, r.Reason, r.Err
		if l.Reason == "not_string" && l.Type == "none" { // it vanished between SCAN and the read
			l.Reason = "changed"
		}
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("fix leaks: %s on node %s: %w", r.Key, r.Node, r.Err))
		}
		out = append(out, l)
	}
	deleted := 0
	for _, l := range out {
		if l.Deleted {
			deleted++
		}
	}
	c.logger.LogAttrs(ctx, level(errors.Join(errs...)), "admin: leaks fixed", slog.String("who", c.who),
		slog.Int("copies", len(out)), slog.Int("deleted", deleted))
	return out, errors.Join(errs...)
}
