package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strings"
	"time"
	"unicode"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// Options configure a Client. The zero value is ready to use: every field
// has a default.
type Options struct {
	// KeyPrefix is the fleet's key prefix (mutex.WithKeyPrefix); "" is
	// the default, "redcron".
	KeyPrefix string
	// Operator names who acts, in the pause key, the trigger's request and
	// each action's record in the job's ledger; "" is user@host of this
	// process. It must be printable, without "|".
	Operator string
	// AnyJob lets Pause, Resume, Trigger and History act on a name no live
	// replica publishes in its job table (a job not deployed yet, or one
	// gone). Without it they refuse such a name with an error matching
	// scheduler.ErrUnknownJob, and write nothing.
	AnyJob bool
	// NoLastRun makes Status read no job's last run (Job.LastRun is nil):
	// it reads each shard's ledger whole from every node, which costs much
	// with many jobs.
	NoLastRun bool
	// MaxAge makes Status report a lock acquired longer ago as an
	// over_age leak; 0 reports none.
	MaxAge time.Duration
	// MaxTTL is the fleet's max lock TTL (mutex.WithMaxTTL): a node whose
	// server started less than MaxTTL ago is warming up, its vote not
	// counted yet unless the fleet trusts its nodes. 0 is the default, 1m.
	MaxTTL time.Duration
	// LedgerRecords and LedgerWindow are the fleet's ledger settings
	// (mutex.WithLedger): an action's record trims the job's ledger to
	// them, as the locks' own records do. 0 records trims none by count; a
	// negative count says the fleet keeps no ledger, and no action is
	// recorded. A zero window is 7 days.
	LedgerRecords int
	LedgerWindow  time.Duration
	// Logger logs each action: who, what, on which job and how many
	// nodes; nil is silent.
	Logger *slog.Logger
}

// Client reads and steers the fleet whose independent Redis masters it is
// given: the jobs, replicas, nodes and leaks (Status), a job's history,
// pausing, resuming and triggering a job, and fixing leaks. It holds no
// lock and starts no goroutine; it is safe for concurrent use.
type Client struct {
	cl     *cluster.Cluster
	opts   Options
	who    string
	logger *slog.Logger
}

// New returns a Client of the fleet on nodes, every independent master the
// fleet's Redlocks use, in any order. It does no I/O. Its errors, for no
// node, a nil one, two of one name or a bad option, name the culprit and
// match mutex.ErrInvalidOption.
func New(nodes []*store.Node, opts Options) (*Client, error) {
	if len(nodes) == 0 {
		return nil, invalid("no node")
	}
	keys, err := engine.NewKeyspace(opts.KeyPrefix)
	if err != nil {
		return nil, invalid("KeyPrefix: %w", err)
	}
	cl := &cluster.Cluster{Keys: keys, MaxAge: opts.MaxAge, LedgerRecords: opts.LedgerRecords, LedgerWindow: opts.LedgerWindow}
	seen := map[string]bool{}
	for i, n := range nodes {
		if n == nil {
			return nil, invalid("node %d is nil", i)
		}
		en := (*engine.Node)(n)
		if seen[en.Name()] {
			return nil, invalid("node %q given twice", en.Name())
		}
		seen[en.Name()] = true
		cl.Nodes = append(cl.Nodes, en)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"MaxAge", opts.MaxAge}, {"MaxTTL", opts.MaxTTL}, {"LedgerWindow", opts.LedgerWindow}} {
		if d.d < 0 {
			return nil, invalid("%s: %v is negative", d.name, d.d)
		}
	}
	who := opts.Operator
	if who == "" {
		who = operator()
	} else if strings.ContainsFunc(who, func(r rune) bool { return r == '|' || !unicode.IsPrint(r) }) {
		return nil, fmt.Errorf("%w: admin.New: Operator %q: want printable text without \"|\"", mutex.ErrInvalidOption, who)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cl: cl, opts: opts, who: who, logger: logger}, nil
}

// operator names this process's user: user@host.
func operator() string {
	name := "?"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return strings.Map(func(r rune) rune {
		if r == '|' || !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, name+"@"+host)
}

// checkJob returns nil when job is a valid name that some live replica
// publishes, or when Options.AnyJob is set and the name is valid; else an
// error naming it, matching scheduler.ErrUnknownJob for a name no live
// replica publishes.
func (c *Client) checkJob(ctx context.Context, job string) error {
	if err := engine.CheckName(job); err != nil {
		return fmt.Errorf("%w: %w", scheduler.ErrInvalidJob, err)
	}
	if c.opts.AnyJob {
		return nil
	}
	err := c.cl.CheckJob(ctx, job)
	if errors.Is(err, cluster.ErrNoSuchJob) {
		return &unknownJob{err}
	}
	return err
}

// invalidOption is the error of New for a bad option or node, which it
// names; it matches mutex.ErrInvalidOption.
type invalidOption struct{ err error }

func (e *invalidOption) Error() string   { return "admin.New: " + e.err.Error() }
func (e *invalidOption) Unwrap() []error { return []error{mutex.ErrInvalidOption, e.err} }

// invalid returns New's error for a bad option or node, formatted as
// fmt.Errorf formats.
func invalid(format string, args ...any) error {
	return &invalidOption{fmt.Errorf(format, args...)}
}

// unknownJob is the error of an action on a name no live replica
// publishes: its text says "no such job", and it matches
// scheduler.ErrUnknownJob.
type unknownJob struct{ err error }

func (e *unknownJob) Error() string   { return e.err.Error() }
func (e *unknownJob) Unwrap() []error { return []error{scheduler.ErrUnknownJob, e.err} }

// nodeError is one node's error in an action: its text names the node.
type nodeError struct {
	node string
	err  error
}

func (e *nodeError) Error() string { return "node " + e.node + ": " + e.err.Error() }
func (e *nodeError) Unwrap() error { return e.err }

// perNode returns errs (one per node, nil where it went through) with each
// error naming its node.
func (c *Client) perNode(errs []error) []error {
	out := make([]error, len(c.cl.Nodes))
	for i, err := range errs {
		if err != nil && i < len(out) {
			out[i] = &nodeError{c.cl.Nodes[i].Name(), err}
		}
	}
	return out
}

// noMajority is the error of an action that fewer than a majority of the
// nodes took, or of a history read from fewer: it matches
// mutex.ErrNoQuorum.
type noMajority struct{ err error }

func (e *noMajority) Error() string   { return e.err.Error() }
func (e *noMajority) Unwrap() []error { return []error{mutex.ErrNoQuorum, e.err} }

// wrap returns err with the errors of internal/cluster matched by the
// scheduler's sentinels, prefixed by what (the action and its job).
func wrap(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrNoMajority):
		return &noMajority{fmt.Errorf("%s: %w", what, err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}
