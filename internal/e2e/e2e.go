// Package e2e holds what the end-to-end tests share, those of the root
// package (the front door's) and those of systemtest (the system's under
// faults and across processes).
package e2e

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

// SyncBuffer is a bytes.Buffer safe for the loggers of several goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// NodesOf returns engine nodes over c's servers.
func NodesOf(t *testing.T, c *redistest.Cluster) []*engine.Node {
	t.Helper()
	var nodes []*engine.Node
	for _, s := range c.Nodes() {
		n, err := engine.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// Run runs s until the test ends.
func Run(t *testing.T, s *redcron.Scheduler) {
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
}
