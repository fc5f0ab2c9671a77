package statuspage

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/cluster"
)

// The states of a ledger record (admin.Record.State) the page tells apart.
const (
	stateStarted  = "started"
	stateLost     = "lost"
	stateMissed   = "missed"
	stateOperator = "operator"
)

// mainView is what the main page shows.
type mainView struct {
	Now      time.Time
	Prefix   string
	Quorum   int
	Known    bool      // some node was read: else nothing below but the nodes is known
	Headline headline  // is it running?
	Jobs     []jobView // the jobs this replica runs or a live replica publishes
	Shown    []jobView // the page of them shown, of those that match the search
	Pager    pager     // where Shown stands
	// Unpublished are the names the nodes know (a ledger, a pause key, a
	// lock) that no live replica publishes: no jobs of the fleet's.
	Unpublished []jobView
	More        int      // the names of Unpublished that match the search but are not listed (past maxUnpublished)
	Unknown     []string // live replicas whose job table is not known: their jobs may be among Unpublished
	Skips       []skipView
	LastRun     time.Time // the newest run the nodes hold (of the jobs read: withRuns), and its job
	LastRunJob  string
	Recent      []runView // the newest runs and missed ticks over the jobs read
	// Partial is set when the runs were read of some of the jobs alone:
	// those shown. LastRun is the newest of theirs.
	Partial  bool
	Nodes    []nodeView
	Replicas []replicaView
	Tables   int // distinct job tables among the replicas
	Leaks    []leakView
	Counts   []classCount
	Leaked   int      // leaked findings
	Unread   []string // nodes not scanned: the scan counts them as holding every lock
	Err      string   // no node could be read
}

// jobView is one job's row.
type jobView struct {
	Name, Link string
	Local      bool // on this replica: Spec, Zone, Next and Running are its
	Spec, Zone string
	Tags       []string // its tags (scheduler.WithTags)
	Limit      string   // its cluster limit and the permits held: "reports 1/2", or ""
	Next       time.Time
	Done       bool // a one-time job whose tick ran (ledger.OnceRan): it runs no more
	Running    bool
	Paused     string // "", or "paused 3/3", "partial 1/3"
	PausedOn   int
	Missed     int // ticks recorded missed in the last hour
	Holder     string
	HeldTick   time.Time
	HeldOn     int
	Last       *runView
}

// runView is one record of a ledger: a run, a missed tick or an
// operator's action.
type runView struct {
	Job, Link string
	Kind      string    // run, missed or operator
	At        time.Time // the tick, or a manual run's or an action's start
	Manual    bool      // a run without a tick: a trigger's
	Result    string
	Tone      string // ok, bad, warn or info: the result's colour
	Replica   string // the operator, for an action
	Delay     time.Duration
	Duration  time.Duration
	Ended     bool // a run that ended: its duration is known
	Fence     uint64
	Error     string
	Nodes     int
}

// nodeView is one node's row.
type nodeView struct {
	Name, State string
	Restarted   bool
	Latency     time.Duration
	Uptime      time.Duration
	Known       bool // Uptime is known (INFO answered)
	Answered    bool // Latency is known
	LastErr     string
	LastErrAt   time.Time
	// Started is when its server started, and VotesAt when it votes, for
	// a node warming up; zero when not known.
	Started, VotesAt time.Time
}

// skipView is a tick replicas skipped, for one reason.
type skipView struct {
	Job, Link string
	Tick      time.Time
	Reason    string
	Replicas  []string
}

// replicaView is one replica's row.
type replicaView struct {
	Instance, Version, JobTable string
	Differs                     bool
	Offset                      time.Duration
	OffsetKnown                 bool
	Sent, Started               time.Time
}

// leakView is one leaked lock.
type leakView struct {
	Name, Kind, Classes string
	Nodes               []string
}

// classCount is the number of leaks of one class.
type classCount struct {
	Class string
	N     int
}

// mainOf returns the main page's view of st; err is its scan's (no node
// could be read).
func (p *statusPage) mainOf(st *snapshot, err error) mainView {
	v := mainView{Now: time.Now(), Prefix: st.KeyPrefix, Quorum: st.Quorum, Known: err == nil}
	if err != nil {
		v.Err = p.hide(err.Error())
	}
	for _, n := range st.Nodes {
		if n.ScanErr != nil {
			v.Unread = append(v.Unread, cluster.NodeName(n.Name))
		}
	}
	slices.Sort(v.Unread)
	v.Jobs, v.Unpublished = p.jobsOf(st)
	v.Unknown = st.Unknown
	v.Skips = skipsOf(st)
	v.Nodes = p.nodesOf(st)
	for _, r := range st.Replicas {
		v.Replicas = append(v.Replicas, replicaView{Instance: r.Instance, Version: r.Version, JobTable: r.JobTable,
			Differs: r.TableDiffers, Offset: r.Offset, OffsetKnown: r.OffsetKnown, Sent: r.Sent, Started: r.Started})
	}
	v.Tables = st.Tables
	if v.Known {
		v.Leaks, v.Counts, v.Leaked = leaksOf(st.Leaks)
	}
	v.Headline = judge(&v)
	return v
}

// runOf returns a ledger record's row; its error text goes through hide
// (a job's error may carry a connection string).
func runOf(job string, r admin.Record, hide func(string) string) runView {
	v := runView{Job: job, Link: jobLink(job), Kind: "run", At: r.Tick, Result: r.Result, Replica: r.Owner,
		Delay: r.Delay, Fence: r.Fence, Error: hide(r.Error), Nodes: r.Nodes}
	if r.Tick.IsZero() {
		v.At, v.Manual = r.Start, true
	}
	began := r.Start
	if !r.Tick.IsZero() {
		began = r.Tick.Add(r.Delay)
	}
	if v.Ended = !r.End.Before(began) && !began.IsZero() && !r.End.IsZero(); v.Ended {
		v.Duration = r.End.Sub(began)
	}
	switch r.State {
	case stateMissed:
		v.Kind, v.Result, v.Tone = "missed", "missed: "+r.Result, "bad"
	case stateOperator:
		v.Kind, v.Manual, v.Tone = "operator", false, "info"
	case stateLost:
		v.Result, v.Tone = "lock_lost", "bad"
	case stateStarted:
		v.Result, v.Tone = "running", "info"
	default:
		v.Tone = "bad"
		if r.Result == "success" {
			v.Tone = "ok"
		}
	}
	return v
}

// nodesOf returns the nodes' rows: their state as the scan read it (a
// node the Redlock saw warming up is warming up: its server changed; one
// it saw up is not, if it has never seen one warming up: it trusts its
// nodes), and their last errors.
func (p *statusPage) nodesOf(st *snapshot) []nodeView {
	out := make([]nodeView, 0, len(st.Nodes))
	for _, n := range st.Nodes {
		v := nodeView{Name: cluster.NodeName(n.Name), State: n.State, Latency: n.Latency, Uptime: n.Uptime, Known: n.Err == nil,
			Answered: n.Latency > 0}
		switch seen := st.Seen[n.Name]; {
		case v.State == cluster.NodeUp && seen == cluster.NodeWarming:
			v.State = cluster.NodeWarming
		case v.State == cluster.NodeWarming && seen == cluster.NodeUp && !p.untrusted.Load():
			v.State = cluster.NodeUp
		}
		// Uptime is in whole seconds, as of the scan: the server started
		// up to 1 s before the scan's end less its uptime.
		v.Restarted = v.Known && st.At.Add(-n.Uptime-time.Second).After(p.started) && n.Uptime < time.Hour
		if v.State == cluster.NodeWarming && v.Known {
			// As the Redlock counts it: from its server's start by its
			// uptime, after the max TTL and a second for the uptime's
			// whole seconds; rounded up to a second, as the page shows it.
			v.Started = st.At.Add(-n.Uptime)
			v.VotesAt = v.Started.Add(p.maxTTL + 2*time.Second - 1).Truncate(time.Second)
		}
		e := p.lastError(n.Name)
		v.LastErr, v.LastErrAt = e.text, e.at
		out = append(out, v)
	}
	return out
}

// leaksOf returns the leaked locks of the scan (admin.Status.Leaks: each
// copy of a name with a leaked one, by name), the counts by class and the
// number of leaks.
func leaksOf(copies []admin.Leak) ([]leakView, []classCount, int) {
	var out []leakView
	var classes [][]string // of each leak, its copies' classes
	at := map[[2]string]int{}
	for _, l := range copies {
		id := [2]string{l.Name, l.Kind}
		i, ok := at[id]
		if !ok {
			i, at[id] = len(out), len(out)
			out, classes = append(out, leakView{Name: l.Name, Kind: l.Kind}), append(classes, nil)
		}
		out[i].Nodes = append(out[i].Nodes, cluster.NodeName(l.Node))
		classes[i] = append(classes[i], l.Classes...)
	}
	n := map[string]int{}
	for i := range out {
		var names []string
		for _, c := range classNames() {
			if slices.Contains(classes[i], c) {
				names = append(names, c)
				n[c]++
			}
		}
		out[i].Classes = strings.Join(names, ", ")
	}
	var counts []classCount
	for _, c := range classNames() {
		counts = append(counts, classCount{c, n[c]})
	}
	return out, counts, len(out)
}

// classNames returns the classes of leaks, in the order the page lists
// them.
func classNames() [5]string {
	return [...]string{"no_expiry", "orphaned", "minority", "over_age", "unparseable"}
}

// jobLink returns the relative link from the main page to a job's page.
func jobLink(name string) string {
	return "job/" + escapeName(name)
}

// escapeName escapes a job name as one path segment: "." and ".." too,
// and ":" (a name such as "http:foo" must not read as a URL's scheme).
func escapeName(name string) string {
	s := strings.ReplaceAll(url.PathEscape(name), ":", "%3A")
	if strings.Trim(s, ".") == "" {
		s = strings.ReplaceAll(s, ".", "%2E")
	}
	return s
}
