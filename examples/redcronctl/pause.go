package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// pause runs pause JOB or resume JOB: it sets the job's pause key (no TTL:
// a pause lasts until it is resumed) on every node, or deletes it, and
// succeeds when a majority did. A tick of a paused job is refused by the
// acquisition itself on every node that has the key, so with the key on a
// majority no replica can win it (a skip with reason paused); a manual run
// (Trigger) is not refused. It prints what it did to stdout, each node that
// failed to stderr.
func pause(ctx context.Context, cfg *config, nodes []*engine.Node, keys engine.Keyspace, stdout, stderr io.Writer, hide func(string) string) int {
	lk, err := keys.Lock(cfg.job)
	if err != nil {
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	value := strconv.FormatInt(time.Now().UnixMilli(), 10) + "|" + who()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if cfg.command == "pause" {
				errs[i] = n.Client().Set(ctx, lk.Pause, value, 0).Err()
			} else {
				errs[i] = n.Client().Del(ctx, lk.Pause).Err()
			}
		})
	}
	wg.Wait()
	done := 0
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(stderr, "redcronctl: %s on node %s: %s\n", cfg.command, nodes[i].Name(), hide(err.Error()))
			continue
		}
		done++
	}
	if done < len(nodes)/2+1 {
		if cfg.command == "pause" {
			// A pause on a minority is not in effect but costs votes:
			// take it back where it was set.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			for i, n := range nodes {
				if errs[i] == nil {
					_ = n.Client().Del(rctx, lk.Pause).Err()
				}
			}
			cancel()
		}
		fmt.Fprintf(stderr, "redcronctl: %s %s reached %d of %d nodes, not a majority (a pause is taken back): run it again\n", cfg.command, cfg.job, done, len(nodes))
		return exitError
	}
	verb := map[string]string{"pause": "paused", "resume": "resumed"}[cfg.command]
	fmt.Fprintf(stdout, "%s %s on %d of %d nodes\n", verb, cfg.job, done, len(nodes))
	if done < len(nodes) {
		// A node left out answers as before: after a resume, its refusals
		// cost the job a vote until it is resumed too.
		fmt.Fprintf(stderr, "redcronctl: %d node(s) missed the %s: run it again once they are back\n", len(nodes)-done, cfg.command)
	}
	return exitClean
}

// who names the operator in the pause key: user@host.
func who() string {
	name := "?"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
