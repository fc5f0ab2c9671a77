package mutex

import (
	"context"
	"fmt"
	"time"
)

// Reentrancy. Go has no thread identity, so the holder of a lock is the
// code running under its KeepAlive context: that context (and every
// context derived from it) carries the lock, and Lock or TryLock of the
// same name on the same Redlock with such a context acquires it again at
// once, without a call to the nodes, as a new handle on the same hold.
// Each handle is released once (Release is idempotent per handle); the
// lock is deleted from the nodes when the last of them is, and the first
// handle's KeepAlive keeps it alive for all of them until then.

// heldKey is the key under which a KeepAlive context carries its lock.
type heldKey struct {
	r    *Redlock
	name string
}

// withHeld returns ctx carrying l as held, for reentrant acquisitions; a
// part (claimed in bulk) and a lock of an occurrence are not carried.
func (l *Lock) withHeld(ctx context.Context) context.Context {
	if l.parent != nil || l.occurrence != 0 {
		return ctx
	}
	return context.WithValue(ctx, heldKey{l.r, l.keys.Name}, l)
}

// reenter returns a new handle on the lock called name that ctx carries
// as held (see withHeld), counted as one more hold, and true; or false when
// ctx carries none that lc may reenter: a request that claims an
// occurrence, asks for permits or names another owner acquires as usual.
// A carried lock that is lost or released is refused with ErrLost.
func (r *Redlock) reenter(ctx context.Context, name string, lc lockConfig) (*Lock, bool, error) {
	held, _ := ctx.Value(heldKey{r, name}).(*Lock)
	if held == nil || lc.occurrence != 0 || lc.permits > 0 || lc.owner != held.owner {
		return nil, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, true, fmt.Errorf("%w: reenter %q: %w", ErrNotAcquired, name, context.Cause(ctx))
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	switch {
	case held.released || held.keep == nil:
		return nil, true, fmt.Errorf("%w: reenter %q: the lock the context carries was released", ErrLost, name)
	case held.keep.ctx.Err() != nil:
		return nil, true, fmt.Errorf("%w: reenter %q: the lock the context carries is no longer kept alive: %w", ErrLost, name, context.Cause(held.keep.ctx))
	case !time.Now().Before(held.until):
		return nil, true, fmt.Errorf("%w: reenter %q: the validity of the lock the context carries ran out", ErrLost, name)
	}
	held.reentries++
	return &Lock{r: r, keys: held.keys, value: held.value, fence: held.fence, owner: held.owner,
		ttl: held.ttl, acquired: held.acquired, base: held}, true, nil
}

// releaseReentered releases a reentrant handle: one hold less on its
// base, which is released on the nodes if its own Release came already
// and this was the last hold.
func (l *Lock) releaseReentered(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released = true
	k := l.keep
	l.mu.Unlock()
	if k != nil {
		k.stop()
	}
	b := l.base
	b.mu.Lock()
	b.reentries--
	last := b.reentries == 0 && b.deferred
	b.mu.Unlock()
	if !last {
		return nil
	}
	return b.Release(ctx)
}

// extendReentered is Extend for a reentrant handle: its base's, unless
// this handle was released.
func (l *Lock) extendReentered(ctx context.Context) error {
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return fmt.Errorf("%w: extend %q: released by this handle", ErrLost, l.keys.Name)
	}
	return l.base.Extend(ctx)
}

// reenteredKeepAlive is KeepAlive for a reentrant handle: its base's
// keepalive extends the lock; the context returned is derived from ctx and
// ends with the base's keepalive context (with its cause), with this
// handle's release, or with stop.
func (l *Lock) reenteredKeepAlive(ctx context.Context) (context.Context, func()) {
	k, cancel, ok := l.keptBy(l.base.withHeld(ctx))
	if !ok {
		return k.ctx, k.stop
	}
	l.base.mu.Lock()
	bk := l.base.keep
	l.base.mu.Unlock()
	detach := context.AfterFunc(bk.ctx, func() { cancel(context.Cause(bk.ctx)) })
	k.cancel = func(cause error) {
		detach()
		cancel(cause)
	}
	return k.ctx, k.stop
}
