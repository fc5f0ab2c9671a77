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

// Copy is one node's copy of a job's ledger, with what it can prove: the
// node holds every record written since Since (unix ms: its server's
// start plus a margin, or the oldest record of a copy as full as the
// ledger keeps), and none of those before.
type Copy struct {
	Entries []engine.Entry
	Since   int64
}

// Missed returns the ticks of due that the copies prove ran nowhere and
// that are not yet recorded as missed, as the records the missed-tick
// check adds to the ledger: each with its tick, its reason in Result (the
// reason most replicas reported; otherwise, fallback) and every replica's
// report in Error.
//
// A run's commit writes its record on a quorum of the nodes, so a tick
// that ran has a record on at least one node of any nodes-quorum+1 of
// them. A tick is judged only when that many copies hold every record
// written since before it (a node that restarted since, or was not read,
// proves nothing), and is missed when none of the copies read has a
// record of it that could be a run: a record with a run id, a started
// record (running, or its replica died; on any node, however few) or a
// missed record. A lease no run used (a final record without a run id)
// does not count as a run. skips are the replicas' reports, by tick in
// unix ms.
func Missed(due []time.Time, copies []Copy, nodes, quorum int, skips map[int64][]Skip, fallback string) []engine.Record {
	covered := map[int64]bool{}
	for _, c := range copies {
		for _, e := range c.Entries {
			r := e.Record
			if r.Tick != 0 && (r.Run != "" || e.State == engine.RecordMissed || e.State == engine.RecordStarted) {
				covered[r.Tick] = true
			}
		}
	}
	need := nodes - quorum + 1
	var out []engine.Record
	for _, t := range due {
		ms := t.UnixMilli()
		if covered[ms] {
			continue
		}
		witnesses := 0
		for _, c := range copies {
			if c.Since < ms {
				witnesses++
			}
		}
		if witnesses < need {
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
