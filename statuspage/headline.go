package statuspage

import (
	"fmt"
	"html/template"
	"slices"
	"time"

	"github.com/redcron/redcron/internal/cluster"
)

// The states of the headline, over everything on the main page: it
// answers "is it running?" first.
const (
	stateHealthy    = "healthy"     // a quorum votes, and nothing below is wrong
	stateDegraded   = "degraded"    // jobs run, but something is wrong: named
	stateNotRunning = "not_running" // no quorum of voting nodes: no tick can run
	stateUnknown    = "unknown"     // no node could be read: nothing is known
)

// maxOffset is how far a replica's clock may be off the nodes' before it
// claims no tick.
const maxOffset = 2 * time.Second

// headline is the page's answer to "is it running?": a state, a title, a
// sentence, and what is wrong, one line each.
type headline struct {
	State   string
	Title   string
	Summary string
	Items   []template.HTML // escaped: names in them are the fleet's
}

// judge returns the headline of the main page's view v.
func judge(v *mainView) headline {
	var voting int
	var out []nodeView // the nodes that do not vote
	for _, n := range v.Nodes {
		if n.State == cluster.NodeUp {
			voting++
		} else {
			out = append(out, n)
		}
	}
	if !v.Known {
		return headline{State: stateUnknown, Title: "Unknown",
			Summary: fmt.Sprintf("No node could be read from here: whether jobs run cannot be told. "+
				"If no replica reaches %d of the %d nodes, none runs.", v.Quorum, len(v.Nodes)),
			Items: nodeItems(out)}
	}
	if voting < v.Quorum {
		h := headline{State: stateNotRunning, Title: "Not running",
			Summary: fmt.Sprintf("No quorum: %d of the %d nodes %s, %d needed. No tick of any job can run.",
				voting, len(v.Nodes), plural(voting, "votes", "vote"), v.Quorum)}
		h.Items = append(sinceItems(v, voting, out), nodeItems(out)...)
		return h
	}
	items := nodeItems(out)
	for _, n := range v.Unread {
		if !slices.ContainsFunc(out, func(o nodeView) bool { return o.Name == n }) {
			items = append(items, item("Node %s answers but could not be scanned (see Nodes).", n))
		}
	}
	items = append(items, replicaItems(v)...)
	items = append(items, jobItems(v)...)
	if len(items) == 0 {
		return headline{State: stateHealthy, Title: "Healthy",
			Summary: fmt.Sprintf("All %d nodes vote; %s live; %s, none paused; no missed tick recorded in the last hour.",
				len(v.Nodes), count(len(v.Replicas), "replica", "replicas"), count(len(v.Jobs), "job", "jobs"))}
	}
	return headline{State: stateDegraded, Title: "Degraded",
		Summary: fmt.Sprintf("Jobs can run (%d of %d nodes vote, %d needed), but:", voting, len(v.Nodes), v.Quorum),
		Items:   items}
}

// nodeItems says, for each node that does not vote, why.
func nodeItems(out []nodeView) []template.HTML {
	var items []template.HTML
	for _, n := range out {
		switch n.State {
		case cluster.NodeWarming:
			s := item("Node %s is warming up", n.Name)
			if !n.Started.IsZero() {
				s += item(" (its server started %s)", clock(n.Started))
			}
			if n.VotesAt.IsZero() {
				items = append(items, s+": when it votes cannot be told.")
			} else {
				items = append(items, s+item(": it votes from %s.", clock(n.VotesAt)))
			}
		case cluster.NodeRefused:
			items = append(items, item("Node %s refuses us (see Nodes).", n.Name))
		case cluster.NodeDown:
			items = append(items, item("Node %s is down.", n.Name))
		default:
			items = append(items, item("Node %s: %s.", n.Name, n.State))
		}
	}
	return items
}

// sinceItems says, of a fleet without quorum, since when as far as the
// nodes tell, and when it runs again if the warming nodes alone keep it
// from voting. Warming nodes tell when their servers started; down nodes
// tell nothing, but the newest run the nodes hold came before, and the
// ticks the replicas report skipped for want of a quorum after.
func sinceItems(v *mainView, voting int, out []nodeView) []template.HTML {
	var starts, votes []time.Time
	for _, n := range out {
		if n.State == cluster.NodeWarming && !n.Started.IsZero() && !n.VotesAt.IsZero() {
			starts, votes = append(starts, n.Started), append(votes, n.VotesAt)
		}
	}
	slices.SortFunc(starts, time.Time.Compare)
	slices.SortFunc(votes, time.Time.Compare)
	lost := len(v.Nodes) - v.Quorum + 1 // the nodes out of the vote that take the quorum away
	if len(starts) == len(out) && len(starts) >= lost {
		more := v.Quorum - voting
		return []template.HTML{
			item("Since about %s: by then the servers of %d of the %d nodes had started anew, and a node votes only a while after its server starts.",
				clock(starts[lost-1]), lost, len(v.Nodes)),
			item("It runs again from about %s, when %d more %s.", clock(votes[more-1]), more, plural(more, "node votes", "nodes vote")),
			lastRunItem(v),
		}
	}
	var skipped time.Time // the first tick skipped for want of a quorum after the newest run
	for _, sk := range v.Skips {
		if sk.Reason == "no_quorum" && sk.Tick.After(v.LastRun) && (skipped.IsZero() || sk.Tick.Before(skipped)) {
			skipped = sk.Tick
		}
	}
	after := item("after %s (the %s: %s)", clock(v.LastRun), newest(v), v.LastRunJob)
	by := item("by %s (the first tick after it the replicas report skipped for want of a quorum)", clock(skipped))
	switch {
	case !v.LastRun.IsZero() && !skipped.IsZero():
		return []template.HTML{item("Since: %s, %s.", after, by)}
	case !skipped.IsZero():
		return []template.HTML{item("Since: by %s (the first tick the replicas report skipped for want of a quorum), at the latest; %s.",
			clock(skipped), noRun(v))}
	case !v.LastRun.IsZero():
		return []template.HTML{item("Since: %s; a node down does not say when it went down.", after)}
	}
	return []template.HTML{item("Since: unknown (a node down does not say when it went down, and %s).", noRun(v))}
}

// lastRunItem names the newest run the nodes hold.
func lastRunItem(v *mainView) template.HTML {
	if v.LastRun.IsZero() {
		if v.Partial {
			return "No run of the jobs shown is recorded on the nodes read."
		}
		return "No run is recorded on the nodes read."
	}
	return item("The %s: %s at %s.", newest(v), v.LastRunJob, clock(v.LastRun))
}

// noRun says that no run was read: the nodes read hold none, or none of
// the jobs shown.
func noRun(v *mainView) string {
	if v.Partial {
		return "the nodes read hold no run of the jobs shown"
	}
	return "the nodes read hold no run"
}

// newest says what LastRun is: the newest run the nodes hold, or of the
// jobs shown when the page read theirs alone.
func newest(v *mainView) string {
	if v.Partial {
		return "newest run of the jobs shown"
	}
	return "newest run the nodes hold"
}

// replicaItems says what is wrong with the live replicas.
func replicaItems(v *mainView) []template.HTML {
	if len(v.Replicas) == 0 {
		return []template.HTML{"No live replica: no heartbeat on the nodes read, so no job runs."}
	}
	var items []template.HTML
	for _, r := range v.Replicas {
		if r.OffsetKnown && (r.Offset > maxOffset || r.Offset < -maxOffset) {
			items = append(items, item("Replica %s's clock is %s off the nodes': it claims no tick.", short(r.Instance), dur(abs(r.Offset))))
		}
		if r.Differs {
			items = append(items, item("Replica %s runs another job table than most (see Replicas).", short(r.Instance)))
		}
	}
	return items
}

// jobItems names the jobs paused and those with ticks missed in the last
// hour, each kind up to maxJobItems, saying how many more there are.
func jobItems(v *mainView) []template.HTML {
	var items []template.HTML
	paused, missed := 0, 0
	for _, j := range v.Jobs {
		if j.PausedOn > 0 {
			if paused++; paused > maxJobItems {
				continue
			}
		}
		switch {
		case j.PausedOn >= v.Quorum:
			items = append(items, item("Job %s is paused (%d of %d nodes).", j.Name, j.PausedOn, len(v.Nodes)))
		case j.PausedOn > 0:
			items = append(items, item("Job %s is paused on %d of %d nodes only: not in effect, but those nodes do not vote for it.",
				j.Name, j.PausedOn, len(v.Nodes)))
		}
	}
	if paused > maxJobItems {
		items = append(items, item("And %d more %s paused, on some nodes or all (see Jobs).", paused-maxJobItems, plural(paused-maxJobItems, "job", "jobs")))
	}
	for _, j := range v.Jobs {
		if j.Missed > 0 {
			if missed++; missed <= maxJobItems {
				items = append(items, item("Job %s missed %s in the last hour.", j.Name, count(j.Missed, "tick", "ticks")))
			}
		}
	}
	if missed > maxJobItems {
		items = append(items, item("And %d more %s missed ticks in the last hour (see Jobs).", missed-maxJobItems, plural(missed-maxJobItems, "job", "jobs")))
	}
	return items
}

// maxJobItems bounds the jobs the headline names paused, and those it
// names with missed ticks: the headline stays short in a fleet of many.
const maxJobItems = 10

// item formats an item of the headline: a string argument is escaped, an
// HTML one (a short name) kept.
func item(format string, args ...any) template.HTML {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = template.HTMLEscapeString(s)
		}
	}
	return template.HTML(fmt.Sprintf(format, args...))
}

// count returns n with its noun: "1 node", "2 nodes".
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

// plural returns one for 1, many for any other number.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
