// Package parts carries, in a context, the locks under which a
// mutex.Redlock's TryLockAll claims occurrences as parts: locks without a
// key of their own, claimed by the holder of a right and held while their
// parent is (see mutex's part.go). The shard gate passes its shards'
// leases (the rights) and its replica's anchor (the parent) this way, so
// that a shard's due ticks are claimed in one script call per node,
// without an exported name for our own wiring; and ErrBehind tells the
// scheduler which of the gate's answers mean its replica fell behind.
package parts

import (
	"context"
	"errors"
)

// Of returns, for a lock's name, the right to claim it as a part and the
// parent to hold it under (each a *mutex.Lock held by a Redlock over the
// same nodes), or nils for a lock acquired on its own.
type Of func(name string) (right, parent any)

type key struct{}

// With returns ctx carrying of.
func With(ctx context.Context, of Of) context.Context {
	return context.WithValue(ctx, key{}, of)
}

// From returns the Of ctx carries, or nil.
func From(ctx context.Context) Of {
	of, _ := ctx.Value(key{}).(Of)
	return of
}

// ErrBehind marks the shard gate's answers to a tick its replica could
// not claim in time because its claims of the tick's shard were behind:
// its shard's claim was in flight, and the tick waited behind it until its
// job's next tick or its grace came. The scheduler reports such a tick
// skipped as "overload" rather than "no_quorum": the nodes are not at
// fault, the replica's load is.
var ErrBehind = errors.New("the replica's claims of the tick's shard were behind")
