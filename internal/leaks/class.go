package leaks

import "fmt"

// Class is a reason a key is reported by the scan.
type Class uint8

// The classes of leaks, in the order reports list them.
const (
	// NoExpiry: a key with no TTL: it will never go away by itself.
	NoExpiry Class = iota + 1
	// Orphaned: a lock whose owner has no live heartbeat on any node (and
	// every node was scanned): its holder has not beaten for longer than
	// its heartbeat TTL plus the max TTL, so none of its leases can still
	// be valid. A heartbeat on one node is enough to count as live: the
	// others may have lost it in a restart.
	Orphaned
	// Minority: a lock present on fewer nodes than a quorum, acquired
	// longer ago than 10 s: the leftover of a failed acquisition or of a
	// node that missed a release.
	Minority
	// OverAge: a lock held for longer than the Redlock's max hold
	// (mutex.WithMaxHold). It may belong to a live owner still running
	// its job.
	OverAge
	// Unparseable: a key under the prefix that redcron did not write (a
	// foreign value or type).
	Unparseable
)

// AllClasses returns every class, in order.
func AllClasses() [5]Class { return [...]Class{NoExpiry, Orphaned, Minority, OverAge, Unparseable} }

// String returns the class's snake_case name, usable as a metric label.
func (c Class) String() string {
	switch c {
	case NoExpiry:
		return "no_expiry"
	case Orphaned:
		return "orphaned"
	case Minority:
		return "minority"
	case OverAge:
		return "over_age"
	case Unparseable:
		return "unparseable"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}
