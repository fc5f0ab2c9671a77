package scheduler

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// TestZonedNextKeepsRobfigsAnswers: a zoned schedule, which keeps its
// answers by second, answers as robfig's schedule does for any instant,
// sub-second ones and daylight-saving changes included, from many
// goroutines at once.
func TestZonedNextKeepsRobfigsAnswers(t *testing.T) {
	opts := cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor
	for _, spec := range []string{"0 0 0 * * *", "*/7 * * * * *", "CRON_TZ=America/New_York 0 30 2 * * *", "TZ=Europe/Berlin 0 0 1 1 * *"} {
		sched, loc, err := parseSpec(spec, true, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		rest := spec
		if _, after, ok := cutZone(spec); ok {
			rest = after
		}
		raw, err := cron.NewParser(opts).Parse(rest)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		// Around a midnight, and around New York's and Berlin's changes to
		// daylight-saving time: each second asked about about three times
		// in a row, at random parts of it, so that answers are reused, and
		// at random seconds too.
		for g, base := range []time.Time{time.Date(2026, 3, 7, 23, 50, 0, 0, time.UTC), time.Date(2026, 3, 8, 6, 50, 0, 0, time.UTC),
			time.Date(2026, 3, 29, 0, 50, 0, 0, time.UTC), time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)} {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for i := range 6000 {
					at := base.Add(time.Duration(i/3) * time.Second)
					if i%5 == 4 {
						at = base.Add(time.Duration(r.IntN(90*24*3600)) * time.Second)
					}
					at = at.Add(time.Duration(r.IntN(1e9)))
					if got, want := sched.Next(at), raw.Next(at.In(loc)); !got.Equal(want) {
						t.Errorf("%s: Next(%v) = %v, robfig says %v", spec, at, got, want)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}

// BenchmarkNextOneSpec asks a daily spec's next tick for the same second
// many times, as the jobs of one spec do at a tick: the zoned schedule
// against robfig's alone.
func BenchmarkNextOneSpec(b *testing.B) {
	sched, _, err := parseSpec("0 0 0 * * *", true, time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	raw := sched.(*zoned).Schedule
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	b.Run("zoned", func(b *testing.B) {
		for b.Loop() {
			sched.Next(at)
		}
	})
	b.Run("robfig", func(b *testing.B) {
		for b.Loop() {
			raw.Next(at)
		}
	})
}
