package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"

	"github.com/redcron/redcron/internal/cluster"
)

// pause runs pause JOB or resume JOB: it sets the job's pause key (no TTL:
// a pause lasts until it is resumed) on every node, or deletes it, and
// succeeds when a majority did (see cluster.Cluster.Pause; the job's
// ledger records it, by who). A tick of a paused job is refused by the
// acquisition itself on every node that has the key, so with the key on a
// majority no replica can win it (a skip with reason paused); a manual run
// (Trigger) is not refused. It prints what it did to stdout, each node
// that failed to stderr.
func pause(ctx context.Context, cfg *config, cl *cluster.Cluster, stdout, stderr io.Writer, hide func(string) string) int {
	errs, err := cl.Pause(ctx, cfg.job, who(), cfg.command == "pause")
	for i, e := range errs {
		if e != nil {
			fmt.Fprintf(stderr, "redcronctl: %s on node %s: %s\n", cfg.command, hide(cl.Nodes[i].Name()), hide(e.Error()))
		}
	}
	done := len(errs)
	for _, e := range errs {
		if e != nil {
			done--
		}
	}
	switch {
	case errors.Is(err, cluster.ErrNoMajority):
		fmt.Fprintf(stderr, "redcronctl: %s %s reached %d of %d nodes, not a majority (a pause is taken back): run it again\n", cfg.command, cfg.job, done, len(cl.Nodes))
		return exitError
	case err != nil:
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	verb := map[string]string{"pause": "paused", "resume": "resumed"}[cfg.command]
	fmt.Fprintf(stdout, "%s %s on %d of %d nodes\n", verb, cfg.job, done, len(cl.Nodes))
	if done < len(cl.Nodes) {
		// A node left out answers as before: after a resume, its refusals
		// cost the job a vote until it is resumed too.
		fmt.Fprintf(stderr, "redcronctl: %d node(s) missed the %s: run it again once they are back\n", len(cl.Nodes)-done, cfg.command)
	}
	return exitClean
}

// who names the operator in the pause key, the trigger's request and the
// ledger: user@host.
func who() string {
	name := "?"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
