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

// Missed returns the ticks of due that ran nowhere by the job's history
// runs (newest first, as Read returns it) and are not yet recorded as
// missed, as the records the missed-tick check adds to the ledger: each
// with its tick, its reason in Result (the reason most replicas reported,
// or NoReport) and every replica's report in Error. With full, the
// history may have been trimmed by the ledger's cap, so ticks older than
// its oldest record are not judged. skips are the replicas' reports, by
// tick in unix ms.
func Missed(due []time.Time, runs []Run, full bool, skips map[int64][]Skip) []engine.Record {
	covered := make(map[int64]bool, len(runs))
	oldest := int64(0)
	for _, r := range runs {
		if r.Tick != 0 {
			covered[r.Tick] = true
			if oldest == 0 || r.Tick < oldest {
				oldest = r.Tick
			}
		}
	}
	var out []engine.Record
	for _, t := range due {
		ms := t.UnixMilli()
		if covered[ms] || full && ms < oldest {
			continue
		}
		reason, detail := reasonOf(skips[ms])
		out = append(out, engine.Record{Tick: ms, Result: reason, Error: detail})
	}
	return out
}

// reasonOf returns the reason most of the reports give (the first by name
// among equals), and every report as "replica: reason", by replica.
func reasonOf(reports []Skip) (string, string) {
	if len(reports) == 0 {
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
