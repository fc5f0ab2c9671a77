package metrics

import (
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// observeLeakScan records a scheduler.EventLeakScan: a failed scan counts
// as failed and leaves the leak gauges as they were; a successful one sets
// the gauge of every class of mutex.LeakClasses() to its count (0 if the
// report leaves it out). Classes outside mutex.LeakClasses(), which a custom
// scheduler.LeakScanner might report, are ignored, so that the class label
// stays bounded.
func (c *Collector) observeLeakScan(e scheduler.Event) {
	if e.Err != nil {
		c.scanFail.Inc()
		return
	}
	for i, class := range mutex.LeakClasses() {
		c.leakedBy[i].Set(float64(e.Leaks[class.String()]))
	}
	c.lastScanSuccess.SetToCurrentTime()
	c.scanOK.Inc()
}
