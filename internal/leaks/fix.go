package leaks

import (
	"context"
	"fmt"

	"github.com/redcron/redcron/internal/engine"
)

// FixResult says what Fix did with one copy.
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

// Fix deletes the copies of the report's leaked findings that themselves
// fall in one of classes (in any class if none is given; see
// Copy.Classes), each by compare-and-delete against the value that was
// scanned, so a key that changed hands since the scan is never touched,
// and the copies of a live lock that share its name with a leftover are
// not either. Keys that are not strings (a foreign hash, a state hash
// without a TTL) cannot be compared and are left alone.
//
// Mind OverAge: an over-age lock may belong to a live owner still running
// its job; deleting it lets another replica take the lock before the
// holder's next extension notices the loss and cancels its job.
func (s *Scanner) Fix(ctx context.Context, rep *Report, classes ...Class) []FixResult {
	nodes := map[string]*engine.Node{}
	for _, n := range s.Nodes {
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
				res.Reason, res.Err = "error", fmt.Errorf("redcron: leak fix: unknown node %q", c.Node)
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
