package metrics

import (
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/leakscan"
)

// LeakObserver returns the hook to pass to leakscan.WithObserver. A failed
// scan counts as failed and leaves the leak gauges as they were; a
// successful one sets the gauge of every class to its count, and the
// number of distinct job tables among the live replicas. Heartbeats
// set the nodes' up gauges, so that they stay fresh between jobs, and the
// replica's clock offset from the nodes'.
func (c *Collector) LeakObserver() func(leakscan.Event) {
	return func(e leakscan.Event) {
		for job, byReason := range e.Missed {
			for reason, n := range byReason {
				c.missed.WithLabelValues(job, reason).Add(float64(n))
			}
		}
		if !e.Scan {
			answered := false
			for node, err := range e.Nodes {
				if err == nil {
					c.node(node).up.Set(1)
					answered = true
				} else {
					c.node(node).up.Set(0)
				}
			}
			if answered {
				c.clockOffset.Set(e.Offset.Seconds())
			}
			return
		}
		if e.Err != nil {
			c.scanFail.Inc()
			return
		}
		for i, class := range leakClasses() {
			c.leakedBy[i].Set(float64(e.Leaks[class]))
		}
		c.jobTables.Set(float64(e.JobTables))
		c.lastScanSuccess.SetToCurrentTime()
		c.scanOK.Inc()
	}
}

// leakClasses returns the names of the leak classes, the values of the
// class label.
func leakClasses() []string {
	var out []string
	for _, c := range leaks.AllClasses() {
		out = append(out, c.String())
	}
	return out
}
