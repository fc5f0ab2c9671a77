package shard

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/mutex"
)

// anchorName returns the name of the replica's anchor.
func (k *Keeper) anchorName() string {
	name := "replica-" + k.self
	if engine.CheckName(name) != nil {
		h := fnv.New64a()
		h.Write([]byte(k.self))
		name = fmt.Sprintf("replica-%016x", h.Sum64())
	}
	return name
}

// keepAnchor wins the replica's anchor if it holds none (or lost it), and
// keeps it alive: the runs of ticks claimed as parts live under it, so
// that they outlive a hand-over of their shard; a lost anchor ends them
// (their contexts are cancelled) and a new one is won for the next. Until
// it holds one, its shards' ticks are claimed each with its own lock.
func (k *Keeper) keepAnchor(ctx context.Context) {
	if a := k.anchor; a != nil {
		if a.ctx.Err() == nil {
			return
		}
		k.log.LogAttrs(ctx, slog.LevelWarn, "replica anchor lost: the runs claimed under it are cancelled", slog.Any("error", context.Cause(a.ctx)))
		k.gate.anchor.Store(nil)
		a.stop()
		k.anchor = nil
		k.letGo(ctx, a.lock)
	}
	actx, cancel := context.WithTimeout(ctx, k.ttl/2)
	lock, err := k.locks.TryLock(actx, k.anchorName(), k.ttl, mutex.Owner(k.self))
	cancel()
	if err != nil {
		k.logFailure(ctx, -1, err)
		return
	}
	lctx, stop := lock.KeepAlive(context.WithoutCancel(ctx))
	k.anchor = &lease{lock: lock, ctx: lctx, stop: stop}
	k.gate.anchor.Store(lock)
}

// Close releases the replica's anchor: call it once the scheduler's runs
// have ended (the runs claimed as parts live under it).
func (k *Keeper) Close(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	a := k.anchor
	if a == nil {
		return
	}
	k.gate.anchor.Store(nil)
	k.anchor = nil
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.ttl/2)
	defer cancel()
	_ = a.lock.Release(rctx)
}
