package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redcron/redcron/internal/lockcheck"
	"github.com/redcron/redcron/mutex"
)

// maxNameLen is the longest job name or instance id, in bytes.
const maxNameLen = 200

// Scheduler runs registered jobs on their schedules, in every replica of a
// service; through its Locker, each tick of each job runs on one replica.
// Create it with New; the zero value is not usable. Its methods are safe
// for concurrent use.
//
// A Scheduler runs once: Run may be called once, and after Run has returned
// or Shutdown has been called the Scheduler is closed.
type Scheduler struct {
	locker Locker
	// check is the Locker's check of a job's requests, if it offers one
	// (a Locker of ours: internal/lockcheck); Add calls it.
	check func(LockRequest) error
	cfg   config
	log   *slog.Logger

	wake    chan struct{} // capacity 1: the job table changed
	started chan struct{} // closed when Run starts
	closed  chan struct{} // closed when the Scheduler is closed

	limit *limiter // WithMaxConcurrentRuns; nil if no limit

	specs   specCache // schedules parsed, by spec: many jobs share a few specs
	mu      sync.Mutex
	jobs    map[string]*entry
	state   state
	session *session // the state of Run while it runs; nil otherwise
}

type state int

const (
	stateIdle state = iota
	stateRunning
	stateClosed
)

// entry is a registered job.
type entry struct {
	name  string
	spec  string
	sched schedule
	loc   *time.Location // the zone spec is read in
	job   JobFunc
	cfg   jobConfig

	// Read without Scheduler.mu, so that the runs starting at a tick do not
	// queue on it. running is decremented under Scheduler.mu, with
	// lastResult, so that Entries never shows a finished run without its
	// result; removed is set under it by Remove.
	running atomic.Int32        // runs in progress on this replica
	latest  atomic.Pointer[run] // the run started last, whose result Entries shows, and which OverlapReplace cancels
	removed atomic.Bool
	// gone is done once Remove has removed the job; leave makes it so.
	gone  context.Context
	leave context.CancelFunc

	// Guarded by Scheduler.mu.
	next       time.Time               // the next tick to dispatch; zero if none
	first      time.Time               // the first tick dispatched in this session; zero before Run
	at         time.Time               // when to dispatch next: next, less the lock-ahead
	prev       time.Time               // the latest tick handled
	lastResult string                  // outcome of the latest finished handling: a run...
	lastSkip   string                  // ...or a skip
	lastErr    error                   // and its error
	abandon    context.CancelCauseFunc // ends the latest tick's lock attempts
	warned     time.Time               // when a no-decision skip was last logged as a warning
	unwarned   int                     // no-decision skips logged at debug level since
	released   chan struct{}           // closed at the next release of a run's lease here; nil if unwatched
}

// Entry is a snapshot of a registered job, as seen by this replica.
type Entry struct {
	// Name and Spec are the job's name and spec, as given to Add.
	Name string
	Spec string
	// Location is the time zone the spec is read in: its CRON_TZ= or TZ=
	// prefix's, else WithLocation's.
	Location *time.Location
	// LockTTL, RunTimeout, MisfireGrace, CatchUp, Attempts and Backoff are
	// the job's options as Add applied them, defaults included
	// (WithLockTTL, WithRunTimeout, WithMisfireGrace, WithCatchUp,
	// WithRetry); 0 for a run timeout or catch-up that is off.
	LockTTL      time.Duration
	RunTimeout   time.Duration
	MisfireGrace time.Duration
	CatchUp      time.Duration
	Attempts     int
	Backoff      time.Duration
	// Tags are the job's tags (WithTags), sorted; nil for none.
	Tags []string
	// Limit and Permits are the job's cluster limit (WithClusterLimit):
	// its name and permits; "" and 0 for none.
	Limit   string
	Permits int
	// Next is the next tick not yet handled; zero if the schedule has none
	// within five years. With WithLockAhead, a tick is handled from its
	// lock-ahead on, so Next is then the tick after it.
	Next time.Time
	// Prev is the latest tick this replica handled (ran, skipped or tried
	// to lock, which with WithLockAhead starts before the tick); zero if
	// none.
	Prev time.Time
	// Running reports whether a run of the job is in progress here.
	Running bool
	// LastResult, LastSkip and LastErr describe the latest handling of the
	// job that completed on this replica: a run that ended (LastResult is
	// set: a result, as Event.Result) or a tick that was skipped (LastSkip
	// is set: a reason, as Event.Skip). LastErr is the run's error, the
	// lock error of a no_quorum skip, or why the lease of a lease_lost skip
	// was lost.
	LastResult string
	LastSkip   string
	LastErr    error
}

// New returns a Scheduler that elects the replica running each tick through l.
// It starts no goroutines and does no I/O; see Run. It calls l's AcquireAll
// once with no requests (see Locker).
func New(l Locker, opts ...Option) (*Scheduler, error) {
	if l == nil {
		return nil, errors.New("scheduler: nil Locker")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", mutex.ErrInvalidOption)
		}
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("%w: %w", mutex.ErrInvalidOption, err)
		}
	}
	var limit *limiter
	if cfg.maxRuns > 0 {
		limit = newLimiter(cfg.maxRuns)
	}
	return &Scheduler{
		limit:   limit,
		locker:  l,
		check:   lockcheck.Of(l.AcquireAll, cfg.instanceID),
		cfg:     cfg,
		log:     cfg.logger.With(slog.String("instance", cfg.instanceID)),
		wake:    make(chan struct{}, 1),
		started: make(chan struct{}),
		closed:  make(chan struct{}),
		jobs:    make(map[string]*entry),
	}, nil
}

// Add registers job under name, to run on spec. It is safe to call while
// the Scheduler runs.
//
// The name identifies the job across replicas and in the lock: it must be
// the same on every replica, non-empty, at most 200 bytes of printable
// UTF-8, without '{' or '}' and without white space at either end.
//
// spec is parsed by robfig/cron/v3: five fields (minute, hour, day of
// month, month, day of week), or six with a leading seconds field under
// WithSeconds; or a descriptor: @yearly (@annually), @monthly, @weekly,
// @daily (@midnight), @hourly, or @every <duration>. A CRON_TZ=<zone> or
// TZ=<zone> prefix sets the zone, which is otherwise that of WithLocation.
//
// "@every d" ticks at the multiples of d since the Unix epoch, so that all
// replicas agree whenever they started; d must be a whole number of seconds,
// at least 1s. The ticks of, say, "@every 7m" therefore do not fall at the
// same minutes of every hour.
//
// "@at t", t an RFC 3339 time with its offset (2026-11-28T00:00:00Z), makes
// a one-time job: its only tick is t, run once in the whole cluster as any
// tick is (the tick's mark refuses it to every other replica, and later
// ones). A replica registering it, or starting, after t runs it at once
// if t is past by no more than its misfire grace or catch-up window, unless
// it ran; past that, never. Its time may lie at most as far back as the
// Locker keeps a tick's mark (Add asks the Locker); afterwards,
// remove the job from the code.
//
// Add returns an error matching ErrInvalidJob for a name that is not valid
// or a spec it cannot parse or that has no tick within five years (or an
// @at time further back than the Locker keeps a mark),
// ErrDuplicateJob if the name is taken,
// mutex.ErrInvalidOption for a bad JobOption, and ErrClosed once the Scheduler
// is closed. Add also returns the refusal of the Locker's check of the
// job's name, lock TTL and reach, when the Locker is one of redcron's (see
// Locker): the Redlock adapter's matches mutex.ErrInvalidOption
// for a TTL out of the Redlock's range, a lock-ahead longer than its max
// TTL, or a misfire grace or catch-up window longer than it keeps a tick's
// mark).
func (s *Scheduler) Add(name, spec string, job JobFunc, opts ...JobOption) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("%w name %q: %w", ErrInvalidJob, name, err)
	}
	if job == nil {
		return fmt.Errorf("scheduler: job %q: nil JobFunc", name)
	}
	sched, loc, err := s.parse(spec)
	if err != nil {
		return fmt.Errorf("%w %q: spec %q: %w", ErrInvalidJob, name, spec, err)
	}
	now := s.cfg.clock()
	if !tickSoon(sched, now) {
		return fmt.Errorf("%w %q: spec %q: no tick within five years", ErrInvalidJob, name, spec)
	}
	cfg := defaultJobConfig()
	for _, o := range opts {
		if o == nil {
			return fmt.Errorf("%w: job %q: nil JobOption", mutex.ErrInvalidOption, name)
		}
		if err := o(&cfg); err != nil {
			return fmt.Errorf("%w: job %q: %w", mutex.ErrInvalidOption, name, err)
		}
	}
	req := LockRequest{Job: name, TTL: cfg.lockTTL, Owner: s.cfg.instanceID, Lead: s.cfg.lockAhead, Reach: cfg.lateLimit()}
	if err := s.checkPastAt(req, spec, sched, now); err != nil {
		return err
	}
	if err := s.checkRequest(req); err != nil {
		return fmt.Errorf("scheduler: job %q: refused by the Locker: %w", name, err)
	}
	e := &entry{name: name, spec: spec, sched: sched, loc: loc, job: job, cfg: cfg}
	e.gone, e.leave = context.WithCancel(context.Background())

	s.mu.Lock()
	switch {
	case s.state == stateClosed:
		s.mu.Unlock()
		return ErrClosed
	case s.jobs[name] != nil:
		s.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrDuplicateJob, name)
	}
	now = s.cfg.clock()
	next := firstTick(e, now)
	e.next, e.at = next, s.dispatchAt(now, next)
	if s.state == stateRunning {
		e.first = next
	}
	// Reported before the loop can see the job, so that observers know it
	// before any of its other events.
	s.emit(e, Event{Kind: KindJobAdded, Job: name})
	s.jobs[name] = e
	s.mu.Unlock()

	s.notify()
	s.log.LogAttrs(context.Background(), slog.LevelDebug, "job added",
		slog.String("job", name), slog.String("spec", spec), slog.Time("next", next))
	return nil
}

// Remove unregisters the job called name: it will not be started again. A
// run in progress is not interrupted, but lock attempts still pending for
// the job (its ticks', and a Trigger's) are abandoned. Remove returns an
// error matching ErrUnknownJob if no such job is registered.
func (s *Scheduler) Remove(name string) error {
	s.mu.Lock()
	e := s.jobs[name]
	if e == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	delete(s.jobs, name)
	e.removed.Store(true)
	e.leave()
	if e.abandon != nil {
		e.abandon(errRemoved)
	}
	// Reported under the lock, as Add reports, so that an Add of the same
	// name that follows is reported after it.
	s.emit(e, Event{Kind: KindJobRemoved, Job: name})
	s.mu.Unlock()

	s.notify()
	s.log.LogAttrs(context.Background(), slog.LevelDebug, "job removed", slog.String("job", name))
	return nil
}

// Entries returns a snapshot of the registered jobs, sorted by name.
func (s *Scheduler) Entries() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries := make([]Entry, 0, len(s.jobs))
	for _, e := range s.jobs {
		entries = append(entries, Entry{
			Name:         e.name,
			Spec:         e.spec,
			Location:     e.loc,
			LockTTL:      e.cfg.lockTTL,
			RunTimeout:   e.cfg.runTimeout,
			MisfireGrace: e.cfg.misfireGrace,
			CatchUp:      e.cfg.catchUp,
			Attempts:     e.cfg.attempts,
			Backoff:      e.cfg.backoff,
			Tags:         slices.Clone(e.cfg.tags),
			Limit:        e.cfg.limit,
			Permits:      e.cfg.permits,
			Next:         e.next,
			Prev:         e.prev,
			Running:      e.running.Load() > 0,
			LastResult:   e.lastResult,
			LastSkip:     e.lastSkip,
			LastErr:      e.lastErr,
		})
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return entries
}

// firstTick is the first tick of e to dispatch at now: the next one, or
// under WithCatchUp the latest one within the catch-up window; for a
// one-time job (@at), its tick if it is past by no more than its misfire
// grace or catch-up window, whichever is longer.
func firstTick(e *entry, now time.Time) time.Time {
	if o, ok := e.sched.(once); ok && !o.at.After(now) {
		return o.firstTick(now, e.cfg.lateLimit())
	}
	if w := e.cfg.catchUp; w > 0 {
		if t := latestTick(e.sched, now.Add(-w), now); !t.IsZero() {
			return t
		}
	}
	return e.sched.Next(now)
}

// notify wakes the loop up to look at the job table again.
func (s *Scheduler) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// emit sends ev, an event of e, to the observers (WithObserver), then to
// e's own (WithJobObserver), each in the order they were given.
func (s *Scheduler) emit(e *entry, ev Event) {
	ev.Instance = s.cfg.instanceID
	for _, o := range s.cfg.observers {
		o(ev)
	}
	for _, o := range e.cfg.observers {
		s.observeJob(o, ev)
	}
}

// observeJob calls o, a job's observer, with ev; a panic of o is logged,
// not propagated.
func (s *Scheduler) observeJob(o func(Event), ev Event) {
	defer func() {
		if v := recover(); v != nil {
			s.log.LogAttrs(context.Background(), slog.LevelError, "job observer panicked",
				tickAttrs(ev.Job, ev.Tick, slog.String("event", string(ev.Kind)), slog.Any("panic", v),
					slog.String("stack", string(debug.Stack())))...)
		}
	}()
	o(ev)
}

// checkName reports why name is not a valid job name or instance id.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > maxNameLen:
		return fmt.Errorf("longer than %d bytes", maxNameLen)
	case !utf8.ValidString(name):
		return errors.New("not valid UTF-8")
	case strings.TrimSpace(name) != name:
		return errors.New("white space at either end")
	case strings.ContainsAny(name, "{}"):
		// Braces delimit hash tags in Redis Cluster keys.
		return errors.New("contains '{' or '}'")
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("contains the unprintable character %U", r)
		}
	}
	return nil
}
