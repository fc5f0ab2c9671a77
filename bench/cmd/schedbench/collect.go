package main

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// record is one scheduler event, compacted.
type record struct {
	Kind     string
	Skip     string
	Result   string
	Replica  int8
	Attempts int16
	Job      int32
	Tick     int64 // unix seconds
	Delay    time.Duration
}

// collector receives the events of a replica's run, in its process; and
// in the benchmark's, those of every replica, merged.
type collector struct {
	w0, w1 int64 // the measured window of ticks, [w0, w1) in unix seconds
	// In the benchmark's, with -crash: when replica killed was killed,
	// unix milliseconds (0: no crash). Its records died with it.
	crashMs int64
	killed  int8

	recs   buffer[record]   // scheduler events
	inJobs buffer[record]   // the start delays the jobs themselves saw
	fails  buffer[lockFail] // failed lock acquisitions

	handled atomic.Int64 // run_started and skipped events of window ticks
}

type observerFunc func(scheduler.Event)

func (f observerFunc) Observe(e scheduler.Event) { f(e) }

// observer returns the Observer of replica id.
func (c *collector) observer(id int) func(scheduler.Event) {
	return observerFunc(func(e scheduler.Event) {
		switch e.Kind {
		case "run_started", "run_finished", "skipped", "lock_retry":
		default:
			return
		}
		job, ok := jobIndex(e.Job)
		if !ok {
			return
		}
		r := record{Kind: string(e.Kind), Skip: e.Skip, Result: e.Result, Replica: int8(id), Job: job,
			Attempts: int16(min(e.Attempts, 1<<14)), Tick: e.Tick.Unix(), Delay: e.StartDelay}
		if !c.inWindow(r.Tick) {
			return // the window's ticks only: at 10,000 jobs, the warm-up's would take memory
		}
		if e.Kind == "run_started" || e.Kind == "skipped" {
			c.handled.Add(1)
		}
		c.recs.add(r)
	})
}

// jobStarted records that the job of info started on replica id, with the
// start delay it saw as its first action: that of EventRunStarted plus
// the time to schedule the job's goroutine. These records are the jobs'
// own account of their runs, which analyze checks the scheduler's events
// against.
func (c *collector) jobStarted(id int, info scheduler.RunInfo) {
	delay := time.Since(info.Tick)
	job, ok := jobIndex(info.Job)
	if !ok || !c.inWindow(info.Tick.Unix()) {
		return
	}
	c.inJobs.add(record{Kind: "run_started", Replica: int8(id), Job: job, Tick: info.Tick.Unix(), Delay: delay})
}

// jobIndex returns the number of the benchmark's job called name ("j12"
// is 12), or false for any other name.
func jobIndex(name string) (int32, bool) {
	n, ok := strings.CutPrefix(name, "j")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return int32(i), err == nil
}

func (c *collector) records() []record { return c.recs.all() }

func (c *collector) jobStarts() []record { return c.inJobs.all() }

// buffer collects values from many goroutines without a lock while its
// preallocated storage lasts, so that the replicas' thousands of events at
// a tick do not queue on one mutex; beyond it, it appends under one.
type buffer[T any] struct {
	n    atomic.Int64
	buf  []T
	mu   sync.Mutex
	more []T
}

// newBuffer returns a buffer with room for size values before it takes
// its lock. The storage is written once here: a large allocation's fresh
// pages are not touched by make, and each would otherwise take its page
// fault when the first value lands on it, at a tick, in the replicas'
// measured starts.
func newBuffer[T any](size int) buffer[T] {
	buf := make([]T, size)
	clear(buf)
	return buffer[T]{buf: buf}
}

// set makes vs the values of an empty buffer.
func (b *buffer[T]) set(vs []T) {
	b.buf = vs
	b.n.Store(int64(len(vs)))
}

func (b *buffer[T]) add(v T) {
	if i := b.n.Add(1) - 1; i < int64(len(b.buf)) {
		b.buf[i] = v
		return
	}
	b.mu.Lock()
	b.more = append(b.more, v)
	b.mu.Unlock()
}

// all returns the values added; no add may run concurrently with it or
// after it.
func (b *buffer[T]) all() []T {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(b.n.Load(), int64(len(b.buf)))
	return append(b.buf[:n:n], b.more...)
}

// lockFail is one failed lock acquisition, from a replica's mutex
// observer.
type lockFail struct {
	At       int64 // when the attempt started, unix milliseconds
	Tick     int64 // the tick it was for: unix seconds
	Replica  int8
	Job      int32
	Reason   string // held, already_run, no_quorum
	Timeouts int8   // nodes that voted timeout or canceled
	// For held: the holding value's occurrence (unix seconds) and owner
	// (replica number, -1 if not one of ours).
	HolderTick  int64
	HolderOwner int8
}

// lockObserver returns the lock observer of replica id. A failure is
// stamped with the tick it was for, the occurrence the scheduler's lock
// claims (Event.Occurrence).
func (c *collector) lockObserver(id int) func(mutex.Event) {
	return func(e mutex.Event) {
		if e.Op != "acquire" || e.Err == nil {
			return
		}
		job, ok := jobIndex(e.Name)
		if !ok {
			return
		}
		if e.Occurrence.IsZero() { // not a tick's lock
			return
		}
		start := time.Now().Add(-e.Duration)
		f := lockFail{At: start.UnixMilli(), Tick: e.Occurrence.Unix(), Replica: int8(id), Job: job, HolderOwner: -1}
		var qe *mutex.QuorumError
		if errors.As(e.Err, &qe) {
			for _, n := range qe.Nodes {
				if n.Vote == "timeout" || n.Vote == "canceled" {
					f.Timeouts++
				}
			}
			switch qe.Reason {
			case mutex.ErrHeld:
				f.Reason = "held"
				if v, err := engine.ParseValue(qe.Holder); err == nil {
					f.HolderTick = v.Occurrence / 1000
					if n, ok := strings.CutPrefix(v.Owner, "replica-"); ok {
						if i, err := strconv.Atoi(n); err == nil {
							f.HolderOwner = int8(i)
						}
					}
				}
			case mutex.ErrAlreadyRun:
				f.Reason = "already_run"
			default:
				f.Reason = "no_quorum"
			}
		}
		if c.inWindow(f.Tick) || c.inWindow(f.HolderTick) {
			c.fails.add(f)
		}
	}
}

// inWindow reports whether tick (unix seconds) is one of the window's.
func (c *collector) inWindow(tick int64) bool { return tick >= c.w0 && tick < c.w1 }

func (c *collector) lockFails() []lockFail { return c.fails.all() }
