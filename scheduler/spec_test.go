package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zone tests must not depend on the system's database

	"github.com/google/uuid"

	"github.com/redcron/redcron/internal/lockcheck"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

var noop = scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })

// fixedClock returns a clock stopped at t.
func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// nextTick registers spec in a scheduler whose clock is stopped at now and
// returns the job's next tick.
func nextTick(t *testing.T, now time.Time, spec string, opts ...scheduler.Option) time.Time {
	t.Helper()
	s := newScheduler(t, locker(), append(opts, scheduler.WithClock(fixedClock(now)))...)
	mustAdd(t, s, "job", spec, noop)
	return s.Entries()[0].Next
}

func TestSpecs(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	tokyo := mustLoad(t, "Asia/Tokyo")
	now := time.Date(2025, 3, 10, 12, 34, 56, 789, time.UTC) // a Monday
	tests := []struct {
		name string
		spec string
		opts []scheduler.Option
		want time.Time
	}{
		{"every minute", "* * * * *", nil, time.Date(2025, 3, 10, 12, 35, 0, 0, time.UTC)},
		{"daily at 3 in UTC by default", "0 3 * * *", nil, time.Date(2025, 3, 11, 3, 0, 0, 0, time.UTC)},
		{"WithLocation", "0 9 * * *", []scheduler.Option{scheduler.WithLocation(tokyo)}, time.Date(2025, 3, 11, 9, 0, 0, 0, tokyo)},
		{"CRON_TZ", "CRON_TZ=America/New_York 0 9 * * *", nil, time.Date(2025, 3, 10, 9, 0, 0, 0, ny)},
		{"TZ", "TZ=America/New_York 0 9 * * *", nil, time.Date(2025, 3, 10, 9, 0, 0, 0, ny)},
		{"CRON_TZ beats WithLocation", "CRON_TZ=America/New_York 0 9 * * *", []scheduler.Option{scheduler.WithLocation(tokyo)}, time.Date(2025, 3, 10, 9, 0, 0, 0, ny)},
		{"weekday names", "0 8 * * fri", nil, time.Date(2025, 3, 14, 8, 0, 0, 0, time.UTC)},
		{"WithSeconds", "30 * * * * *", []scheduler.Option{scheduler.WithSeconds()}, time.Date(2025, 3, 10, 12, 35, 30, 0, time.UTC)},
		{"WithSeconds every 10s", "*/10 * * * * *", []scheduler.Option{scheduler.WithSeconds()}, time.Date(2025, 3, 10, 12, 35, 0, 0, time.UTC)},
		{"@hourly", "@hourly", nil, time.Date(2025, 3, 10, 13, 0, 0, 0, time.UTC)},
		{"@daily in zone", "CRON_TZ=Asia/Tokyo @daily", nil, time.Date(2025, 3, 11, 0, 0, 0, 0, tokyo)},
		{"@hourly with seconds", "@hourly", []scheduler.Option{scheduler.WithSeconds()}, time.Date(2025, 3, 10, 13, 0, 0, 0, time.UTC)},
		{"@every 1m", "@every 1m", nil, time.Date(2025, 3, 10, 12, 35, 0, 0, time.UTC)},
		{"@every 1h30m", "@every 1h30m", nil, time.Date(2025, 3, 10, 13, 30, 0, 0, time.UTC)},
		{"@every with zone", "CRON_TZ=Asia/Tokyo @every 1h", nil, time.Date(2025, 3, 10, 13, 0, 0, 0, time.UTC)},
		{"surrounding white space", "  0 3 * * *  ", nil, time.Date(2025, 3, 11, 3, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextTick(t, now, tt.spec, tt.opts...); !got.Equal(tt.want) {
				t.Errorf("next tick of %q at %v = %v, want %v", tt.spec, now, got, tt.want)
			}
		})
	}
}

// TestEveryIsAlignedToTheEpoch checks that @every ticks are multiples of
// the period since the Unix epoch, whenever the scheduler was created.
func TestEveryIsAlignedToTheEpoch(t *testing.T) {
	for _, period := range []time.Duration{time.Second, 7 * time.Second, time.Minute, 7 * time.Minute, 90 * time.Minute, 25 * time.Hour} {
		spec := "@every " + period.String()
		var first time.Time
		for i, now := range []time.Time{
			time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC),
			time.Date(2025, 3, 10, 12, 0, 0, 1, time.UTC),
			time.Date(2025, 3, 10, 12, 0, 3, 0, time.UTC),
			time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC).Add(period - time.Nanosecond),
		} {
			next := nextTick(t, now, spec)
			if secs := int64(period / time.Second); next.Unix()%secs != 0 || next.Nanosecond() != 0 {
				t.Errorf("%s at %v: next tick %v is not a multiple of %v since the epoch", spec, now, next, period)
			}
			if !next.After(now) || next.Sub(now) > period {
				t.Errorf("%s at %v: next tick %v is not within the following period", spec, now, next)
			}
			// Schedulers created at different times within one period agree.
			if i == 0 {
				first = next
			} else if now.Before(first) && !next.Equal(first) {
				t.Errorf("%s at %v: next tick %v, but a scheduler created earlier said %v", spec, now, next, first)
			}
		}
	}
	// Before the epoch too.
	if got, want := nextTick(t, time.Unix(-100, 0), "@every 1m"), time.Unix(-60, 0); !got.Equal(want) {
		t.Errorf("@every 1m at -100s: got %v, want %v", got, want)
	}
}

func TestAddRejectsBadSpecs(t *testing.T) {
	tests := []struct {
		spec string
		opts []scheduler.Option
	}{
		{spec: ""},
		{spec: "   "},
		{spec: "* * * *"},
		{spec: "* * * * * *"}, // six fields without WithSeconds
		{spec: "* * * * *", opts: []scheduler.Option{scheduler.WithSeconds()}},
		{spec: "61 * * * *"},
		{spec: "* 24 * * *"},
		{spec: "0 0 30 2 *"},     // February 30th never comes
		{spec: "@every 876000h"}, // its first tick is more than five years away
		{spec: "@fortnightly"},
		{spec: "@every"},
		{spec: "@every 1m 2m"},
		{spec: "@every soon"},
		{spec: "@every 500ms"},
		{spec: "@every 1500ms"},
		{spec: "@every 0s"},
		{spec: "@every -1m"},
		{spec: "CRON_TZ=Mars/Olympus 0 3 * * *"},
		{spec: "CRON_TZ= 0 3 * * *"},
		{spec: "CRON_TZ=UTC"},
		{spec: "TZ=UTC"},
		{spec: "CRON_TZ=UTC TZ=UTC"},
		{spec: "CRON_TZ=UTC TZ=UTC * * * * *"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			s := newScheduler(t, locker(), tt.opts...)
			err := s.Add("backup", tt.spec, noop)
			if !errors.Is(err, scheduler.ErrInvalidJob) {
				t.Fatalf("Add(%q) = %v, want ErrInvalidJob", tt.spec, err)
			}
			if msg := err.Error(); !strings.Contains(msg, `job "backup"`) || !strings.Contains(msg, `spec "`+tt.spec+`"`) {
				t.Errorf("error %q does not name the job and the spec", msg)
			}
			if len(s.Entries()) != 0 {
				t.Error("the job was registered anyway")
			}
		})
	}
}

// TestAddSaysWithSeconds: a six-field spec without WithSeconds, or a
// five-field one with it, is refused with an error that names the option.
func TestAddSaysWithSeconds(t *testing.T) {
	for _, tt := range []struct {
		spec string
		opts []scheduler.Option
	}{
		{spec: "*/5 * * * * *"},
		{spec: "CRON_TZ=UTC 0 0 3 * * *"},
		{spec: "*/5 * * * *", opts: []scheduler.Option{scheduler.WithSeconds()}},
	} {
		err := newScheduler(t, locker(), tt.opts...).Add("backup", tt.spec, noop)
		if !errors.Is(err, scheduler.ErrInvalidJob) || !strings.Contains(err.Error(), "WithSeconds") {
			t.Errorf("Add(%q) = %v, want ErrInvalidJob naming WithSeconds", tt.spec, err)
		}
	}
}

func TestAddRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		job     string
		nilJob  bool
		opts    []scheduler.JobOption
		is      error    // the error must match this, if not nil
		mention []string // and mention these
	}{
		{name: "empty name", job: "", is: scheduler.ErrInvalidJob, mention: []string{`job name ""`, "empty"}},
		{name: "long name", job: strings.Repeat("x", 201), is: scheduler.ErrInvalidJob, mention: []string{"longer than 200"}},
		{name: "leading space", job: " backup", is: scheduler.ErrInvalidJob, mention: []string{`" backup"`, "white space"}},
		{name: "trailing newline", job: "backup\n", is: scheduler.ErrInvalidJob, mention: []string{`"backup\n"`, "white space"}},
		{name: "brace", job: "{backup}", is: scheduler.ErrInvalidJob, mention: []string{`"{backup}"`, "'{'"}},
		{name: "control character", job: "back\x00up", is: scheduler.ErrInvalidJob, mention: []string{"unprintable"}},
		{name: "invalid UTF-8", job: "back\xffup", is: scheduler.ErrInvalidJob, mention: []string{"UTF-8"}},
		{name: "nil job", job: "backup", nilJob: true, mention: []string{`"backup"`, "nil Job"}},
		{name: "short TTL", job: "backup", opts: []scheduler.JobOption{scheduler.WithLockTTL(500 * time.Millisecond)},
			is: mutex.ErrInvalidOption, mention: []string{`"backup"`, "WithLockTTL"}},
		{name: "negative timeout", job: "backup", opts: []scheduler.JobOption{scheduler.WithRunTimeout(-time.Second)},
			is: mutex.ErrInvalidOption, mention: []string{"WithRunTimeout"}},
		{name: "zero grace", job: "backup", opts: []scheduler.JobOption{scheduler.WithMisfireGrace(0)},
			is: mutex.ErrInvalidOption, mention: []string{"WithMisfireGrace"}},
		{name: "zero catch-up", job: "backup", opts: []scheduler.JobOption{scheduler.WithCatchUp(0)},
			is: mutex.ErrInvalidOption, mention: []string{"WithCatchUp"}},
		{name: "nil option", job: "backup", opts: []scheduler.JobOption{nil},
			is: mutex.ErrInvalidOption, mention: []string{"nil JobOption"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScheduler(t, locker())
			var job scheduler.JobFunc = noop
			if tt.nilJob {
				job = nil
			}
			err := s.Add(tt.job, "@hourly", job, tt.opts...)
			if err == nil {
				t.Fatal("Add succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Add = %v, want an error matching %v", err, tt.is)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if len(s.Entries()) != 0 {
				t.Error("the job was registered anyway")
			}
		})
	}
}

// pickyLocker refuses the requests of jobs whose name starts with "bad".
type pickyLocker struct{ scheduler.Locker }

var errPicky = errors.New("picky: name refused")

// AcquireAll offers, with no requests (New's call), check.
func (l pickyLocker) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	if len(reqs) == 0 {
		lockcheck.Offer(ctx, l.check)
		return nil
	}
	return l.Locker.AcquireAll(ctx, reqs)
}

func (pickyLocker) check(req scheduler.LockRequest) error {
	if strings.HasPrefix(req.Job, "bad") {
		return errPicky
	}
	if req.TTL != time.Minute || req.Owner != "replica-1" {
		return fmt.Errorf("unexpected request %+v", req)
	}
	return nil
}

func TestAddChecksRequestsWithTheLocker(t *testing.T) {
	s := newScheduler(t, pickyLocker{locker()}, scheduler.WithInstanceID("replica-1"))
	err := s.Add("bad-job", "@hourly", noop, scheduler.WithLockTTL(time.Minute))
	if !errors.Is(err, errPicky) || !strings.Contains(err.Error(), `"bad-job"`) {
		t.Errorf("Add = %v, want the Locker's refusal naming the job", err)
	}
	if err := s.Add("good-job", "@hourly", noop, scheduler.WithLockTTL(time.Minute)); err != nil {
		t.Errorf("Add: %v", err)
	}
	if n := len(s.Entries()); n != 1 {
		t.Errorf("%d jobs registered, want 1", n)
	}
}

func TestAddAcceptsGoodNames(t *testing.T) {
	s := newScheduler(t, locker())
	for _, name := range []string{"a", "nightly report", "billing:invoices/eu", "rapport-été", strings.Repeat("x", 200)} {
		if err := s.Add(name, "@hourly", noop); err != nil {
			t.Errorf("Add(%q): %v", name, err)
		}
	}
}

func TestAddDuplicate(t *testing.T) {
	s := newScheduler(t, locker())
	mustAdd(t, s, "backup", "@hourly", noop)
	err := s.Add("backup", "@daily", noop)
	if !errors.Is(err, scheduler.ErrDuplicateJob) || !strings.Contains(err.Error(), `"backup"`) {
		t.Fatalf("second Add = %v, want ErrDuplicateJob naming the job", err)
	}
	if e := s.Entries(); len(e) != 1 || e[0].Spec != "@hourly" {
		t.Errorf("entries = %+v, want the first registration only", e)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		option string
		opt    scheduler.Option
	}{
		{"WithLogger", scheduler.WithLogger(nil)},
		{"WithLocation", scheduler.WithLocation(nil)},
		{"WithInstanceID", scheduler.WithInstanceID("")},
		{"WithInstanceID", scheduler.WithInstanceID("a{b}")},
		{"WithObserver", scheduler.WithObserver(nil)},
		{"WithClock", scheduler.WithClock(nil)},
		{"WithLockAhead", scheduler.WithLockAhead(-time.Millisecond)},
		{"WithLockAhead", scheduler.WithLockAhead(time.Minute + time.Millisecond)},
		{"nil Option", nil},
	}
	for _, tt := range tests {
		t.Run(tt.option, func(t *testing.T) {
			s, err := scheduler.New(locker(), tt.opt)
			if s != nil || !errors.Is(err, mutex.ErrInvalidOption) {
				t.Fatalf("New = %v, %v; want nil, mutex.ErrInvalidOption", s, err)
			}
			if !strings.Contains(err.Error(), tt.option) {
				t.Errorf("error %q does not name %s", err, tt.option)
			}
		})
	}
	if _, err := scheduler.New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	if _, err := scheduler.New(locker(), scheduler.WithLocation(nil)); err.Error() != "redcron: invalid option: WithLocation: nil location" {
		t.Errorf("error text: %q", err)
	}
}

// TestNewAcceptsGoodOptions checks every option's valid values, and that
// the default instance id is a UUID.
func TestNewAcceptsGoodOptions(t *testing.T) {
	s := newScheduler(t, locker(),
		scheduler.WithLogger(slog.New(slog.DiscardHandler)),
		scheduler.WithLocation(time.Local),
		scheduler.WithInstanceID("pod-7 (eu-west)"),
		scheduler.WithObserver((&recorder{}).Observe),
		scheduler.WithClock(time.Now),
		scheduler.WithSeconds(),
		scheduler.WithLockAhead(time.Minute),
	)
	err := s.Add("job", "* * * * * *", noop,
		scheduler.WithLockTTL(time.Second), scheduler.WithRunTimeout(0), scheduler.WithMisfireGrace(time.Millisecond),
		scheduler.WithCatchUp(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
}

// uuidV7Time returns the time of s, a UUIDv7 of the RFC 9562 variant, or
// false if s is not one.
func uuidV7Time(s string) (time.Time, bool) {
	id, err := uuid.Parse(s)
	if err != nil || id.Version() != 7 || id.Variant() != uuid.RFC4122 {
		return time.Time{}, false
	}
	sec, nsec := id.Time().UnixTime()
	return time.Unix(sec, nsec), true
}

// uuidVersion returns the version of the UUID s, or -1.
func uuidVersion(s string) int {
	id, err := uuid.Parse(s)
	if err != nil {
		return -1
	}
	return int(id.Version())
}
