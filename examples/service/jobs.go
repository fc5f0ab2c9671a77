package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// addJobs registers the example jobs: a report written with its fencing
// token, so that a run whose lease ended while it was paused cannot
// overwrite a newer one; and a slow, cooperative batch job.
func addJobs(s *redcron.Scheduler, data redis.Scripter, cfg config, log *slog.Logger) error {
	reportSpec, batchSpec := "*/5 * * * *", "0 * * * *"
	if cfg.fast {
		reportSpec, batchSpec = "* * * * * *", "*/2 * * * * *"
	}
	report := scheduler.JobFunc(func(ctx context.Context, run scheduler.RunInfo) error {
		body := fmt.Sprintf("report for %s by %s", run.Tick.Format(time.RFC3339), run.Instance)
		ok, err := store.FencedSet(ctx, data, "example:report", run.Fence, body)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("report for %s: a newer run wrote first (fence %d)", run.Tick.Format(time.RFC3339), run.Fence)
		}
		return nil
	})
	if err := s.Add("report", reportSpec, report, scheduler.WithLockTTL(10*time.Second)); err != nil {
		return err
	}
	batch := scheduler.JobFunc(func(ctx context.Context, run scheduler.RunInfo) error {
		for step := range 10 { // ten steps of work, stopping between steps when told to
			select {
			case <-ctx.Done():
				log.Info("batch stopped", slog.Int("step", step), slog.Any("cause", context.Cause(ctx)))
				return context.Cause(ctx)
			case <-time.After(300 * time.Millisecond):
			}
		}
		return nil
	})
	return s.Add("batch", batchSpec, batch, scheduler.WithLockTTL(10*time.Second))
}
