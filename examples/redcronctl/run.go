package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/redact"
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
	rep        *leaks.Report
	addrs      []string // the nodes, in -addrs order: the order of copies and errors
	nodeErrors []nodeError
	fixRan     bool                // -fix was given
	fixed      []fixOutcome        // one per copy of each leak, with -fix
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
	hide = redact.New(nodes, cfg.password).Redact
	keys, err := engine.NewKeyspace(cfg.prefix)
	if err != nil {
		fmt.Fprintf(stderr, "redcronctl: %s\n", hide(err.Error()))
		return exitError
	}
	cl := &cluster.Cluster{Nodes: nodes, Keys: keys, MaxAge: cfg.maxAge}
	if cfg.job != "" && !cfg.force {
		if err := cl.CheckJob(ctx, cfg.job); err != nil {
			anyway := cfg.command + " it anyway"
			if cfg.command == "history" {
				anyway = "show its history anyway"
			}
			fmt.Fprintf(stderr, "redcronctl: %s (-force: %s)\n", hide(err.Error()), anyway)
			return exitError
		}
	}
	switch cfg.command {
	case "pause", "resume":
		return pause(ctx, cfg, cl, stdout, stderr, hide)
	case "status":
		return status(ctx, cfg, cl, stdout, stderr, hide)
	case "history":
		return history(ctx, cfg, cl, stdout, stderr, hide)
	case "trigger":
		return trigger(ctx, cfg, cl, stdout, stderr, hide)
	}
	rep, scanErr := cl.Scanner().Scan(ctx)
	res := &result{rep: rep, addrs: cfg.addrs, now: time.Now(), fixRan: cfg.fix, hide: hide}
	for _, e := range rep.Errors {
		ne := nodeError{Err: hide(e.Error())}
		if se := (*engine.Error)(nil); errors.As(e, &se) {
			ne.Node = hide(se.Node)
		}
		res.nodeErrors = append(res.nodeErrors, ne)
	}
	// In the order of -addrs, not of completion.
	slices.SortStableFunc(res.nodeErrors, func(a, b nodeError) int {
		return cmp.Compare(slices.Index(cfg.addrs, a.Node), slices.Index(cfg.addrs, b.Node))
	})
	for _, ne := range res.nodeErrors {
		fmt.Fprintf(stderr, "redcronctl: node %s not scanned: %s\n", ne.Node, ne.Err)
	}
	if scanErr != nil {
		fmt.Fprintf(stderr, "redcronctl: no node could be scanned (%s configured); nothing to report\n", plural(len(nodes), "node", "nodes"))
		return exitError
	}

	found := rep.Leaks()
	if cfg.fix && len(found) > 0 {
		res.fixed = fix(ctx, cl, rep, hide)
	}

	if cfg.json {
		err = writeJSON(stdout, res)
	} else {
		err = writeTable(stdout, res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "redcronctl: writing the report: %s\n", hide(err.Error()))
		return exitError
	}
	switch {
	case len(found) > 0:
		return exitLeaks
	case len(rep.Errors) > 0:
		fmt.Fprintf(stderr, "redcronctl: %d of %s not scanned: the scan is incomplete\n", len(rep.Errors), plural(rep.Nodes, "node", "nodes"))
		return exitError
	}
	return exitClean
}

// dial returns a node per address, each over its own client, and a
// function that closes the clients (also when dial fails).
func dial(cfg *config) ([]*engine.Node, func(), error) {
	var clients []*redis.Client
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	nodes := make([]*engine.Node, 0, len(cfg.addrs))
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
		n, err := engine.NewNode(addr, c)
		if err != nil {
			return nil, closeAll, err
		}
		nodes = append(nodes, n)
	}
	return nodes, closeAll, nil
}

// fix deletes the copies of the report's leaks by compare-and-delete and
// says, for each copy left alone, why; each job whose lock or state lost a
// copy has the fix in its ledger, by the operator.
func fix(ctx context.Context, cl *cluster.Cluster, rep *leaks.Report, hide func(string) string) []fixOutcome {
	type nodeKey struct{ node, key string }
	types := map[nodeKey]string{}
	for _, f := range rep.Leaks() {
		for _, c := range f.Copies {
			types[nodeKey{c.Node, c.Key}] = c.Type
		}
	}
	results := cl.Fix(ctx, rep, who())
	out := make([]fixOutcome, 0, len(results))
	for _, r := range results {
		o := fixOutcome{Node: hide(r.Node), Key: r.Key, Deleted: r.Deleted}
		switch {
		case r.Err != nil:
			o.Reason, o.Err = reasonError, hide(r.Err.Error())
		case r.Deleted:
		case types[nodeKey{r.Node, r.Key}] != "string" && types[nodeKey{r.Node, r.Key}] != "none":
			// "none": the key vanished between SCAN and the read.
			o.Reason = reasonNotString
		default:
			o.Reason = reasonChanged
		}
		out = append(out, o)
	}
	return out
}
