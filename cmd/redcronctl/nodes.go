package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/redcron/redcron/admin"
)

// nodeStatus is one node as status sees it.
type nodeStatus struct {
	Node      string  `json:"node"`
	Up        bool    `json:"up"`
	LatencyMS float64 `json:"latency_ms,omitempty"` // of an INFO round trip
	UptimeS   int64   `json:"uptime_s,omitempty"`   // since its server started
	WarmingUp bool    `json:"warming_up"`           // started less than a minute ago: its vote does not count yet
	Error     string  `json:"error,omitempty"`
}

// nodeStatuses returns the nodes' health as status prints it: a node is up
// when it answered INFO; it is warming up for the default max TTL
// (mutex.WithMaxTTL, 1m) after its server's start, without trusted nodes.
func nodeStatuses(nodes []admin.Node, hide func(string) string) []nodeStatus {
	out := make([]nodeStatus, len(nodes))
	for i, n := range nodes {
		out[i] = nodeStatus{Node: hide(n.Name), Up: n.Err == nil}
		if n.Err != nil {
			out[i].Error = hide(n.Err.Error())
			continue
		}
		out[i].LatencyMS = float64(n.Latency.Microseconds()) / 1000
		out[i].UptimeS = int64(n.Uptime.Seconds())
		out[i].WarmingUp = n.State == "warming_up"
	}
	return out
}

// latencyText is a latency in ms for the table: 412µs under a
// millisecond, 1.4ms above.
func latencyText(ms float64) string {
	if ms < 1 {
		return fmt.Sprintf("%dµs", int(math.Round(ms*1000)))
	}
	return fmt.Sprintf("%.1fms", ms)
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
		fmt.Fprintf(tw, "%s\tyes\t%s\t%v\t%s\n", n.Node, latencyText(n.LatencyMS), time.Duration(n.UptimeS)*time.Second, note)
	}
	return tw.Flush()
}
