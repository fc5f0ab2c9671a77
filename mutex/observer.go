package mutex

import "time"

// EventKind says what a lock Event is about.
type EventKind uint8

// The kinds of lock events.
const (
	EventAcquire EventKind = iota + 1 // an acquisition attempt, successful or not
	EventExtend                       // an extension attempt
	EventRelease                      // a release
	EventLost                         // a kept-alive lease could no longer be proven
)

// String returns the kind's snake_case name.
func (k EventKind) String() string {
	switch k {
	case EventAcquire:
		return "acquire"
	case EventExtend:
		return "extend"
	case EventRelease:
		return "release"
	case EventLost:
		return "lost"
	}
	return "unknown"
}

// Event is one lock operation, as reported to an Observer. New fields may
// be added.
type Event struct {
	Kind     EventKind
	Name     string        // the lock's name
	Err      error         // nil on success
	Fence    uint64        // the fencing token, on a successful acquisition
	Duration time.Duration // how long the operation took
	Nodes    []NodeResult  // every node's answer (nil for EventLost); do not modify
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

// Observer receives lock events, for metrics and audits. ObserveLock is
// called synchronously from the goroutine doing the operation, possibly
// from several at once: it must be safe for concurrent use and must not
// block.
type Observer interface {
	ObserveLock(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// ObserveLock calls f(e).
func (f ObserverFunc) ObserveLock(e Event) { f(e) }
