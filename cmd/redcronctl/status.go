package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redcron/redcron/admin"
)

// jobStatus is one job's lock as the nodes hold it.
type jobStatus struct {
	Name string   `json:"name"`
	Spec string   `json:"spec,omitempty"` // from the job table the most replicas publish
	Zone string   `json:"zone,omitempty"`
	Tags []string `json:"tags,omitempty"` // its tags, sorted
	// Limit is its cluster limit and how many of its permits hold now
	// (scheduler.WithClusterLimit), nil for none.
	Limit *limitStatus `json:"limit,omitempty"`
	Next  time.Time    `json:"next,omitzero"` // its next tick
	// Done: a one-time job ("@at t") whose tick ran; it runs no more.
	Done bool `json:"done,omitempty"`
	// PublishedBy is how many live replicas list it in their job table;
	// Phantom: none does (a leftover of a job gone, or one not deployed yet).
	PublishedBy int       `json:"published_by"`
	Phantom     bool      `json:"phantom"`
	PausedOn    int       `json:"paused_on"`         // nodes with its pause key
	Holder      string    `json:"holder,omitempty"`  // the owner holding its lock on the most nodes
	Tick        time.Time `json:"tick,omitzero"`     // the tick that value claims
	HeldOn      int       `json:"held_on,omitempty"` // nodes with that value
	// LastRun is the newest record of its ledger: a run or a missed tick.
	LastRun *historyRun `json:"last_run,omitempty"`
}

// limitStatus is a job's cluster limit.
type limitStatus struct {
	Name    string `json:"name"`
	Permits int    `json:"permits"`
	Held    int    `json:"held"` // permits holding on a quorum of the nodes now
}

// status prints every job's lock, and the replicas with a live heartbeat:
// each one's version, job table, clock offset and last heartbeat. It exits
// 2 when no node could be scanned, naming the nodes that failed.
func (a *cmd) status(ctx context.Context) int {
	stdout := a.stdout
	st, err := a.c.Status(ctx)
	for _, n := range st.Nodes {
		if n.ScanErr != nil {
			fmt.Fprintf(a.stderr, "redcronctl: node not scanned: %s\n", a.hide(n.ScanErr.Error()))
		}
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "redcronctl: no node could be scanned; nothing to report\n")
		return exitError
	}
	jobs := jobsOf(st.Jobs, a.cfg.tag, a.hide)
	nodes := nodeStatuses(st.Nodes, a.hide)
	replicas := replicasOf(st.Replicas, time.Now())
	scanned := 0
	for _, n := range st.Nodes {
		if n.ScanErr == nil {
			scanned++
		}
	}
	if a.cfg.json {
		doc := struct {
			Prefix     string          `json:"prefix"`
			Nodes      int             `json:"nodes"`
			Scanned    int             `json:"scanned"`
			Jobs       []jobStatus     `json:"jobs"`
			Replicas   []string        `json:"replicas"`
			Heartbeats []replicaStatus `json:"heartbeats"` // the replicas, as their heartbeats describe them
			JobTables  int             `json:"job_tables"` // distinct job tables among them
			NodeList   []nodeStatus    `json:"node_list"`  // each node: up, latency, uptime, warming up
		}{st.KeyPrefix, len(st.Nodes), scanned, jobs, liveOwners(st), replicas, st.Tables, nodes}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return exitError
		}
		return exitClean
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "JOB\tSPEC\tTAGS\tNEXT\tPAUSED\tHELD BY\tTICK\tHELD ON\tLAST RUN\n")
	for _, j := range jobs {
		paused, holder, tick, on := "no", "-", "-", "-"
		switch {
		case j.PausedOn >= st.Quorum:
			paused = fmt.Sprintf("yes (%d/%d)", j.PausedOn, len(st.Nodes))
		case j.PausedOn > 0: // not in effect, but those nodes refuse its ticks
			paused = fmt.Sprintf("partial (%d/%d)", j.PausedOn, len(st.Nodes))
		}
		if j.HeldOn > 0 {
			holder, on = printable(j.Holder), fmt.Sprintf("%d/%d", j.HeldOn, len(st.Nodes))
		}
		if !j.Tick.IsZero() {
			tick = j.Tick.UTC().Format(time.RFC3339)
		}
		spec, next := "-", "-"
		switch {
		case j.Spec != "":
			spec = printable(j.Spec)
		case j.Phantom:
			spec = "(no live replica has it)"
		}
		switch {
		case !j.Next.IsZero():
			next = j.Next.UTC().Format(time.RFC3339)
		case j.Done:
			next = "done (ran once)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(j.Name), spec, printable(orDash(strings.Join(j.Tags, ","))), next, paused,
			holder, tick, on, lastRunText(j.LastRun))
	}
	if err := tw.Flush(); err != nil {
		return exitError
	}
	fmt.Fprintf(stdout, "%s under prefix %q on %d/%s; live replicas: %v\n",
		plural(len(jobs), "job", "jobs"), st.KeyPrefix, scanned, plural(len(st.Nodes), "node", "nodes"), liveOwners(st))
	if err := writeReplicas(stdout, replicas, st.CommonTable, st.Tables); err != nil {
		return exitError
	}
	if err := writeNodes(stdout, nodes); err != nil {
		return exitError
	}
	return exitClean
}

// jobsOf returns the jobs as status prints them, each with its last run
// or missed tick: those tagged tag, or all for "".
func jobsOf(jobs []admin.Job, tag string, hide func(string) string) []jobStatus {
	out := make([]jobStatus, 0, len(jobs))
	for _, j := range jobs {
		if tag != "" && !slices.Contains(j.Tags, tag) {
			continue
		}
		js := jobStatus{Name: j.Name, Spec: j.Spec, Zone: j.Zone, Tags: j.Tags, Next: j.Next, PublishedBy: j.Publishers, Phantom: j.Phantom,
			PausedOn: j.PausedOn, Holder: j.Holder, Tick: j.Tick, HeldOn: j.HeldOn, Done: j.Done}
		if j.Limit != "" {
			js.Limit = &limitStatus{Name: j.Limit, Permits: j.Permits, Held: j.PermitsHeld}
		}
		if j.LastRun != nil {
			r := historyRunOf(*j.LastRun, hide)
			js.LastRun = &r
		}
		out = append(out, js)
	}
	return out
}

// lastRunText is a job's last run for the table: its result, replica and
// tick ("manual" for a trigger), or "-".
func lastRunText(r *historyRun) string {
	if r == nil {
		return "-"
	}
	tick := "manual"
	if !r.Tick.IsZero() {
		tick = r.Tick.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s %s on %s", tick, resultText(*r), printable(orDash(r.Replica)))
}
