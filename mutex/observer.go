package mutex

import "time"

// Event is one lock operation, as reported to the functions given to
// WithObserver. New fields may be added.
type Event struct {
	// Op is what happened: acquire (an acquisition attempt, successful or
	// not), extend (an extension attempt), release, or lost (a kept-alive
	// lease could no longer be proven).
	Op       string
	Name     string        // the lock's name
	Err      error         // nil on success
	Fence    uint64        // the fencing token, on a successful acquisition
	Duration time.Duration // how long the operation took
	Nodes    []NodeResult  // every node's answer (nil for opLost); do not modify
	// Occurrence is the occurrence the lock claims (the Occurrence option,
	// to the millisecond), whether or not the operation succeeded; zero for
	// a lock without one. With the scheduler, it is
	// the tick the lock is for.
	Occurrence time.Time
}

// occurrenceTime returns the time of an occurrence in Unix milliseconds,
// or the zero time for 0 (none).
func occurrenceTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// The operations an Event reports.
const (
	opAcquire = "acquire"
	opExtend  = "extend"
	opRelease = "release"
	opLost    = "lost"
)
