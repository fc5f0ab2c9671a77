package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/scheduler"
)

// BenchmarkAdd100k registers 100,000 jobs on one spec, as a rush of
// per-tenant jobs does.
func BenchmarkAdd100k(b *testing.B) {
	for b.Loop() {
		s, err := scheduler.New(schedulertest.NewLocker(), scheduler.WithSeconds())
		if err != nil {
			b.Fatal(err)
		}
		for i := range 100000 {
			if err := s.Add(fmt.Sprintf("job-%d", i), "0 0 0 * * *", func(context.Context, scheduler.RunInfo) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	}
}
