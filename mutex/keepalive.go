package mutex

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// keeper is a running KeepAlive.
type keeper struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// stop ends the loop and waits for its goroutine.
func (k *keeper) stop() {
	k.cancel(context.Canceled)
	<-k.done
}

// KeepAlive keeps the lock alive: it extends it every TTL/3 until the
// returned stop function or Release is called, or ctx is done.
//
// The returned context is derived from ctx and is cancelled, with a cause
// matching ErrLost, as soon as the lease can no longer be proven: when a
// majority of nodes no longer holds the lock, or when the validity deadline
// passes without a successful extension (a failed extension is retried
// sooner while the lease is still valid). Extensions stop once the lock has
// been held for the maximum hold time (WithMaxHold); the lease then runs
// out and the cause also matches ErrMaxHold.
//
// The returned context carries the lock: Lock and TryLock of its name on
// this Redlock under it reenter the lock (see Lock). A reentrant handle's
// KeepAlive returns a context that ends with the first handle's.
//
// stop ends the loop, waits for its goroutine and cancels the context with
// cause context.Canceled; it may be called more than once. A second call to
// KeepAlive returns the running one's context and stop; after Release it
// returns a context already cancelled with a cause matching ErrLost.
func (l *Lock) KeepAlive(ctx context.Context) (context.Context, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keep != nil {
		return l.keep.ctx, l.keep.stop
	}
	if l.parent != nil {
		return l.partKeepAlive(ctx)
	}
	if l.base != nil {
		return l.reenteredKeepAlive(ctx)
	}
	kctx, cancel := context.WithCancelCause(l.withHeld(ctx))
	if l.released {
		cancel(fmt.Errorf("%w: keepalive %q: released by this handle", ErrLost, l.keys.Name))
		return kctx, func() {}
	}
	k := &keeper{ctx: kctx, cancel: cancel, done: make(chan struct{})}
	l.keep = k
	go l.keepAlive(k)
	return kctx, k.stop
}

// keptBy starts the KeepAlive of a lock that another lock's keepalive
// keeps alive (a part's parent, a reentrant handle's base): a keeper
// without a loop of its own, its context derived from ctx and cancelled
// with cancel; already cancelled, and false, if l was released. Called
// with l.mu held.
func (l *Lock) keptBy(ctx context.Context) (*keeper, context.CancelCauseFunc, bool) {
	kctx, cancel := context.WithCancelCause(ctx)
	k := &keeper{ctx: kctx, cancel: cancel, done: make(chan struct{})}
	close(k.done)
	l.keep = k
	if l.released {
		cancel(fmt.Errorf("%w: keepalive %q: released by this handle", ErrLost, l.keys.Name))
		return k, cancel, false
	}
	return k, cancel, true
}

// keepAlive extends the lock every third of its TTL (sooner after a failed
// extension) until k is stopped, and cancels k's context once the lease can
// no longer be proven: its validity ran out, or a majority lost it.
func (l *Lock) keepAlive(k *keeper) {
	defer close(k.done)
	interval := l.ttl / 3
	retry := max(interval/4, l.r.cfg.nodeTimeout)
	holdEnd := l.acquired.Add(l.r.cfg.maxHold)
	extend := time.NewTimer(interval)
	defer extend.Stop()
	expire := time.NewTimer(time.Until(l.Until()))
	defer expire.Stop()
	// Extensions run in their own goroutine so that the validity deadline
	// is acted on at once, even while an extension waits for slow nodes.
	extended := make(chan error, 1)
	inflight := false
	defer func() {
		if inflight {
			<-extended // k.ctx is cancelled by now: it returns within the node timeout
		}
	}()
	var lastErr error
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-expire.C:
			if left := time.Until(l.Until()); left > 0 {
				expire.Reset(left) // an extension moved the deadline
				continue
			}
			l.lose(k, l.expiry(holdEnd, lastErr))
			return
		case <-extend.C:
			if !time.Now().Before(holdEnd) {
				continue // no more extensions: the lease runs out
			}
			inflight = true
			go func() { extended <- l.Extend(k.ctx) }()
		case err := <-extended:
			inflight = false
			switch {
			case err == nil:
				lastErr = nil
				expire.Reset(time.Until(l.Until()))
				extend.Reset(interval)
			case k.ctx.Err() != nil:
				return
			case errors.Is(err, ErrLost):
				l.lose(k, err)
				return
			default:
				lastErr = err
				extend.Reset(retry)
			}
		}
	}
}

// expiry returns why a kept-alive lease ran out: it reached its max hold
// (holdEnd), its last extension failed with lastErr, or none succeeded in
// time.
func (l *Lock) expiry(holdEnd time.Time, lastErr error) error {
	switch {
	case !time.Now().Before(holdEnd):
		return errMaxHold(l.keys.Name, l.r.cfg.maxHold)
	case lastErr != nil:
		return fmt.Errorf("%w: lock %q: validity ran out; last extension: %w", ErrLost, l.keys.Name, lastErr)
	}
	return fmt.Errorf("%w: lock %q: validity ran out before an extension succeeded", ErrLost, l.keys.Name)
}

// lose cancels the keepalive context with cause and reports it.
func (l *Lock) lose(k *keeper, cause error) {
	k.cancel(cause)
	l.lost(cause)
}
