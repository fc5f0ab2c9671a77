package mutex

import (
	"context"
	"sync"
	"time"
)

// Request is one lock of a TryLockAll batch.
type Request struct {
	Name    string        // the lock's name
	TTL     time.Duration // its TTL, as for TryLock
	Options []LockOption  // Owner, Occurrence
}

// Result is the outcome of one Request: the held Lock, or the error
// TryLock would have returned.
type Result struct {
	Lock *Lock
	Err  error
}

// TryLockAll makes one attempt at each of reqs, all at once, and returns
// their results in the same order. Each result is what TryLock would have
// returned for its request; a bad request fails alone.
func (r *Redlock) TryLockAll(ctx context.Context, reqs []Request) []Result {
	out := make([]Result, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() {
			out[i].Lock, out[i].Err = r.TryLock(ctx, req.Name, req.TTL, req.Options...)
		})
	}
	wg.Wait()
	return out
}
