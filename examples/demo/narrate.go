package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// liveLag is how long after a tick its line is printed: by then every
// replica has run it or given up on it (undecided attempts stop at the next
// tick).
const liveLag = 1200 * time.Millisecond

// cellWidth is the width of one job's column in a tick line.
const cellWidth = 22

// narrator writes the demo's output: an introduction, one line per tick,
// the scenario's narration and, last, the summary. With quiet, only the
// summary (written by run) appears. Its methods are safe for concurrent
// use.
type narrator struct {
	w     io.Writer
	quiet bool
	mu    sync.Mutex
}

// printf writes text as is.
func (n *narrator) printf(format string, args ...any) {
	if n.quiet {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, format, args...)
}

// say writes a line of narration, stamped with the time.
func (n *narrator) say(format string, args ...any) {
	n.printf("%s  >> %s\n", clockMilli(time.Now()), fmt.Sprintf(format, args...))
}

// intro describes the setup and the scenario.
func (n *narrator) intro(cfg config, cl *cluster, reps []*replica, jobs []string, prefix string, p plan) {
	var b strings.Builder
	fmt.Fprintf(&b, "redcron demo: %d replicas run %d jobs every second over %d Redis nodes, for %v\n",
		len(reps), len(jobs), len(cl.addrs), cfg.duration)
	var nodes []string
	for i, a := range cl.addrs {
		nodes = append(nodes, nodeName(i)+" "+a)
	}
	if cl.external() {
		fmt.Fprintf(&b, "nodes      %d real Redis servers (-redis), quorum %d: %s\n", len(cl.addrs), cl.quorum(), strings.Join(nodes, ", "))
		fmt.Fprintf(&b, "           Killing and restarting nodes is skipped: they are not the demo's to kill;\n")
		fmt.Fprintf(&b, "           stalling a replica still runs. A restarted server votes only after %v of\n", cfg.lockTTL+3*time.Second)
		fmt.Fprintf(&b, "           uptime (WithMaxTTL = the lock TTL, and 3 s): keep the nodes up that long first.\n")
		fmt.Fprintf(&b, "           Keys go under the prefix %q; locks expire within a minute, states within ten.\n", prefix)
	} else {
		fmt.Fprintf(&b, "nodes      %d in-process miniredis servers (real TCP on loopback, no Redis needed), quorum %d:\n", len(cl.addrs), cl.quorum())
		fmt.Fprintf(&b, "           %s\n", strings.Join(nodes, ", "))
	}
	var ids []string
	for _, r := range reps {
		ids = append(ids, r.id)
	}
	fmt.Fprintf(&b, "replicas   %s: each its own Scheduler, Redlock and connections to every node\n", strings.Join(ids, " "))
	fmt.Fprintf(&b, "jobs       %s on %q (every second), lock TTL %v; a run works 20-150ms\n",
		strings.Join(jobs, " "), jobSpec, cfg.lockTTL)
	fmt.Fprintf(&b, "scenario   (scaled to %v)\n", cfg.duration)
	if !cl.external() {
		fmt.Fprintf(&b, "           %-7s kill node 2 and 4: 3 of 5 left, the quorum of 3 holds\n", offset(p.kill2))
		fmt.Fprintf(&b, "           %-7s kill node 3: 2 of 5 left, quorum lost\n", offset(p.kill3))
		fmt.Fprintf(&b, "           %-7s restart node 2, 3 and 4, empty, on the same addresses\n", offset(p.restart))
	}
	fmt.Fprintf(&b, "           %-7s make the next run of %s slow (%v) and stall the replica running it\n", offset(p.stall), jobs[0], 3*cfg.lockTTL)
	fmt.Fprintf(&b, "           %-7s resume that replica (once another one took over)\n", offset(p.resume))
	fmt.Fprintf(&b, "\nOne line per tick, %v after it: the tick, progress, nodes up, then for each job\n", liveLag)
	fmt.Fprintf(&b, "the replica that ran it and its lease's fencing token (last 8 digits), or why no\n")
	fmt.Fprintf(&b, "replica ran it: \"no quorum\" (no lock decision before the next tick), \"overlap\"\n")
	fmt.Fprintf(&b, "(the job's lock is still held for an earlier tick), or \"split vote\" (each replica\n")
	fmt.Fprintf(&b, "was told another held the lock, and none ran it: must never show, as split votes\n")
	fmt.Fprintf(&b, "are retried until one replica wins).\n\n")
	n.printf("%s", b.String())
}

// offset formats a scenario time.
func offset(d time.Duration) string {
	return "+" + d.Round(100*time.Millisecond).String()
}

// live prints one line per tick, from the first tick after t0 to the last
// before end, until ctx is done.
func (n *narrator) live(ctx context.Context, rec *recorder, jobs []string, nodes int, t0, end time.Time, total time.Duration) {
	if n.quiet {
		return
	}
	for tick := t0.Truncate(time.Second).Add(time.Second); tick.Before(end); tick = tick.Add(time.Second) {
		if !sleepUntil(ctx, tick.Add(liveLag)) {
			return
		}
		var b strings.Builder
		up := 0
		for _, job := range jobs {
			v := rec.view(job, tick)
			up = v.up
			fmt.Fprintf(&b, "  %-*s", cellWidth, cell(job, v))
		}
		elapsed := int(tick.Sub(t0).Round(time.Second).Seconds())
		n.printf("%s [%3d/%ds] %d/%d up%s\n", clock(tick), elapsed, int(total.Seconds()), up, nodes, strings.TrimRight(b.String(), " "))
	}
}

// cell describes what happened to one tick of one job.
func cell(job string, v tickView) string {
	switch len(v.runs) {
	case 1:
		r := v.runs[0]
		return fmt.Sprintf("%s→%s …%08d", job, r.Replica, r.Fence%100_000_000)
	case 0:
		// A stalled replica reports no quorum while the others see the
		// lock still held: say what the others saw.
		switch {
		case slices.Contains(v.skips, "overlap"):
			return job + " · overlap"
		case slices.Contains(v.skips, "held"):
			// Each was told another held the lock, and none ran it.
			return job + " ✗ split vote"
		case slices.Contains(v.skips, "no_quorum"):
			return job + " ✗ no quorum"
		case slices.Contains(v.skips, "misfire"):
			return job + " ✗ misfire"
		}
		return job + " ✗ not run"
	}
	var reps []string
	for _, r := range v.runs {
		reps = append(reps, r.Replica)
	}
	return job + " DUPLICATE " + strings.Join(reps, "+")
}
