// Package schedulertest provides an in-memory scheduler.Locker, so that
// jobs, and the code that registers them, can be tested without Redis, in
// the manner of net/http/httptest: build a scheduler.Scheduler over
// NewLocker and Add, Trigger and Run as the front door does.
package schedulertest

import (
	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/scheduler"
)

// NewLocker returns an in-memory scheduler.Locker for the schedulers of
// one process, with the Redis one's rules: one lease per job at a time,
// each tick won once (a tick not after the last one won is refused as
// already run), fences that grow with every lease, leases that expire
// with their TTL unless kept while the job runs. It reads time.Now, so a
// scheduler over it runs its ticks in testing/synctest's fake time.
func NewLocker() scheduler.Locker { return schedulertest.NewLocker() }
