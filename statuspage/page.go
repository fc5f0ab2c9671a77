package statuspage

import (
	"context"
	"html/template"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/redact"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
)

// Timing of the page's reads.
const (
	readTimeout = 2 * time.Second // bound on a page view's reads
	freshFor    = 5 * time.Second // a scan, or a job's history, serves every view within this
	refreshMS   = 3000            // the pages fetch their fragment this often
	recentRuns  = 5               // each job's newest runs on the main page
	historyRuns = 50              // the records of a job's page
)

// statusPage is the status page of the fleet whose nodes a Redlock reaches:
// the http.Handler New returns, safe for concurrent use.
type statusPage struct {
	locks    *mutex.Redlock
	logNodes func(context.Context) // the Redlock's: it notes the nodes' states
	maxTTL   time.Duration         // the Redlock's: a node warms up for it
	// admin reads the fleet (its status, a job's history) with opts; an
	// action acts through a Client of its operator's (as).
	admin *admin.Client
	opts  admin.Options
	nodes []*store.Node
	// cl makes the reads of the page's own: the newest runs of the jobs a
	// view shows, and the ticks missed in the last hour.
	cl      *cluster.Cluster
	cfg     config
	tmpl    *template.Template
	hide    func(string) string // takes the nodes' secrets out of a text
	handler http.Handler
	started time.Time // a node whose server started after this has restarted
	// untrusted is set once the Redlock was seen to count a node as
	// warming up: it does not trust its nodes.
	untrusted atomic.Bool

	mu      sync.Mutex // held while a scan is under way: views share it
	last    *snapshot
	lastAt  time.Time
	lastErr error
	nodeErr map[string]nodeError // each node's last error, by name

	histMu sync.Mutex // held while a history is read: views of a job share it
	hist   map[string]history
}

// history is a job's history as last read, for the views within freshFor.
type history struct {
	at   time.Time
	runs []admin.Record
	err  error
}

// maxHistories bounds the histories kept for reuse.
const maxHistories = 256

// history returns the job's history, from a read at most freshFor old.
func (p *statusPage) history(ctx context.Context, name string) ([]admin.Record, error) {
	p.histMu.Lock()
	defer p.histMu.Unlock()
	if h, ok := p.hist[name]; ok && time.Since(h.at) < freshFor {
		return h.runs, h.err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	runs, _, err := p.admin.History(ctx, name, historyRuns)
	if p.hist == nil || len(p.hist) >= maxHistories {
		p.hist = map[string]history{}
	}
	p.hist[name] = history{at: time.Now(), runs: runs, err: err}
	return runs, err
}

// nodeError is a node's last error and when it was seen.
type nodeError struct {
	text string
	at   time.Time
}

// New returns the status page of the nodes of locks, under its key prefix:
// an http.Handler, safe for concurrent use, which serves GET / (whether the
// fleet runs; jobs, skipped ticks, runs, nodes, replicas, leaks), GET
// /job/{name} (a job's history), GET /login (the sign-in link, with
// WithAuthorize), and the actions, POST /job/{name}/pause, /resume,
// /trigger and POST /leaks/fix, each answered with a redirect (303) back to
// the page it came from. It does no I/O. Its errors, for a bad option or
// argument, name it and match mutex.ErrInvalidOption.
func New(locks *mutex.Redlock, opts ...Option) (http.Handler, error) {
	if locks == nil {
		return nil, invalid("New: nil Redlock")
	}
	cfg := config{logger: slog.New(slog.DiscardHandler)}
	for i, o := range opts {
		if o == nil {
			return nil, invalid("option %d is nil", i)
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	// The page checks the names itself (knows: this replica's jobs too),
	// and reads the jobs' runs for the rows it shows alone (withRuns).
	w := lockwire.Of(locks)
	ao := admin.Options{KeyPrefix: w.KeyPrefix, AnyJob: true, NoLastRun: true, MaxAge: w.MaxHold, MaxTTL: w.MaxTTL,
		LedgerRecords: w.LedgerRecords, LedgerWindow: w.LedgerWindow}
	if ao.LedgerRecords == 0 {
		ao.LedgerRecords = -1 // no ledger: nothing to record in
	}
	nodes := make([]*store.Node, len(w.Nodes))
	for i, n := range w.Nodes {
		nodes[i] = (*store.Node)(n)
	}
	ac, err := admin.New(nodes, ao)
	if err != nil {
		return nil, invalid("%w", err)
	}
	keys, err := engine.NewKeyspace(w.KeyPrefix)
	if err != nil {
		return nil, invalid("%w", err)
	}
	cl := &cluster.Cluster{Keys: keys, Nodes: w.Nodes}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	p := &statusPage{locks: locks, logNodes: w.LogNodes, maxTTL: w.MaxTTL, admin: ac, opts: ao, nodes: nodes, cl: cl, cfg: cfg, tmpl: tmpl, hide: redact.New(cl.Nodes).Redact,
		started: time.Now(), nodeErr: map[string]nodeError{}}
	p.handler = p.routes()
	return p, nil
}

// ServeHTTP serves the pages (see New).
func (p *statusPage) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.handler.ServeHTTP(w, r) }

// routes returns the page's handler: its routes, behind the protection
// against cross-origin requests.
func (p *statusPage) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", p.serveMain)
	mux.HandleFunc("GET /login", p.serveLogin)
	mux.HandleFunc("GET /job/{name}", p.serveJob)
	mux.HandleFunc("POST /job/{name}/{action}", p.serveJobAction)
	mux.HandleFunc("POST /tag/{tag}/{action}", p.serveTagAction)
	mux.HandleFunc("POST /leaks/fix", p.serveFix)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.cfg.logger.LogAttrs(r.Context(), slog.LevelWarn, "status page: cross-origin request refused",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("origin", r.Header.Get("Origin")))
		p.fail(w, r, http.StatusForbidden, "This request came from another site: refused.")
	}))
	return cop.Handler(mux)
}

// snapshot is the fleet as one scan shows it (with the jobs the live
// replicas publish: Status.Published), and what the page reads besides:
// the ticks missed in the last hour.
type snapshot struct {
	*admin.Status
	Missed map[string]int // by job: ticks recorded missed in the last hour
	At     time.Time      // when the scan ended: the nodes' uptimes are as of then
	// Seen is each node's state as the Redlock saw it when it had just
	// looked (its lock calls note states too: a warming node's answer
	// that another owner holds a lock shows it up).
	Seen map[string]string

	scanned bool                      // the scan read some node: the jobs' runs can be read
	runsMu  sync.Mutex                // held while runs are read: views of the scan share them
	runs    map[string][]admin.Record // each job's newest runs read so far, by name
}

// missedWindow is how far back the headline counts missed ticks.
const missedWindow = time.Hour

// status returns the fleet's status, from a scan at most freshFor old: one
// view scans, the views that come meanwhile wait for it. Its reads are
// bounded by readTimeout.
func (p *statusPage) status(ctx context.Context) (*snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != nil && time.Since(p.lastAt) < freshFor {
		return p.last, p.lastErr
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	// Have the Redlock look at the nodes, as its heartbeats do, so that
	// the nodes' states are as it counts their votes now.
	var wg sync.WaitGroup
	wg.Go(func() { p.logNodes(ctx) })
	ast, err := p.admin.Status(ctx) // the runs of the jobs shown alone are read: withRuns
	st := &snapshot{Status: ast, At: time.Now(), runs: map[string][]admin.Record{}}
	wg.Wait()
	st.Seen = p.locks.NodeStates()
	for _, state := range st.Seen {
		if state == cluster.NodeWarming {
			p.untrusted.Store(true) // a Redlock that trusts its nodes never sees one warming up
		}
	}
	if err == nil {
		st.scanned = true
		p.readMissed(ctx, st)
	}
	now := time.Now()
	for _, n := range st.Nodes {
		// A node that answers but has no INFO (an in-process server) is
		// up: its INFO error is no error of the node's.
		if n.Err != nil && (n.State == cluster.NodeDown || n.State == cluster.NodeRefused) {
			p.nodeErr[n.Name] = nodeError{text: p.hide(n.Err.Error()), at: now}
		}
	}
	for _, n := range st.Nodes {
		if n.ScanErr != nil {
			p.nodeErr[n.Name] = nodeError{text: p.hide(n.ScanErr.Error()), at: now}
		}
	}
	if err != nil {
		p.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "status page: no node could be read", slog.String("error", p.hide(err.Error())))
	}
	p.last, p.lastAt, p.lastErr = st, now, err
	return st, err
}

// readMissed reads the ticks missed in the last hour of the jobs the live
// replicas publish and of this replica's.
func (p *statusPage) readMissed(ctx context.Context, st *snapshot) {
	var names []string
	seen := map[string]bool{}
	for _, j := range st.Jobs {
		if j.Publishers > 0 {
			names, seen[j.Name] = append(names, j.Name), true
		}
	}
	if p.cfg.jobs != nil {
		for _, e := range p.cfg.jobs() {
			if !seen[e.Name] {
				names, seen[e.Name] = append(names, e.Name), true
			}
		}
	}
	var readable []*engine.Node // the nodes the scan read
	for i, n := range st.Nodes {
		if n.ScanErr == nil {
			readable = append(readable, p.cl.Nodes[i])
		}
	}
	st.Missed = p.cl.MissedSince(ctx, readable, names, time.Now().Add(-missedWindow))
}

// as returns a Client whose actions are by who.
func (p *statusPage) as(who string) (*admin.Client, error) {
	opts := p.opts
	opts.Operator = who
	return admin.New(p.nodes, opts)
}

// forget drops the last scan, so that the next view shows an action's
// effect.
func (p *statusPage) forget() {
	p.mu.Lock()
	p.last = nil
	p.mu.Unlock()
	p.histMu.Lock()
	p.hist = nil
	p.histMu.Unlock()
}

// lastError returns a node's last error, and when it was seen.
func (p *statusPage) lastError(node string) nodeError {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nodeErr[node]
}
