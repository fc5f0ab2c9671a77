package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// warmUp is how long after its start a node's vote does not count with the
// default max TTL (mutex.WithMaxTTL, 1m), without trusted nodes.
const warmUp = time.Minute

// nodeStatus is one node as status sees it.
type nodeStatus struct {
	Node      string  `json:"node"`
	Up        bool    `json:"up"`
	LatencyMS float64 `json:"latency_ms,omitempty"` // of an INFO round trip
	UptimeS   int64   `json:"uptime_s,omitempty"`   // since its server started
	WarmingUp bool    `json:"warming_up"`           // started less than a minute ago: its vote does not count yet
	Error     string  `json:"error,omitempty"`
}

// nodeStatuses asks every node for its uptime, in parallel, timing the round
// trip.
func nodeStatuses(ctx context.Context, nodes []*engine.Node, hide func(string) string) []nodeStatus {
	out := make([]nodeStatus, len(nodes))
	onEveryNode(nodes, func(i int, n *engine.Node) error {
		start := time.Now()
		info, err := n.Info(ctx)
		out[i] = nodeStatus{Node: n.Name(), Up: err == nil}
		if err != nil {
			out[i].Error = hide(err.Error())
			return nil
		}
		out[i].LatencyMS = float64(time.Since(start).Microseconds()) / 1000
		out[i].UptimeS = int64(info.Uptime.Seconds())
		out[i].WarmingUp = info.Uptime < warmUp
		return nil
	})
	return out
}

// writeNodes prints the nodes' table.
func writeNodes(w io.Writer, nodes []nodeStatus) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NODE\tUP\tLATENCY\tUPTIME\tNOTE\n")
	for _, n := range nodes {
		if !n.Up {
			fmt.Fprintf(tw, "%s\tno\t-\t-\t%s\n", n.Node, n.Error)
			continue
		}
		note := "-"
		if n.WarmingUp {
			note = "warming up: its vote counts a minute after its start (unless the nodes are trusted)"
		}
		fmt.Fprintf(tw, "%s\tyes\t%.1fms\t%v\t%s\n", n.Node, n.LatencyMS, time.Duration(n.UptimeS)*time.Second, note)
	}
	return tw.Flush()
}
