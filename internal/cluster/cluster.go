package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/ledger"
)

// ErrNoMajority is matched by the error of an action that reached fewer
// than a majority of the nodes, and of a history read from fewer.
var ErrNoMajority = errors.New("not a majority of the nodes")

// Defaults of an operator's record's trim: no trim by count, and the
// default ledger window (mutex.WithLedger), which is also the TTL it gives
// a ledger that had none (a job that never ran).
const (
	allRecords    = 1 << 30
	defaultWindow = 7 * 24 * time.Hour
)

// Cluster is a fleet's nodes under one key prefix. Its fields are set by
// the caller; it is safe for concurrent use.
type Cluster struct {
	Nodes []*engine.Node
	Keys  engine.Keyspace
	// MaxAge is the leak scan's over-age limit (0: none): see
	// leaks.Scanner.
	MaxAge time.Duration
	// LedgerRecords and LedgerWindow are how many records each job's
	// ledger keeps and for how long (mutex.WithLedger): an operator's
	// record trims the ledger to them, as the lock's own writes do. Zero
	// records: trim none by count (the admin command does not know them);
	// a zero window: 7 days. A negative count: the fleet keeps no ledger,
	// and no action is recorded.
	LedgerRecords int
	LedgerWindow  time.Duration
}

// Quorum returns how many nodes a majority is.
func (c *Cluster) Quorum() int { return len(c.Nodes)/2 + 1 }

// Scanner returns a leak scanner over the nodes.
func (c *Cluster) Scanner() *leaks.Scanner {
	return &leaks.Scanner{Nodes: c.Nodes, Keys: c.Keys, Quorum: c.Quorum(), MaxAge: c.MaxAge}
}

// History returns up to count of the newest records of the job's ledger,
// merged over the nodes (runs, missed ticks and operators' actions), and
// each node's error (nil for a node read). Its error is for a bad name, or
// matches ErrNoMajority when fewer than a majority of the nodes could be
// read: the history could miss runs (the records read are returned).
func (c *Cluster) History(ctx context.Context, job string, count int) ([]ledger.Run, []error, error) {
	lk, err := c.Keys.Lock(job)
	if err != nil {
		return nil, nil, err
	}
	runs, errs := ledger.Read(ctx, c.Nodes, lk, count)
	if read := engine.Answered(errs); read < c.Quorum() {
		return runs, errs, fmt.Errorf("%w: %d of %d nodes read", ErrNoMajority, read, len(c.Nodes))
	}
	return runs, errs, nil
}

// record adds an operator's action on the job to its ledger on every node,
// and returns on how many nodes it did.
func (c *Cluster) record(ctx context.Context, lk engine.LockKeys, r engine.Record) int {
	records, window := c.LedgerRecords, c.LedgerWindow
	switch {
	case records < 0:
		return 0
	case records == 0:
		records = allRecords
	}
	if window <= 0 {
		window = defaultWindow
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	errs := c.onEveryNode(func(_ int, n *engine.Node) error { return n.AddOperator(ctx, lk, r, records, window) })
	return engine.Answered(errs)
}

// onEveryNode calls f on every node in parallel and returns the errors, in
// the nodes' order.
func (c *Cluster) onEveryNode(f func(int, *engine.Node) error) []error {
	return engine.OnEach(c.Nodes, f)
}
