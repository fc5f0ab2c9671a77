package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redcron/redcron/mutex"
)

// pauseDoc is what pause and resume print with -json.
type pauseDoc struct {
	Job        string          `json:"job"`
	Action     string          `json:"action"`  // pause or resume
	Done       bool            `json:"done"`    // a majority of the nodes took it
	Changed    int             `json:"changed"` // nodes that took it
	Nodes      int             `json:"nodes"`   // nodes configured
	NodeErrors []jsonNodeError `json:"node_errors"`
}

// pause runs pause JOB or resume JOB: it sets the job's pause key (no TTL:
// a pause lasts until it is resumed) on every node, or deletes it, and
// succeeds when a majority did (see admin.Client.Pause; the job's ledger
// records it, by the operator, user@host). A tick of a paused job is
// refused by the acquisition itself on every node that has the key, so
// with the key on a majority no replica can win it (a skip with reason
// paused); a manual run (trigger) is not refused. It prints what it did to
// stdout (with -json, a document, also when a majority was not reached),
// each node that failed to stderr.
func (a *cmd) pause(ctx context.Context) int {
	cfg, stdout, stderr, hide := a.cfg, a.stdout, a.stderr, a.hide
	act := a.c.Pause
	if cfg.command == "resume" {
		act = a.c.Resume
	}
	errs, err := act(ctx, cfg.job)
	if a.noSuchJob(err) {
		return exitError
	}
	nodes := len(cfg.addrs)
	doc := pauseDoc{Job: cfg.job, Action: cfg.command, Nodes: nodes, NodeErrors: []jsonNodeError{}}
	for i, e := range errs {
		if e != nil {
			name, text := hide(cfg.addrs[i]), hide(errors.Unwrap(e).Error())
			doc.NodeErrors = append(doc.NodeErrors, jsonNodeError{Node: name, Error: text})
			fmt.Fprintf(stderr, "redcronctl: %s on node %s: %s\n", cfg.command, name, text)
			continue
		}
		doc.Changed++
	}
	doc.Done = err == nil
	if cfg.json && errs != nil {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if enc.Encode(doc) != nil {
			return exitError
		}
	}
	switch {
	case errors.Is(err, mutex.ErrNoQuorum):
		fmt.Fprintf(stderr, "redcronctl: %s %s reached %d of %s, not a majority (a pause is taken back): run it again\n",
			cfg.command, cfg.job, doc.Changed, plural(nodes, "node", "nodes"))
		return exitError
	case err != nil:
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	if !cfg.json {
		verb := map[string]string{"pause": "paused", "resume": "resumed"}[cfg.command]
		fmt.Fprintf(stdout, "%s %s on %d of %s\n", verb, cfg.job, doc.Changed, plural(nodes, "node", "nodes"))
	}
	if missed := nodes - doc.Changed; missed > 0 {
		// A node left out answers as before: after a resume, its refusals
		// cost the job a vote until it is resumed too.
		fmt.Fprintf(stderr, "redcronctl: %s missed the %s: run it again once every node is back\n", plural(missed, "node", "nodes"), cfg.command)
	}
	return exitClean
}
