package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redcron/redcron/mutex"
)

// Results of an acquisition attempt (label result of
// redcron_lock_acquire_attempts_total), as indexes.
const (
	acquireAcquired = iota
	acquireHeld
	acquireAlreadyRun
	acquireNoQuorum
	acquirePaused
	numAcquireResults
)

func acquireResultName(i int) string {
	return [...]string{"acquired", "held", "already_run", "no_quorum", "paused"}[i]
}

// Results of an extension or a release, as indexes.
const (
	opDone = iota
	opLost
	opNoQuorum
	numOpResults
)

func extendResultName(i int) string  { return [...]string{"extended", "lost", "no_quorum"}[i] }
func releaseResultName(i int) string { return [...]string{"released", "lost", "no_quorum"}[i] }

// Node failure votes (label vote of redcron_lock_node_errors_total), as
// indexes: the votes that are failures of the node.
const (
	failTimeout = iota
	failUnreachable
	failError
	numFailVotes
)

func failVote(i int) string {
	return [...]string{"timeout", "unreachable", "error"}[i]
}

// nodeSeries are one node's series.
type nodeSeries struct {
	errors    [numFailVotes]prometheus.Counter
	up        prometheus.Gauge
	warmingUp prometheus.Gauge
}

// observeLock records a lock event. It does no I/O and takes no lock for
// long: the series are resolved once per node.
func (c *Collector) observeLock(e mutex.Event) {
	// The votes of a failed commit (the second round of an acquisition)
	// say nothing about a node's uptime.
	uptimeVotes := false
	switch e.Op {
	case "acquire":
		c.acquireBy[acquireResult(e.Err)].Inc()
		c.acquireDuration.Observe(e.Duration.Seconds())
		qe, ok := e.Err.(*mutex.QuorumError)
		uptimeVotes = !ok || qe.Op == "acquire"
	case "extend":
		c.extendBy[opResult(e.Err)].Inc()
	case "release":
		c.releaseBy[opResult(e.Err)].Inc()
	case "lost":
		c.leasesLost.Inc()
	default:
		return
	}
	for _, r := range e.Nodes {
		c.observeNode(r, uptimeVotes)
	}
}

// observeNode records one node's answer.
func (c *Collector) observeNode(r mutex.NodeResult, uptimeVotes bool) {
	if r.Node == "" || r.Vote == "" || r.Vote == "canceled" {
		return // no answer, or the caller gave up: nothing about the node
	}
	n := c.node(r.Node)
	for i := range numFailVotes {
		if failVote(i) == r.Vote { // a failure of the node
			n.up.Set(0)
			n.errors[i].Inc()
			return
		}
	}
	n.up.Set(1)
	if uptimeVotes {
		if r.WarmingUp {
			n.warmingUp.Set(1)
		} else {
			n.warmingUp.Set(0)
		}
	}
}

// node returns the series of the node called name, creating them (up at 1,
// not quarantined, no errors) the first time.
func (c *Collector) node(name string) *nodeSeries {
	c.nodesMu.RLock()
	n := c.nodes[name]
	c.nodesMu.RUnlock()
	if n != nil {
		return n
	}
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	if n = c.nodes[name]; n != nil {
		return n
	}
	n = &nodeSeries{
		up:        c.nodeUp.WithLabelValues(name),
		warmingUp: c.nodeWarmingUp.WithLabelValues(name),
	}
	n.up.Set(1)
	for i := range numFailVotes {
		n.errors[i] = c.nodeErrors.WithLabelValues(name, failVote(i))
	}
	c.nodes[name] = n
	return n
}

// acquireResult classifies an acquisition's error.
func acquireResult(err error) int {
	if err == nil {
		return acquireAcquired
	}
	reason := err
	if qe, ok := err.(*mutex.QuorumError); ok {
		reason = qe.Reason
		paused := 0
		for _, n := range qe.Nodes {
			if n.Vote == "paused" {
				paused++
			}
		}
		if qe.Quorum > 0 && paused >= qe.Quorum {
			return acquirePaused
		}
	}
	switch {
	case errors.Is(reason, mutex.ErrAlreadyRun):
		return acquireAlreadyRun
	case errors.Is(reason, mutex.ErrHeld):
		return acquireHeld
	}
	return acquireNoQuorum
}

// opResult classifies an extension's or a release's error.
func opResult(err error) int {
	switch {
	case err == nil:
		return opDone
	case errors.Is(err, mutex.ErrLost):
		return opLost
	}
	return opNoQuorum
}
