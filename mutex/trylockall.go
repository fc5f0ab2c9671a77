package mutex

import (
	"context"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
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

// TryLockAll makes one attempt at each of reqs, all together, and returns
// their results in the same order: each is what TryLock would have
// returned for its request. Together means one round trip per node for
// the votes of all of them, and one for all their commits (256 locks per
// script call; a Cluster or Ring node gets one call per lock, in one round
// trip still). A bad request fails alone, with an error matching
// ErrInvalidOption.
func (r *Redlock) TryLockAll(ctx context.Context, reqs []Request) []Result {
	out := make([]Result, len(reqs))
	valid := make([]attemptReq, 0, len(reqs))
	at := make([]int, 0, len(reqs)) // their places in reqs
	for j, q := range reqs {
		keys, lc, err := r.prepare(q.Name, q.TTL, q.Options)
		lc.ticket = lockwire.Ticket(ctx, q.Name) // a trigger's request, from our own wiring
		if err == nil {
			err = r.checkOwner(q.Name, lc.owner)
		}
		if err != nil {
			out[j].Err = err
			continue
		}
		valid = append(valid, attemptReq{keys: keys, ttl: q.TTL, lc: lc, token: engine.NewToken()})
		at = append(at, j)
	}
	if len(valid) == 0 {
		return out
	}
	rights, parents := r.partsOf(ctx, valid)
	if parents == nil {
		for k, res := range r.attemptAll(ctx, valid) {
			out[at[k]] = res
		}
		return out
	}
	var claims, alone []attemptReq
	var claimAt, aloneAt []int
	var rs, ps []*Lock
	for k, q := range valid {
		if parents[k] != nil {
			claims, claimAt = append(claims, q), append(claimAt, at[k])
			rs, ps = append(rs, rights[k]), append(ps, parents[k])
		} else {
			alone, aloneAt = append(alone, q), append(aloneAt, at[k])
		}
	}
	for k, res := range r.claimAll(ctx, claims, rs, ps) {
		out[claimAt[k]] = res
	}
	if len(alone) > 0 {
		for k, res := range r.attemptAll(ctx, alone) {
			out[aloneAt[k]] = res
		}
	}
	return out
}
