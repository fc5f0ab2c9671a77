package leakscan

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redcron/redcron/internal/duehook"
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

// checkMissed runs the missed-tick check over the ledgers for the ticks h
// says are due, with the skips the live replicas' heartbeats in rep carry,
// and returns the ticks newly
// found missed: by job, by reason, how many. It looks back an hour, or the
// ledger's window if shorter, and not at all without a ledger. It reads
// the nodes the scan could read, and judges a tick only by the nodes whose
// server ran, without a restart, from before the tick's earliest commit
// until after the reads (see ledger.Missed).
func (s *Scanner) checkMissed(ctx context.Context, rep *leaks.Report, h *duehook.Hook) map[string]map[string]int {
	capacity, window := s.r.LedgerRecords, s.r.LedgerWindow
	nodes := rep.Readable(s.nodes)
	if capacity == 0 || len(nodes) < s.quorum {
		return nil
	}
	now := s.now()
	before := nodeInfos(ctx, nodes)
	skips := skipsOf(rep)
	dues := h.Due(now.Add(-min(missedLookback, window)), now)
	jobs, shards := s.readShards(ctx, nodes, dues)
	since := s.witnessSince(now, before, nodeInfos(ctx, nodes))
	out := map[string]map[string]int{}
	for _, lk := range jobs {
		sh := shards[lk.Ledger]
		var copies []ledger.Copy
		for i := range nodes {
			if sh.errs[i] != nil || since[i] < 0 {
				continue
			}
			// The shard's ledger keeps its newest records, of all its jobs:
			// it proves nothing at or below the highest score it dropped.
			copies = append(copies, ledger.Copy{Entries: sh.byJob[i][lk.Name], Since: max(since[i], sh.dropped[i]+1)})
		}
		fallback := ""
		if rep.Paused[lk.Name] >= s.quorum {
			fallback = "paused"
		}
		for _, m := range ledger.Missed(dues[lk.Name], copies, len(s.nodes), s.quorum, skips[lk.Name], fallback) {
			if !s.recordMissed(ctx, nodes, lk, m, capacity, window) {
				continue // counted by a later check, once recorded
			}
			if out[lk.Name] == nil {
				out[lk.Name] = map[string]int{}
			}
			out[lk.Name][m.Result]++
		}
	}
	return out
}

// shardCopies is one shard's ledger as each node holds it, by job, with
// the highest score each copy dropped to keep its size, and each node's
// error.
type shardCopies struct {
	byJob   []map[string][]engine.Entry
	dropped []int64
	errs    []error
}

// readShards returns the keys of the jobs of dues, and the ledgers of
// their shards, each read once from each node for all its jobs.
func (s *Scanner) readShards(ctx context.Context, nodes []*engine.Node, dues map[string][]time.Time) ([]engine.LockKeys, map[string]*shardCopies) {
	shards := map[string]*shardCopies{}
	var jobs []engine.LockKeys
	for job := range dues {
		lk, err := s.keys.Lock(job)
		if err != nil {
			continue
		}
		jobs = append(jobs, lk)
		if shards[lk.Ledger] != nil {
			continue
		}
		sh := &shardCopies{byJob: make([]map[string][]engine.Entry, len(nodes)), dropped: make([]int64, len(nodes))}
		sh.errs = engine.OnEach(nodes, func(i int, n *engine.Node) (err error) {
			sh.byJob[i], sh.dropped[i], err = n.ShardLedger(ctx, lk)
			return err
		})
		shards[lk.Ledger] = sh
	}
	return jobs, shards
}

// witnessSince returns, for each node, the first tick (unix ms) its copies
// of the ledgers can vouch for, by its server's run id and uptime read
// before and after the reads; -1 for a node whose server changed or did
// not answer. A node's copy holds every record written since its server
// started. A tick's commit may come a lead (at most the max TTL) before
// it, and the clocks of the replicas and of this one differ by up to a
// skew each (2 s), with the uptime in whole seconds: the margin covers
// them.
func (s *Scanner) witnessSince(now time.Time, before, after []engine.Info) []int64 {
	margin := s.r.MaxTTL + 5*time.Second
	since := make([]int64, len(before))
	for i := range before {
		since[i] = -1
		if before[i].RunID != "" && before[i].RunID == after[i].RunID {
			since[i] = now.Add(-before[i].Uptime).Add(margin).UnixMilli()
		}
	}
	return since
}

// nodeInfos returns each node's run id and uptime, in parallel; a zero
// Info for a node that did not answer.
func nodeInfos(ctx context.Context, nodes []*engine.Node) []engine.Info {
	infos := make([]engine.Info, len(nodes))
	engine.OnEach(nodes, func(i int, n *engine.Node) (err error) {
		infos[i], err = n.Info(ctx)
		return err
	})
	return infos
}

// skipsOf returns the skips the live replicas' heartbeats in rep carry, by
// job and tick.
func skipsOf(rep *leaks.Report) map[string]map[int64][]ledger.Skip {
	skips := map[string]map[int64][]ledger.Skip{}
	for owner, b := range rep.Beats {
		for _, sk := range b.Skips {
			if skips[sk.Job] == nil {
				skips[sk.Job] = map[int64][]ledger.Skip{}
			}
			skips[sk.Job][sk.Tick] = append(skips[sk.Job][sk.Tick], ledger.Skip{Replica: owner, Reason: sk.Reason})
		}
	}
	return skips
}

// recordMissed adds the missed tick m to the job's ledger on every node,
// and logs it, if it was written on a quorum of them; it reports whether
// it was.
func (s *Scanner) recordMissed(ctx context.Context, nodes []*engine.Node, lk engine.LockKeys, m engine.Record, capacity int, window time.Duration) bool {
	errs := engine.OnEach(nodes, func(_ int, n *engine.Node) error { return n.AddMissed(ctx, lk, m, capacity, window) })
	if engine.Answered(errs) < s.quorum {
		s.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "missed-tick check: the record reached too few nodes",
			slog.String("job", lk.Name), slog.Time("tick", time.UnixMilli(m.Tick)), slog.Any("error", errors.Join(errs...)))
		return false
	}
	s.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "missed tick: it ran on no replica", slog.String("job", lk.Name),
		slog.Time("tick", time.UnixMilli(m.Tick)), slog.String("reason", m.Result), slog.String("reports", m.Error))
	return true
}
