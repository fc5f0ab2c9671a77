package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/ledger"
)

// Fix deletes every leaked copy of rep (a scan of these nodes) by
// compare-and-delete against the value scanned (see leaks.Scanner.Fix),
// and records the fix in the ledger of each job whose lock or state lost a
// copy (leaks_fixed, by who, with the copies deleted and their classes).
func (c *Cluster) Fix(ctx context.Context, rep *leaks.Report, who string) []leaks.FixResult {
	now := time.Now()
	results := c.Scanner().Fix(ctx, rep)
	type leaked struct {
		job     string
		classes []leaks.Class
	}
	jobCopies := map[string]leaked{} // node and key of a job's leaked copy → its job and classes
	for _, f := range rep.Leaks() {
		if f.Kind == "lock" {
			for _, cp := range f.Copies {
				jobCopies[cp.Node+" "+cp.Key] = leaked{f.Name, cp.Classes}
			}
		}
	}
	deleted := map[string][]string{} // job → what was deleted
	for _, r := range results {
		if l, ok := jobCopies[r.Node+" "+r.Key]; ok && r.Deleted {
			deleted[l.job] = append(deleted[l.job], fmt.Sprintf("lock on %s (%s)", NodeName(r.Node), classNames(l.classes)))
		}
	}
	for job, what := range deleted {
		lk, err := c.Keys.Lock(job)
		if err != nil {
			continue
		}
		slices.Sort(what)
		c.record(ctx, lk, engine.Record{Owner: who, Start: now.UnixMilli(), Result: ledger.ActionLeaksFixed,
			Error: "deleted " + strings.Join(what, ", ")})
	}
	return results
}

// classNames joins the classes' names with "+".
func classNames(cs []leaks.Class) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.String()
	}
	return strings.Join(names, "+")
}
