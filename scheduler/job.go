package scheduler

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// JobFunc is the work a Scheduler runs.
//
// ctx is cancelled when the lease is lost (cause matching mutex.ErrLost), when
// the run timeout passes (ErrRunTimeout), when a newer tick replaces the run
// (ErrReplaced, see WithOverlap), when the scheduler shuts down
// (ErrShutdown) or when the context given to Run is cancelled (its cause);
// context.Cause(ctx) says which. A job should return soon after ctx is
// done: past the lease, another replica may run the next tick.
type JobFunc func(ctx context.Context, info RunInfo) error

// RunInfo describes one run of a job.
type RunInfo struct {
	// Job is the registered job name.
	Job string
	// Tick is the occurrence being run: the schedule's own time, identical
	// on every replica, not the moment the run started. It is the zero
	// time for a run started by Trigger.
	Tick time.Time
	// Fence is the lease's fencing token: it increases strictly with every
	// acquisition of the job's lock. Pass it to the storage the job writes
	// to, so that it can reject writes from a holder whose lease ended.
	// Zero if the Locker issues no tokens.
	Fence uint64
	// RunID is unique to this run: a UUIDv7 whose time is the run's tick
	// (for a run started by Trigger, when its lease was won, by the
	// scheduler's clock: see WithClock), so that a job's run ids sort by
	// tick. Ids of the same millisecond are in random order.
	RunID string
	// Instance is the id of the replica running the job (WithInstanceID).
	Instance string
	// Try is which try of the run this is, from 1 (WithRetry).
	Try int
}

type runInfoKey struct{}

// RunInfoFromContext returns the RunInfo of the run that ctx belongs to.
// The context passed to the job carries it, and so does every context
// derived from it.
func RunInfoFromContext(ctx context.Context) (RunInfo, bool) {
	info, ok := ctx.Value(runInfoKey{}).(*RunInfo)
	if !ok {
		return RunInfo{}, false
	}
	return *info, true
}

// contextWithRunInfo returns ctx carrying info, which must not change
// after.
func contextWithRunInfo(ctx context.Context, info *RunInfo) context.Context {
	return context.WithValue(ctx, runInfoKey{}, info)
}

// newRunID returns a unique id of a run of the given time: a UUIDv7 (RFC
// 9562) of at's Unix time in milliseconds and random bits. uuid.NewRandom
// fails only if crypto/rand does, which since Go 1.24 crashes the program
// instead.
func newRunID(at time.Time) string {
	id := uuid.Must(uuid.NewRandom())
	binary.BigEndian.PutUint64(id[:8], uint64(at.UnixMilli())<<16|uint64(id[6]&0x0f)<<8|uint64(id[7]))
	id[6] |= 0x70 // version 7 over version 4's 0; the variant bits stay
	return id.String()
}
