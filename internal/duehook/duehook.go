// Package duehook hands what the leak scanner's missed-tick check needs
// from a replica's scheduler: its ticks due (the ticks no replica may
// claim any more, which the check compares with the jobs' ledgers) and
// its recent skips (which its heartbeat reports, so that a missed tick
// says why). Package internal/fleet makes a Hook, passes it in the
// contexts of the scheduler's Run and the scanner's Run, and feeds it the
// scheduler's skips: that wiring is redcron's, not part of the scheduler's
// or the scanner's API.
package duehook

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// DueFunc returns, by job name, the ticks of each job in [from, to) that
// no replica may claim any more at to (see the scheduler's due).
type DueFunc func(from, to time.Time) map[string][]time.Time

// Hook holds a scheduler's DueFunc once its Run has started, and its
// recent skips. The zero value is ready to use.
type Hook struct {
	due   atomic.Pointer[DueFunc]
	mu    sync.Mutex
	skips []engine.BeatSkip
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

// maxSkips bounds the skips a heartbeat carries, maxJobSkips those of one
// job among them, so that a paused job every second leaves room for the
// others.
const (
	maxSkips    = 64
	maxJobSkips = 8
)

// Skipped records that the replica skipped the tick of job for reason (a
// skip reason of package scheduler), for the missed-tick check: it keeps
// the last 64 such skips, at most 8 of a job, but for held and
// already_run, which mean that another replica claimed the tick.
func (h *Hook) Skipped(job string, tick time.Time, reason string) {
	if reason == "held" || reason == "already_run" || tick.IsZero() {
		return
	}
	b := engine.BeatSkip{Job: job, Tick: tick.UnixMilli(), Reason: reason}
	h.mu.Lock()
	defer h.mu.Unlock()
	same, first := 0, -1
	for i, o := range h.skips {
		if o.Job == b.Job {
			if same++; first < 0 {
				first = i
			}
		}
	}
	switch {
	case same >= maxJobSkips:
		h.skips = slices.Delete(h.skips, first, first+1) // the job's oldest
	case len(h.skips) >= maxSkips:
		h.skips = slices.Delete(h.skips, 0, 1)
	}
	h.skips = append(h.skips, b)
}

// Skips returns the recorded skips of ticks since from.
func (h *Hook) Skips(from time.Time) []engine.BeatSkip {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []engine.BeatSkip
	for _, b := range h.skips {
		if b.Tick >= from.UnixMilli() {
			out = append(out, b)
		}
	}
	return out
}
