// Package lockwire hands redcron's own packages what they need of a
// mutex.Redlock beyond the API its users call: its nodes, key prefix and
// limits, its probe of the nodes and its check of a lock request. The
// leak scanner, the status page, the fleet's housekeeping, the shard
// keeper and the scheduler's Redlock adapter are built over a Redlock and
// read these. A Redlock fills the Redlock found in the context of its
// Flush, at once and without I/O, instead of flushing: so this wiring of
// ours adds no exported name to package mutex, as internal/parts and
// internal/outcome carry theirs in the contexts of TryLockAll and Release.
package lockwire

import (
	"context"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// Redlock is what a mutex.Redlock hands to redcron's own packages.
type Redlock struct {
	Nodes     []*engine.Node // in the order given to mutex.New
	KeyPrefix string         // the prefix of the locks' keys (mutex.WithKeyPrefix)
	MaxTTL    time.Duration  // the largest TTL a lock may ask for (mutex.WithMaxTTL)
	MaxHold   time.Duration  // how long KeepAlive extends one lock (mutex.WithMaxHold)
	// LedgerRecords and LedgerWindow are how many records each lock's
	// ledger keeps and for how long (mutex.WithLedger); 0 records: none.
	LedgerRecords int
	LedgerWindow  time.Duration
	// LogNodes asks every node about its server (INFO), notes its state
	// (mutex.Redlock.NodeStates) and logs it when it changed; it takes at
	// most four node timeouts.
	LogNodes func(context.Context)
	// Check reports, without I/O, whether TryLock and Lock would accept
	// name and ttl, and occurrences claimed up to lead before them and up
	// to reach after them, with the error (matching
	// mutex.ErrInvalidOption) they would return.
	Check func(name string, ttl, lead, reach time.Duration) error
}

type key struct{}

// NewContext returns a copy of ctx that carries w, for a Redlock's Flush
// to fill.
func NewContext(ctx context.Context, w *Redlock) context.Context {
	return context.WithValue(ctx, key{}, w)
}

// FromContext returns the Redlock ctx carries, or nil.
func FromContext(ctx context.Context) *Redlock {
	w, _ := ctx.Value(key{}).(*Redlock)
	return w
}

type ticketsKey struct{}

// WithTickets returns a copy of ctx that carries the tickets of trigger
// requests (by lock name) for a Redlock's TryLock or TryLockAll to take:
// an acquisition of a lock with a ticket must find it in the lock's
// trigger key on a majority of the nodes, and its commit takes it there,
// so that one acquisition at most ever has it (else it fails, a
// QuorumError of Op "commit"); its ledger record carries the ticket. The
// scheduler's Redlock adapter passes its requests' tickets this way.
func WithTickets(ctx context.Context, tickets map[string]string) context.Context {
	return context.WithValue(ctx, ticketsKey{}, tickets)
}

// Ticket returns the ticket ctx carries for the lock called name, or "".
func Ticket(ctx context.Context, name string) string {
	tickets, _ := ctx.Value(ticketsKey{}).(map[string]string)
	return tickets[name]
}

// Flusher is a *mutex.Redlock, as Of sees it (package mutex imports this
// one).
type Flusher interface {
	Flush(ctx context.Context) error
}

// Of returns what the Redlock r hands over. r must not be nil.
func Of(r Flusher) *Redlock {
	w := &Redlock{}
	_ = r.Flush(NewContext(context.Background(), w))
	return w
}
