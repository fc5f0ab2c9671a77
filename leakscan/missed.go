package leakscan

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/ledger"
)

// The missed-tick check looks back this far, and reads this many records
// of each job's ledger.
const (
	missedLookback = time.Hour
	missedRecords  = 1000
)

// missedKeep is the TTL of a ledger that a missed tick's record starts.
const missedKeep = 7 * 24 * time.Hour

// maxSkips bounds the skips a heartbeat carries.
const maxSkips = 64

// WithDue turns on the missed-tick check: in its scan turn, the replica
// compares the ticks due returns (by job, the ticks in [from, to) that no
// replica may claim any more: scheduler.Scheduler.Due) over the last hour
// with each job's ledger, and reports each tick that ran nowhere (see
// Event.Missed), with the reason the replicas' heartbeats give (see
// Skipped), and records it in the ledger. Ticks older than a job's oldest
// record, when it has one, are not judged: the ledger may have dropped
// theirs. The default is no check; redcron.New passes its scheduler's Due.
func WithDue(due func(from, to time.Time) map[string][]time.Time) Option {
	return func(c *config) error {
		if due == nil {
			return fmt.Errorf("%w: WithDue: nil function", ErrInvalidOption)
		}
		c.due = due
		return nil
	}
}

// Skipped records that this replica skipped the tick of job for reason
// (a skip reason of package scheduler), for the missed-tick check: the
// heartbeat carries the replica's last 64 such skips, but for held and
// already_run, which mean that another replica claimed the tick.
// redcron.New calls it from its scheduler's observer.
func (s *Scanner) Skipped(job string, tick time.Time, reason string) {
	if s == nil || reason == "held" || reason == "already_run" || tick.IsZero() {
		return
	}
	s.skips.add(engine.BeatSkip{Job: job, Tick: tick.UnixMilli(), Reason: reason})
}

// skipLog keeps a replica's last skips.
type skipLog struct {
	mu   sync.Mutex
	list []engine.BeatSkip
}

func (l *skipLog) add(b engine.BeatSkip) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.list = append(l.list, b); len(l.list) > maxSkips {
		l.list = append(l.list[:0], l.list[len(l.list)-maxSkips:]...)
	}
}

// recent returns the skips of ticks since from.
func (l *skipLog) recent(from time.Time) []engine.BeatSkip {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []engine.BeatSkip
	for _, b := range l.list {
		if b.Tick >= from.UnixMilli() {
			out = append(out, b)
		}
	}
	return out
}

// checkMissed runs the missed-tick check over the ledgers, with the skips
// the live replicas' heartbeats in rep carry, and returns the ticks newly
// found missed: by job, by reason, how many.
func (s *Scanner) checkMissed(ctx context.Context, rep *leaks.Report) map[string]map[string]int {
	now := s.now()
	skips := map[string]map[int64][]ledger.Skip{} // job → tick → reports
	for owner, b := range rep.Beats {
		for _, sk := range b.Skips {
			if skips[sk.Job] == nil {
				skips[sk.Job] = map[int64][]ledger.Skip{}
			}
			skips[sk.Job][sk.Tick] = append(skips[sk.Job][sk.Tick], ledger.Skip{Replica: owner, Reason: sk.Reason})
		}
	}
	out := map[string]map[string]int{}
	for job, due := range s.cfg.due(now.Add(-missedLookback), now) {
		lk, err := s.keys.Lock(job)
		if err != nil {
			continue
		}
		runs, errs := ledger.Read(ctx, s.nodes, lk, missedRecords)
		if read := countNil(errs); read < s.quorum {
			s.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "missed-tick check: too few ledgers read",
				slog.String("job", job), slog.Int("nodes", read))
			continue
		}
		for _, m := range ledger.Missed(due, runs, true, skips[job]) {
			s.recordMissed(ctx, lk, m)
			if out[job] == nil {
				out[job] = map[string]int{}
			}
			out[job][m.Result]++
		}
	}
	return out
}

// recordMissed adds the missed tick m to the job's ledger on every node,
// and logs it.
func (s *Scanner) recordMissed(ctx context.Context, lk engine.LockKeys, m engine.Record) {
	var wg sync.WaitGroup
	for _, n := range s.nodes {
		wg.Go(func() { _ = n.AddMissed(ctx, lk, m, missedKeep) })
	}
	wg.Wait()
	s.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "missed tick: it ran on no replica", slog.String("job", lk.Name),
		slog.Time("tick", time.UnixMilli(m.Tick)), slog.String("reason", m.Result), slog.String("reports", m.Error))
}

// countNil returns how many of errs are nil.
func countNil(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}
