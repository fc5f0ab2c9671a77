package ledger

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// Skip is a replica's report of a tick it did not run, and why (a skip
// reason of the scheduler: paused, overlap, no_quorum...).
type Skip struct {
	Replica string
	Reason  string
}

// NoReport is the reason of a missed tick that no live replica reported
// skipping: its replicas were down, or stopped before they could say.
const NoReport = "no_report"

// Missed returns the ticks of due after horizon (see Horizon) that ran
// nowhere by the job's history runs (as Merge returns it) and are not yet
// recorded as missed, as the records the missed-tick check adds to the
// ledger: each with its tick, its reason in Result (the reason most
// replicas reported; otherwise, fallback) and every replica's report in
// Error. A tick ran when a run used its lease (a record with a run id), or
// when its acquisition committed on a quorum of nodes (a started record
// there: running, or its replica died); a lease no run used does not
// count, nor does the leftover of a commit that failed. skips are the
// replicas' reports, by tick in unix ms.
func Missed(due []time.Time, runs []Run, horizon int64, quorum int, skips map[int64][]Skip, fallback string) []engine.Record {
	covered := make(map[int64]bool, len(runs))
	for _, r := range runs {
		if r.Tick != 0 && (r.Run != "" || r.State == StateMissed || r.State == StateStarted && r.Nodes >= quorum) {
			covered[r.Tick] = true
		}
	}
	var out []engine.Record
	for _, t := range due {
		ms := t.UnixMilli()
		if covered[ms] || ms <= horizon {
			continue
		}
		reason, detail := reasonOf(skips[ms], fallback)
		out = append(out, engine.Record{Tick: ms, Result: reason, Error: detail})
	}
	return out
}

// reasonOf returns the reason most of the reports give (the first by name
// among equals), and every report as "replica: reason", by replica; with
// none, fallback (or NoReport).
func reasonOf(reports []Skip, fallback string) (string, string) {
	if len(reports) == 0 {
		if fallback != "" {
			return fallback, "no live replica reported skipping it"
		}
		return NoReport, "no live replica reported skipping it"
	}
	reports = slices.Clone(reports)
	slices.SortFunc(reports, func(a, b Skip) int { return cmp.Compare(a.Replica, b.Replica) })
	votes := map[string]int{}
	parts := make([]string, len(reports))
	for i, s := range reports {
		votes[s.Reason]++
		parts[i] = s.Replica + ": " + s.Reason
	}
	best := ""
	for r, n := range votes {
		if best == "" || n > votes[best] || n == votes[best] && r < best {
			best = r
		}
	}
	return best, strings.Join(parts, ", ")
}
