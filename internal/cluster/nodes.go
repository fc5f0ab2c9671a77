package cluster

import (
	"context"
	"strings"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// The states of a node (Node.State).
const (
	NodeUp      = "up"
	NodeDown    = "down"       // unreachable, timing out
	NodeWarming = "warming_up" // its server started too recently to vote
	NodeRefused = "refused"    // it answers, but refuses us: a password, an ACL, a server loading
)

// Node is one node's health, as an INFO round trip shows it.
type Node struct {
	Name      string
	Err       error         // INFO's error; nil when it answered
	Answered  bool          // the node answered (INFO, or a PING after INFO failed)
	Refused   bool          // its error concerns the whole node: NOAUTH, WRONGPASS, NOPERM, LOADING...
	Latency   time.Duration // of the INFO round trip, or of a PING when INFO failed and it answered
	Uptime    time.Duration // since its server started, when INFO told
	RunID     string        // its server's run_id, when INFO told
	WarmingUp bool          // its server started less than warm ago
}

// State returns the node's state: NodeUp, NodeDown, NodeWarming or
// NodeRefused. A node that answers a PING but not INFO (a server without
// it) is up, with its error.
func (n Node) State() string {
	switch {
	case n.Refused:
		return NodeRefused
	case !n.Answered:
		return NodeDown
	case n.WarmingUp:
		return NodeWarming
	}
	return NodeUp
}

// NodeStatuses asks every node for its uptime (INFO), in parallel, timing
// the round trip; a node whose server started less than warm ago is
// warming up. A node whose INFO fails is PINGed, to tell a node down from
// one that answers.
func (c *Cluster) NodeStatuses(ctx context.Context, warm time.Duration) []Node {
	out := make([]Node, len(c.Nodes))
	c.onEveryNode(func(i int, n *engine.Node) error {
		start := time.Now()
		info, err := n.Info(ctx)
		out[i] = Node{Name: n.Name(), Err: err, Answered: err == nil}
		if err != nil {
			out[i].Refused = nodeWide(err)
			start = time.Now()
			out[i].Answered = out[i].Refused || n.Ping(ctx) == nil
			if out[i].Answered && !out[i].Refused {
				out[i].Latency = time.Since(start) // of the PING
			}
			return nil
		}
		out[i].Latency = time.Since(start)
		out[i].Uptime, out[i].RunID = info.Uptime, info.RunID
		out[i].WarmingUp = info.Uptime < warm
		return nil
	})
	return out
}

// nodeWide reports whether a server's error concerns the whole node rather
// than one command: authentication, permissions, a server not ready.
func nodeWide(err error) bool {
	if !engine.ServerError(err) {
		return false
	}
	msg := err.Error()
	for _, s := range []string{"NOAUTH", "WRONGPASS", "NOPERM", "LOADING", "MASTERDOWN"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
