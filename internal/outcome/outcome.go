// Package outcome carries, in the context of a mutex.Lock's Release, what
// the lock's holder did with it, for the ledger record the release
// writes: the scheduler's Redlock adapter passes its run's outcome (its
// id, result, error, tries and start delay) this way, so that this wiring
// of ours adds no exported name to package mutex.
package outcome

import (
	"context"
	"time"
)

// Outcome is what a lock's holder did with it.
type Outcome struct {
	Run    string        // the holder's id for its work (a scheduler's run id)
	Result string        // how the work ended, in a word ("success", "failure"...)
	Err    error         // its error, if any; the ledger keeps its first 200 bytes
	Try    int           // the tries it took, from 1
	Delay  time.Duration // how long after the lock's occurrence the work started
}

type key struct{}

// NewContext returns a copy of ctx that carries o.
func NewContext(ctx context.Context, o Outcome) context.Context {
	return context.WithValue(ctx, key{}, o)
}

// FromContext returns the Outcome ctx carries, and whether it carries one.
func FromContext(ctx context.Context) (Outcome, bool) {
	o, ok := ctx.Value(key{}).(Outcome)
	return o, ok
}
