package leakscan

import (
	"context"
	"log/slog"

	"github.com/redcron/redcron/internal/leaks"
)

// jobTables returns how many distinct job tables the live replicas of rep
// publish, and logs a warning naming the replicas and their digests when
// there are more than one.
func (s *Scanner) jobTables(ctx context.Context, rep *leaks.Report) int {
	tables := rep.JobTables()
	if len(tables) > 1 {
		var replicas []any
		for _, owner := range rep.Live { // sorted
			if d := rep.Beats[owner].JobTable; d != "" {
				replicas = append(replicas, slog.String(owner, d))
			}
		}
		s.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "replicas' job tables differ",
			slog.Int("job_tables", len(tables)), slog.Group("replicas", replicas...))
	}
	return len(tables)
}
