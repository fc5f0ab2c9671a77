package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/ledger"
)

// jobStatus is one job's lock as the nodes hold it.
type jobStatus struct {
	Name     string    `json:"name"`
	PausedOn int       `json:"paused_on"`         // nodes with its pause key
	Holder   string    `json:"holder,omitempty"`  // the owner holding its lock on the most nodes
	Tick     time.Time `json:"tick,omitzero"`     // the tick that value claims
	HeldOn   int       `json:"held_on,omitempty"` // nodes with that value
	// LastRun is the newest record of its ledger: a run or a missed tick.
	LastRun *historyRun `json:"last_run,omitempty"`
}

// status prints every job's lock, and the replicas with a live heartbeat:
// each one's version, job table, clock offset and last heartbeat. It exits
// 2 when no node could be scanned, naming the nodes that failed.
func status(ctx context.Context, cfg *config, scanner *leaks.Scanner, stdout, stderr io.Writer, hide func(string) string) int {
	rep, err := scanner.Scan(ctx)
	for _, e := range rep.Errors {
		fmt.Fprintf(stderr, "redcronctl: node not scanned: %s\n", hide(e.Error()))
	}
	if err != nil {
		fmt.Fprintf(stderr, "redcronctl: no node could be scanned; nothing to report\n")
		return exitError
	}
	jobs := jobsOf(rep)
	lastRuns(ctx, scanner, jobs)
	nodes := nodeStatuses(ctx, scanner.Nodes, hide)
	replicas, common, tables := replicasOf(rep, time.Now())
	if cfg.json {
		doc := struct {
			Prefix     string          `json:"prefix"`
			Nodes      int             `json:"nodes"`
			Scanned    int             `json:"scanned"`
			Jobs       []jobStatus     `json:"jobs"`
			Replicas   []string        `json:"replicas"`
			Heartbeats []replicaStatus `json:"heartbeats"` // the replicas, as their heartbeats describe them
			JobTables  int             `json:"job_tables"` // distinct job tables among them
			NodeList   []nodeStatus    `json:"node_list"`  // each node: up, latency, uptime, warming up
		}{rep.Prefix, rep.Nodes, rep.Nodes - len(rep.Errors), jobs, append([]string{}, rep.Live...), replicas, tables, nodes}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return exitError
		}
		return exitClean
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "JOB\tPAUSED\tHELD BY\tTICK\tHELD ON\tLAST RUN\n")
	for _, j := range jobs {
		paused, holder, tick, on := "no", "-", "-", "-"
		switch {
		case j.PausedOn >= rep.Quorum:
			paused = fmt.Sprintf("yes (%d/%d)", j.PausedOn, rep.Nodes)
		case j.PausedOn > 0: // not in effect, but those nodes refuse its ticks
			paused = fmt.Sprintf("partial (%d/%d)", j.PausedOn, rep.Nodes)
		}
		if j.HeldOn > 0 {
			holder, on = printable(j.Holder), fmt.Sprintf("%d/%d", j.HeldOn, rep.Nodes)
		}
		if !j.Tick.IsZero() {
			tick = j.Tick.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", printable(j.Name), paused, holder, tick, on, lastRunText(j.LastRun))
	}
	if err := tw.Flush(); err != nil {
		return exitError
	}
	fmt.Fprintf(stdout, "%d jobs under prefix %q on %d/%d nodes; live replicas: %v\n",
		len(jobs), rep.Prefix, rep.Nodes-len(rep.Errors), rep.Nodes, rep.Live)
	if err := writeReplicas(stdout, replicas, common, tables); err != nil {
		return exitError
	}
	if err := writeNodes(stdout, nodes); err != nil {
		return exitError
	}
	return exitClean
}

// jobsOf returns every job that has a lock, a state or a pause key on the
// nodes, by name.
func jobsOf(rep *leaks.Report) []jobStatus {
	byName := map[string]*jobStatus{}
	get := func(name string) *jobStatus {
		if byName[name] == nil {
			byName[name] = &jobStatus{Name: name}
		}
		return byName[name]
	}
	for _, f := range rep.Findings {
		if f.Kind != "lock" && f.Kind != "state" {
			continue
		}
		j := get(f.Name)
		held := map[string]int{}
		for _, c := range f.Copies {
			if !c.Acquired.IsZero() {
				held[c.Value]++
			}
		}
		for _, c := range f.Copies {
			if n := held[c.Value]; n > j.HeldOn {
				j.Holder, j.Tick, j.HeldOn = c.Owner, c.Occurrence, n
			}
		}
	}
	for name, n := range rep.Paused {
		get(name).PausedOn = n
	}
	out := make([]jobStatus, 0, len(byName))
	for _, j := range byName {
		out = append(out, *j)
	}
	slices.SortFunc(out, func(a, b jobStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// lastRuns sets each job's LastRun from its ledger, merged over the nodes
// the scanner reads.
func lastRuns(ctx context.Context, scanner *leaks.Scanner, jobs []jobStatus) {
	for i := range jobs {
		lk, err := scanner.Keys.Lock(jobs[i].Name)
		if err != nil {
			continue
		}
		if runs, _ := ledger.Read(ctx, scanner.Nodes, lk, 1); len(runs) > 0 {
			r := historyRunOf(runs[0])
			jobs[i].LastRun = &r
		}
	}
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
