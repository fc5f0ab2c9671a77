package mutex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// Lock acquires the lock called name for ttl, waiting while it is held
// elsewhere or no quorum is reached, until it succeeds or ctx is done. It
// gives up at once on ErrAlreadyRun, on a paused lock and on invalid
// arguments. When ctx ends the wait, the error matches both the last
// attempt's reason and ctx's error.
//
// Reentrancy: under the KeepAlive context of a lock of the same name from
// this Redlock (its holder), Lock returns at once a new handle on that
// hold (see the Lock type), or an error matching ErrLost if the hold was
// lost or released since; ttl is then not used. A request that claims an
// occurrence, asks for permits or names another owner (Owner) does not
// reenter: it contends as any other.
//
// A waiter is woken when the lock is released: every release publishes
// on the lock's channel on each node (Redis pub/sub) while some waiter is
// subscribed to it there, and the Redlock's waiters for a name share one
// subscription per node. A notification lost (a node down, a subscription
// reconnecting) costs at most a retry delay: the waiter also tries again
// after a random delay (WithRetryDelay; at most the node timeout after a
// try that nodes failed) and after every resubscription.
// The waiters of one Redlock for one name are served first come, first
// served: only the first tries, the others wait behind it. Across Redlocks
// (replicas), the waiter that began to wait first has the turn: refused,
// it marks the lock as its turn on the nodes (for three retry delays and
// two node timeouts, renewed at each try), and while the turn is marked
// no other acquisition of the lock (TryLock included) succeeds on a node,
// but by a waiter that began before it; so the waiters are served in the
// order they began to wait, by their clocks (within their skew), and none
// starves. A waiter that stops waiting takes its turn back; one that dies
// holds it until it expires. A lock that claims an occurrence (Occurrence)
// is not waited for this way: Lock tries it again after every retry delay.
func (r *Redlock) Lock(ctx context.Context, name string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	keys, lc, err := r.prepare(name, ttl, opts)
	if err != nil {
		return nil, err
	}
	if l, ok, err := r.reenter(ctx, name, lc); ok {
		return l, err
	}
	if lc.permits > 0 {
		return r.lockPermits(ctx, name, ttl, lc)
	}
	if lc.occurrence != 0 {
		return r.lockPolling(ctx, keys, lc, ttl)
	}
	w := r.waits.join(keys, []string{keys.Lock})
	defer r.waits.leave(w)
	return r.wait(ctx, w, func(try int) (*Lock, error) {
		res := r.waitAttempt(ctx, w, keys, lc, ttl, try)
		return res.Lock, res.Err
	})
}

// wait makes attempt as w's tries, when w is first in its line, until one
// wins or gives up (a paused lock), or ctx ends: after a refusal, at the
// next notification of a release on w's channels (subscribed after the
// first try), or after a wait delay at most.
func (r *Redlock) wait(ctx context.Context, w *waiter, attempt func(try int) (*Lock, error)) (*Lock, error) {
	timer := time.NewTimer(time.Hour) // reset before each wait
	timer.Stop()
	defer timer.Stop()
	var last error // the previous attempt's error
	for try := 0; ; try++ {
		select { // the first in line tries; the others wait for their turn
		case <-w.first:
		case <-ctx.Done():
			return nil, joinCause(last, ctx)
		}
		l, err := attempt(try)
		switch {
		case err == nil, errors.Is(err, errPaused):
			return l, err
		case ctx.Err() != nil && last != nil:
			// This attempt was cut short by ctx: the previous one says why
			// the lock could not be had.
			return nil, errors.Join(last, context.Cause(ctx))
		case ctx.Err() != nil && !errors.Is(err, context.Cause(ctx)):
			return nil, errors.Join(err, context.Cause(ctx))
		case ctx.Err() != nil:
			return nil, err
		}
		last = err
		if try == 0 {
			// Subscribed from now on: the confirmation wakes the waiter,
			// which tries again, in case the lock was released meanwhile.
			r.waits.subscribe(w)
		}
		timer.Reset(r.waitDelay(err))
		select {
		case <-timer.C:
		case <-w.wake:
		case <-ctx.Done():
			return nil, errors.Join(err, context.Cause(ctx))
		}
	}
}

// waitDelay returns how long a waiter waits for a notification after an
// attempt that failed with err before it tries again: a random delay of
// about the retry delay, or the node timeout when nodes failed (its
// subscriptions may be down with them: no notification can be counted on
// until they answer again).
func (r *Redlock) waitDelay(err error) time.Duration {
	d := r.cfg.retryDelay
	if nodesFailed(err) {
		d = min(d, r.cfg.nodeTimeout)
	}
	return d/2 + rand.N(d)
}

// nodesFailed reports whether an acquisition failed for want of a quorum
// of nodes that answered (down, slow, backing off).
func nodesFailed(err error) bool {
	var qe *QuorumError
	if !errors.Is(err, ErrNoQuorum) || !errors.As(err, &qe) {
		return false
	}
	for _, n := range qe.Nodes {
		if failedVote(n.Vote) {
			return true
		}
	}
	return false
}

// waitAttempt makes attempt try of waiter w: the first as any acquisition
// (its plain commands), the later ones as a waiter, which takes the turn
// when refused.
func (r *Redlock) waitAttempt(ctx context.Context, w *waiter, keys engine.LockKeys, lc lockConfig, ttl time.Duration, try int) Result {
	if err := r.checkOwner(keys.Name, lc.owner); err != nil {
		return Result{Err: err}
	}
	req := attemptReq{keys: keys, ttl: ttl, lc: lc, token: engine.NewToken()}
	if try > 0 {
		// Its acquisition deletes the turn where it wins, but a node that
		// refused it may keep it: taken back when it leaves.
		req.waiter, w.turned = w.id, true
	}
	return r.attemptAll(ctx, []attemptReq{req})[0]
}

// turnTTL is how long a waiter's turn is marked on the nodes: it renews
// it at every try, at most 1.5 retry delays and a try (a node timeout and
// a commit's) apart, and may miss one.
func (r *Redlock) turnTTL() time.Duration {
	return 3*r.cfg.retryDelay + 2*r.cfg.nodeTimeout
}

// joinCause returns ctx's cause, joined with the last attempt's error if
// any.
func joinCause(last error, ctx context.Context) error {
	if last == nil {
		return context.Cause(ctx)
	}
	return errors.Join(last, context.Cause(ctx))
}

// lockPolling is Lock for a lock that claims an occurrence: an attempt
// after every retry delay.
func (r *Redlock) lockPolling(ctx context.Context, keys engine.LockKeys, lc lockConfig, ttl time.Duration) (*Lock, error) {
	name := keys.Name
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var last error // the previous attempt's error
	for {
		if err := r.checkOccurrence(name, lc.occurrence); err != nil {
			if last != nil {
				err = fmt.Errorf("%w (retried past it; the last attempt: %v)", err, last)
			}
			return nil, err
		}

		// A fresh token each time: a late release of an earlier attempt's
		// value must never match this attempt's.
		var res Result
		if res.Err = r.checkOwner(name, lc.owner); res.Err == nil {
			res = r.attemptAll(ctx, []attemptReq{{keys: keys, ttl: ttl, lc: lc, token: engine.NewToken()}})[0]
		}
		l, err := res.Lock, res.Err
		switch {
		case err == nil, errors.Is(err, ErrAlreadyRun), errors.Is(err, errPaused):
			return l, err
		case ctx.Err() != nil && last != nil:
			return nil, errors.Join(last, context.Cause(ctx))
		case ctx.Err() != nil:
			return nil, err
		}
		last = err
		if !r.retryPause(ctx, &timer) {
			return nil, errors.Join(err, context.Cause(ctx))
		}
	}
}

// retryPause waits a random delay of about the retry delay, drawn from
// [d/2, 3d/2), on *timer (made on first use), and reports whether it did
// before ctx ended.
func (r *Redlock) retryPause(ctx context.Context, timer **time.Timer) bool {
	d := r.cfg.retryDelay/2 + rand.N(r.cfg.retryDelay)
	if *timer == nil {
		*timer = time.NewTimer(d)
	} else {
		(*timer).Reset(d)
	}
	select {
	case <-(*timer).C:
		return true
	case <-ctx.Done():
		return false
	}
}

// waiterID returns a waiter's id as the nodes compare them: a token, and
// when it began to wait, in unix ms.
func waiterID(start time.Time) string {
	return engine.NewToken() + "|" + strconv.FormatInt(start.UnixMilli(), 10)
}
