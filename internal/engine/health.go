package engine

import (
	"errors"
	"fmt"
	"time"
)

// ErrNodeDown is the error of a call not sent because the node failed
// recently and is backing off; it also matches ErrNotSent. It wraps no
// network error of its own: the failure that started the back-off was
// reported to its callers.
var ErrNodeDown = errors.New("redcron: node down, backing off")

// ErrNotSent is matched by the error of a call that never reached the
// node: its context ended while it was queued, or the node was backing off.
// Such a call had no effect on the node.
var ErrNotSent = errors.New("redcron: call not sent")

// notSent marks err as the error of a call that was not sent.
func notSent(err error) error { return fmt.Errorf("%w: %w", ErrNotSent, err) }

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
		return fmt.Errorf("%w: %w (down since %s, retrying in %v)", ErrNotSent, ErrNodeDown,
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
