package cluster_test

import (
	"testing"

	"github.com/redcron/redcron/internal/cluster"
)

// TestNodeName: a node's name shows as host:port, without its user info.
func TestNodeName(t *testing.T) {
	for name, want := range map[string]string{
		"redis://ops:pw@10.0.0.1:6379/0": "10.0.0.1:6379", "ops:pw@10.0.0.1:6379": "10.0.0.1:6379", "10.0.0.3:6379": "10.0.0.3:6379",
	} {
		if got := cluster.NodeName(name); got != want {
			t.Errorf("NodeName(%q) = %q, want %q", name, got, want)
		}
	}
}
