package store

import (
	"errors"
	"fmt"
	"time"
)

// ErrNodeDown is the error of a call not sent because the node failed
// recently and is backing off. It wraps no network error of its own: the
// failure that started the back-off was reported to its callers.
var ErrNodeDown = errors.New("store: node down, backing off")

// Back-off of a failing node: after a pipeline fails with a network error
// or a timeout, calls fail at once for minBackoff, doubling with every
// further failure up to maxBackoff. The first pipeline after the back-off
// probes the node; one that succeeds ends the back-off.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// health tracks a node's failures. It is guarded by its batcher's mutex.
type health struct {
	failures  int       // consecutive failed pipelines
	downUntil time.Time // calls fail at once until then
	since     time.Time // when the node first failed, of this run of failures
}

// check returns ErrNodeDown while the node is backing off.
func (h *health) check(now time.Time) error {
	if now.Before(h.downUntil) {
		return fmt.Errorf("%w (down since %s, retrying in %v)", ErrNodeDown,
			h.since.Format(time.RFC3339), h.downUntil.Sub(now).Round(time.Millisecond))
	}
	return nil
}

// record notes a pipeline's outcome.
func (h *health) record(now time.Time, failed bool) {
	if !failed {
		h.failures, h.downUntil = 0, time.Time{}
		return
	}
	if h.failures == 0 {
		h.since = now
	}
	h.failures++
	backoff := min(minBackoff<<min(h.failures-1, 16), maxBackoff)
	h.downUntil = now.Add(backoff)
}

// Up reports whether the node's last pipeline succeeded (true before any).
func (n *Node) Up() bool {
	n.batch.mu.Lock()
	defer n.batch.mu.Unlock()
	return n.batch.health.failures == 0
}
