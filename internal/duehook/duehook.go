// Package duehook hands the ticks due of a scheduler (the ticks no replica
// may claim any more, which the missed-tick check compares with the jobs'
// ledgers) from package scheduler to package internal/fleet, which wires
// the check, through the context given to the scheduler's Run: that wiring
// is redcron's, not part of the scheduler's API.
package duehook

import (
	"context"
	"sync/atomic"
	"time"
)

// DueFunc returns, by job name, the ticks of each job in [from, to) that
// no replica may claim any more at to (see the scheduler's due).
type DueFunc func(from, to time.Time) map[string][]time.Time

// Hook holds a scheduler's DueFunc once its Run has started. The zero
// value is ready to use.
type Hook struct {
	due atomic.Pointer[DueFunc]
}

type key struct{}

// NewContext returns a copy of ctx that carries h.
func NewContext(ctx context.Context, h *Hook) context.Context {
	return context.WithValue(ctx, key{}, h)
}

// FromContext returns the Hook ctx carries, or nil.
func FromContext(ctx context.Context) *Hook {
	h, _ := ctx.Value(key{}).(*Hook)
	return h
}

// Set is called by the scheduler's Run with its DueFunc.
func (h *Hook) Set(f DueFunc) { h.due.Store(&f) }

// Due returns the ticks due in [from, to), as the scheduler's DueFunc
// says; none before its Run has started, when no tick is due either.
func (h *Hook) Due(from, to time.Time) map[string][]time.Time {
	f := h.due.Load()
	if f == nil {
		return nil
	}
	return (*f)(from, to)
}
