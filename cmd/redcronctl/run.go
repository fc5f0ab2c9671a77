package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/redact"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// Exit statuses.
const (
	exitClean = 0 // no leak, every node scanned
	exitLeaks = 1 // leaks were found
	exitError = 2 // bad flags, no node scanned, or a partial scan without leaks
)

// Per-node client settings: small, so that a dead node costs little of
// the overall -timeout (whose context deadline the clients also honour).
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 2 * time.Second
)

// Reasons a copy was left alone by -fix.
const (
	reasonChanged   = "changed"    // the value changed since the scan, or the key is gone
	reasonNotString = "not_string" // not a string: cannot be compared, never deleted
	reasonError     = "error"      // the node failed; see the error
)

// result is what run found and did, ready to be printed. Every error
// text in it has been redacted.
type result struct {
	st         *admin.Status
	found      []finding   // the leaks, by name
	nodeErrors []nodeError // in -addrs order
	fixRan     bool        // -fix was given
	fixed      []fixOutcome
	now        time.Time           // when the scan ended; ages are measured from it
	hide       func(string) string // for the nodes' names in the copies
}

// nodeError is a node that could not be scanned.
type nodeError struct {
	Node string
	Err  string
}

// fixOutcome is what -fix did with one copy.
type fixOutcome struct {
	Node, Key string
	Deleted   bool
	Reason    string // when not deleted: reasonChanged, reasonNotString or reasonError
	Err       string // with reasonError
}

// run parses args (with env for the environment), scans the nodes, fixes
// the leaks if asked, prints the report to stdout and problems to stderr,
// and returns the exit status.
func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, env, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitClean
	}
	if err != nil {
		var ue *usageError
		if !errors.As(err, &ue) || !ue.printed {
			fmt.Fprintf(stderr, "redcronctl: %s\n", redact.New(nil, env(envPassword)).Redact(err.Error()))
		}
		return exitError
	}
	// From here on, every text that may carry a server's, a client's or a
	// job's words, and every address, goes through hide before it is
	// printed.
	hide := redact.New(nil, cfg.password).Redact

	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	nodes, closeAll, err := dial(cfg)
	defer closeAll()
	if err != nil {
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	c, err := admin.New(nodes, admin.Options{KeyPrefix: cfg.prefix, AnyJob: cfg.force, MaxAge: cfg.maxAge})
	if err != nil {
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	a := &cmd{cfg: cfg, c: c, stdout: stdout, stderr: stderr, hide: hide}
	act := map[string]func(context.Context) int{"pause": a.pause, "resume": a.pause, "history": a.history, "trigger": a.trigger}[cfg.command]
	switch {
	case act != nil && cfg.tag != "":
		return a.eachTagged(ctx, act)
	case act != nil:
		return act(ctx)
	case cfg.command == "status":
		return a.status(ctx)
	}
	return a.leaks(ctx)
}

// eachTagged runs act once for each job tagged -tag (admin.Client.Tagged),
// in name order, and returns the worst exit status. When the job tables
// of some live replicas could not be read, it acts on the jobs found and
// exits 2.
func (a *cmd) eachTagged(ctx context.Context, act func(context.Context) int) int {
	jobs, err := a.c.Tagged(ctx, a.cfg.tag)
	code := exitClean
	if err != nil {
		fmt.Fprintf(a.stderr, "redcronctl: %s\n", a.hide(err.Error()))
		code = exitError
	}
	for _, job := range jobs {
		a.cfg.job = job
		code = max(code, act(ctx))
	}
	return code
}

// cmd is a run of a command over its client.
type cmd struct {
	cfg            *config
	c              *admin.Client
	stdout, stderr io.Writer
	hide           func(string) string
}

// noSuchJob prints the error of an action refused for a name no live
// replica publishes, or that could not tell, and reports whether it did.
func (a *cmd) noSuchJob(err error) bool {
	if !errors.Is(err, scheduler.ErrUnknownJob) {
		return false
	}
	anyway := a.cfg.command + " it anyway"
	if a.cfg.command == "history" {
		anyway = "show its history anyway"
	}
	fmt.Fprintf(a.stderr, "redcronctl: %s (-force: %s)\n", a.hide(err.Error()), anyway)
	return true
}

// leaks scans the nodes for leaks, fixes them with -fix, and prints the
// report.
func (a *cmd) leaks(ctx context.Context) int {
	cfg := a.cfg
	st, scanErr := a.c.Status(ctx)
	res := &result{st: st, found: findings(st.Leaks), now: time.Now(), fixRan: cfg.fix, hide: a.hide}
	for _, n := range st.Nodes { // in -addrs order
		if n.ScanErr != nil {
			res.nodeErrors = append(res.nodeErrors, nodeError{Node: a.hide(n.Name), Err: a.hide(n.ScanErr.Error())})
		}
	}
	for _, ne := range res.nodeErrors {
		fmt.Fprintf(a.stderr, "redcronctl: node %s not scanned: %s\n", ne.Node, ne.Err)
	}
	if scanErr != nil {
		fmt.Fprintf(a.stderr, "redcronctl: no node could be scanned (%s configured); nothing to report\n", plural(len(st.Nodes), "node", "nodes"))
		return exitError
	}
	if cfg.fix && len(res.found) > 0 {
		res.fixed = a.fix(ctx, st.Leaks)
	}
	var err error
	if cfg.json {
		err = writeJSON(a.stdout, res)
	} else {
		err = writeTable(a.stdout, res)
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "redcronctl: writing the report: %s\n", a.hide(err.Error()))
		return exitError
	}
	switch {
	case len(res.found) > 0:
		return exitLeaks
	case len(res.nodeErrors) > 0:
		fmt.Fprintf(a.stderr, "redcronctl: %d of %s not scanned: the scan is incomplete\n", len(res.nodeErrors), plural(len(st.Nodes), "node", "nodes"))
		return exitError
	}
	return exitClean
}

// dial returns a node per address, each over its own client, and a
// function that closes the clients (also when dial fails).
func dial(cfg *config) ([]*store.Node, func(), error) {
	var clients []*redis.Client
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	nodes := make([]*store.Node, 0, len(cfg.addrs))
	for _, addr := range cfg.addrs {
		opt := &redis.Options{
			Addr:                  addr,
			Username:              cfg.username,
			Password:              cfg.password,
			DialTimeout:           dialTimeout,
			ReadTimeout:           ioTimeout,
			WriteTimeout:          ioTimeout,
			ContextTimeoutEnabled: true,
			MaxRetries:            -1, // a node that fails is reported, not retried
			DialerRetries:         1,  // one dial attempt per connection
			PoolSize:              4,
		}
		if cfg.tls != nil {
			opt.TLSConfig = cfg.tls.Clone()
		}
		c := redis.NewClient(opt)
		clients = append(clients, c)
		n, err := store.NewNode(addr, c)
		if err != nil {
			return nil, closeAll, err
		}
		nodes = append(nodes, n)
	}
	return nodes, closeAll, nil
}

// fix deletes the leaked copies by compare-and-delete and says, for each
// copy left alone, why; each job whose lock or state lost a copy has the
// fix in its ledger, by the operator.
func (a *cmd) fix(ctx context.Context, found []admin.Leak) []fixOutcome {
	fixed, _ := a.c.FixLeaks(ctx, found) // each node's error is in its copy's outcome
	out := make([]fixOutcome, 0, len(fixed))
	for _, l := range fixed {
		o := fixOutcome{Node: a.hide(l.Node), Key: l.Key, Deleted: l.Deleted, Reason: l.Reason}
		if l.Err != nil {
			o.Err = a.hide(l.Err.Error())
		}
		out = append(out, o)
	}
	return out
}
