package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// schedule computes a job's ticks.
type schedule interface {
	// Next returns the first tick strictly after t, or the zero time if
	// there is none within five years.
	Next(t time.Time) time.Time
}

// specCache keeps the schedules Add parsed, by spec, so that registering
// many jobs on a few specs parses each once (a schedule is immutable: jobs
// share it). It forgets everything past maxCachedSpecs specs.
type specCache struct {
	mu sync.Mutex
	m  map[string]parsedSpec
}

type parsedSpec struct {
	sched schedule
	loc   *time.Location
}

// maxCachedSpecs bounds a specCache.
const maxCachedSpecs = 4096

// parse returns the schedule of spec and its zone (see parseSpec), from
// the cache when an earlier Add parsed it.
func (s *Scheduler) parse(spec string) (schedule, *time.Location, error) {
	c := &s.specs
	c.mu.Lock()
	p, ok := c.m[spec]
	c.mu.Unlock()
	if ok {
		return p.sched, p.loc, nil
	}
	sched, loc, err := parseSpec(spec, s.cfg.seconds, s.cfg.location)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedSpecs {
		c.m = map[string]parsedSpec{}
	}
	c.m[spec] = parsedSpec{sched, loc}
	c.mu.Unlock()
	return sched, loc, nil
}

// parseSpec parses a cron spec: five fields, or six with seconds first when
// seconds is set; or a descriptor (@yearly, @monthly, @weekly, @daily,
// @midnight, @hourly, @every <duration>, @at <RFC 3339 time>); all but
// @at optionally prefixed by CRON_TZ=<zone> or TZ=<zone>. Specs without a
// zone prefix are interpreted in loc. It returns the schedule and the zone
// it is read in.
func parseSpec(spec string, seconds bool, loc *time.Location) (sched schedule, tz *time.Location, err error) {
	rest := strings.TrimSpace(spec)
	if zone, after, ok := cutZone(rest); ok {
		if f := strings.Fields(after); len(f) > 0 && f[0] == "@at" {
			return nil, nil, errors.New("@at takes no zone prefix: its time carries its offset")
		}
		if zone == "" {
			return nil, nil, errors.New("empty time zone")
		}
		z, err := time.LoadLocation(zone)
		if err != nil {
			return nil, nil, fmt.Errorf("time zone %q: %w", zone, err)
		}
		if _, _, again := cutZone(after); again {
			return nil, nil, errors.New("more than one time zone")
		}
		loc, rest = z, after
	}
	fields := strings.Fields(rest)
	switch {
	case len(fields) == 0:
		return nil, nil, errors.New("empty schedule")
	case fields[0] == "@every":
		if len(fields) != 2 {
			return nil, nil, errors.New("@every takes one duration")
		}
		sched, err := parseEvery(fields[1])
		return sched, loc, err
	case fields[0] == "@at":
		if len(fields) != 2 {
			return nil, nil, errors.New("@at takes one time, as 2026-11-28T00:00:00Z")
		}
		sched, err := parseAt(fields[1])
		return sched, loc, err
	}
	opts := cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor
	if seconds {
		opts |= cron.Second
	}
	switch {
	case !seconds && len(fields) == 6:
		return nil, nil, errors.New("six fields, but a leading seconds field needs the WithSeconds option (with the front door: redcron.WithSchedulerOptions(scheduler.WithSeconds()))")
	case seconds && len(fields) == 5:
		return nil, nil, errors.New("five fields, but WithSeconds is on: specs take six, seconds first")
	}
	defer func() {
		// Defence in depth: a parser bug must not crash the caller of Add.
		if v := recover(); v != nil {
			sched, tz, err = nil, nil, fmt.Errorf("cron parser panicked: %v", v)
		}
	}()
	s, err := cron.NewParser(opts).Parse(rest)
	if err != nil {
		return nil, nil, err
	}
	// Without a zone prefix, robfig's schedule computes in the location of
	// the time given to Next; zoned supplies it.
	return &zoned{Schedule: s, loc: loc, memo: map[int64]time.Time{}}, loc, nil
}

// cutZone splits a CRON_TZ=<zone> or TZ=<zone> prefix from spec.
func cutZone(spec string) (zone, rest string, ok bool) {
	first, rest, _ := strings.Cut(spec, " ")
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if zone, ok := strings.CutPrefix(first, prefix); ok {
			return zone, strings.TrimSpace(rest), true
		}
	}
	return "", "", false
}

// parseEvery parses the argument of @every.
func parseEvery(arg string) (schedule, error) {
	d, err := time.ParseDuration(arg)
	if err != nil {
		return nil, fmt.Errorf("@every: %w", err)
	}
	if d < time.Second || d%time.Second != 0 {
		return nil, fmt.Errorf("@every %v: want a whole number of seconds, at least 1s", d)
	}
	return every{int64(d / time.Second)}, nil
}

// zoned is a robfig schedule computed in a given location. Its next tick
// after t depends only on t's whole second (robfig rounds t up to the
// next second), so it keeps the answers for the last seconds it was asked
// about: the jobs of one spec share it (see parse), and at a tick they all
// ask about the same seconds, which costs one computation instead of one
// per job (a daily spec's Next walks its fields).
type zoned struct {
	cron.Schedule
	loc  *time.Location
	mu   sync.Mutex
	memo map[int64]time.Time // by t's second, at most maxMemo
}

// maxMemo bounds a zoned schedule's memory of answers.
const maxMemo = 64

func (z *zoned) Next(t time.Time) time.Time {
	sec := t.Unix()
	z.mu.Lock()
	n, ok := z.memo[sec]
	z.mu.Unlock()
	if ok {
		return n
	}
	n = z.Schedule.Next(t.In(z.loc))
	z.mu.Lock()
	if len(z.memo) >= maxMemo {
		clear(z.memo)
	}
	z.memo[sec] = n
	z.mu.Unlock()
	return n
}

// every is the schedule of "@every d": the multiples of d since the Unix
// epoch, so that every replica computes the same ticks whenever it started.
// (robfig's ConstantDelaySchedule counts from the process start instead.)
type every struct {
	seconds int64
}

func (e every) Next(t time.Time) time.Time {
	// t lies in [s, s+1s) with s = t.Unix(), so the first multiple of the
	// period strictly after t is the first one strictly after s.
	s := t.Unix()
	n := s / e.seconds
	if s%e.seconds < 0 {
		n-- // floor division for times before the epoch
	}
	return time.Unix((n+1)*e.seconds, 0).In(t.Location())
}

// tickWithin reports whether s has a tick after from and at or before to.
func tickWithin(s schedule, from, to time.Time) bool {
	t := s.Next(from)
	return !t.IsZero() && !t.After(to)
}

// latestTick returns the latest tick of s in [from, to], or the zero time.
func latestTick(s schedule, from, to time.Time) time.Time {
	first := s.Next(from.Add(-time.Nanosecond))
	if first.IsZero() || first.After(to) {
		return time.Time{}
	}
	return lastTick(s, first, to)
}

// lastTick returns the latest tick of s at or before now, given first, a
// tick at or before now. It looks back from now over a window that doubles
// until it holds a tick, and walks from there: a long gap (a clock stepped
// forward by months, a wide catch-up window) costs a few dozen calls of
// Next, not one per tick in the gap.
func lastTick(s schedule, first, now time.Time) time.Time {
	const widest = 100 * 365 * 24 * time.Hour
	for w := time.Second; ; w *= 2 {
		from := now.Add(-w)
		if !from.After(first) || w > widest {
			from = first
		}
		t := s.Next(from)
		if t.IsZero() || t.After(now) {
			if from.Equal(first) {
				return first
			}
			continue
		}
		for n := s.Next(t); !n.IsZero() && !n.After(now); n = s.Next(n) {
			t = n
		}
		return t
	}
}
