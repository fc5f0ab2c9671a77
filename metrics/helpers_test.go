package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/metrics"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// TestMain silences go-redis's logging of the failed dials that the
// tests' killed and stopped servers cause on purpose.
func TestMain(m *testing.M) {
	redistest.QuietClients()
	os.Exit(m.Run())
}

// waitTimeout bounds every wait for real ticks, scans and node failures.
const waitTimeout = 20 * time.Second

// newCollector returns a Collector registered on a pedantic registry, which
// checks at every Gather that what is collected matches what is described.
func newCollector(t *testing.T, opts ...metrics.Option) (*metrics.Collector, *prometheus.Registry) {
	t.Helper()
	m, err := metrics.New(opts...)
	if err != nil {
		t.Fatalf("metrics.New: %v", err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return m, reg
}

// m2g returns a Gatherer of c alone.
func m2g(c prometheus.Collector) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return reg
}

// cluster is k real redis-servers and a store.Node for each, named after
// its address.
type cluster struct {
	servers *redistest.Cluster
	nodes   []*store.Node
	names   []string
}

func startCluster(t *testing.T, k int) *cluster {
	t.Helper()
	c := &cluster{servers: redistest.Start(t, k)}
	for _, s := range c.servers.Nodes() {
		n, err := store.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
		c.names = append(c.names, s.Addr())
	}
	return c
}

// redlock returns a Redlock over the cluster's nodes reporting to m. The
// servers are fresh, so they are trusted unless opts say otherwise; the node
// timeout is generous so that a loaded machine (-race) does not turn
// answers into timeouts.
func (c *cluster) redlock(t *testing.T, m *metrics.Collector, opts ...mutex.Option) *mutex.Redlock {
	t.Helper()
	opts = append([]mutex.Option{mutex.WithTrustedNodes(), mutex.WithNodeTimeout(time.Second),
		mutex.WithObserver(m.LockObserver())}, opts...)
	r, err := mutex.New(c.nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// set sets key to value with ttl (0: none) on the first n servers.
func (c *cluster) set(t *testing.T, n int, key, value string, ttl time.Duration) {
	t.Helper()
	for _, node := range c.nodes[:n] {
		if err := (*engine.Node)(node).Client().Set(context.Background(), key, value, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// del deletes key on every server.
func (c *cluster) del(t *testing.T, key string) {
	t.Helper()
	for _, node := range c.nodes {
		if err := (*engine.Node)(node).Client().Del(context.Background(), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// newScheduler returns a Scheduler over l reporting to m, with six-field
// specs.
func newScheduler(t *testing.T, l scheduler.Locker, m *metrics.Collector, opts ...scheduler.Option) *scheduler.Scheduler {
	t.Helper()
	opts = append([]scheduler.Option{scheduler.WithSeconds(),
		scheduler.WithObserver(m.SchedulerObserver())}, opts...)
	s, err := scheduler.New(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs s in the background and returns a function that shuts it
// down and waits for Run to return; it is also called when the test ends.
func start(t *testing.T, s *scheduler.Scheduler) (stop func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("Run returned %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// value returns the value of the series of family name whose labels include
// labels (the sample count for a histogram), and whether it exists.
func value(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	if len(labels)%2 != 0 {
		t.Fatalf("value(%s): odd label list %q", name, labels)
	}
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metric
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// get is value for a series that must exist.
func get(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, ok := value(t, g, name, labels...)
	if !ok {
		t.Fatalf("no series %s%q", name, labels)
	}
	return v
}

// sum adds the values of every series of family name whose labels include
// labels.
func sum(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metric
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

// waitFor polls cond until it holds, failing the test after waitTimeout.
// It is for real ticks and real failures, whose timing is the servers'
// and the scheduler's; everything else is synchronised by channels.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// await returns the next value from ch, failing the test if none comes
// within 30 s, so that a job or scheduler that hangs fails its test instead
// of holding the package until go test's -timeout.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	const limit = 30 * time.Second
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("timed out after %v waiting for %s", limit, what)
		var zero T
		return zero
	}
}

// compare checks the named families of c against the exposition text
// want, which lists samples only: the HELP and TYPE lines are taken from
// what c exposes (TestMetricSet pins them).
func compare(t *testing.T, c prometheus.Collector, want string, names ...string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{}
	for _, mf := range mfs {
		headers[mf.GetName()] = fmt.Sprintf("# HELP %s %s\n# TYPE %s %s\n",
			mf.GetName(), mf.GetHelp(), mf.GetName(), strings.ToLower(mf.GetType().String()))
	}
	var b strings.Builder
	seen := map[string]bool{}
	for line := range strings.Lines(want) {
		line = strings.TrimLeft(line, " \t")
		if line == "" || line == "\n" {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		family := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && headers[base] != "" && headers[name] == "" {
				family = base
			}
		}
		if !seen[family] {
			seen[family] = true
			b.WriteString(headers[family])
		}
		b.WriteString(line)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(b.String()), names...); err != nil {
		t.Error(err)
	}
}

// lint fails the test if promlint finds anything to say about c.
func lint(t *testing.T, c prometheus.Collector) {
	t.Helper()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatalf("CollectAndLint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// nodeSeries renders the expected node series of names.
func nodeSeries(names []string, up, warming func(i int) int, errs func(i int, vote string) int) string {
	var b strings.Builder
	for i, n := range names {
		for _, v := range []string{"error", "timeout", "unreachable"} {
			fmt.Fprintf(&b, "redcron_lock_node_errors_total{node=%q,vote=%q} %d\n", n, v, errs(i, v))
		}
	}
	for i, n := range names {
		fmt.Fprintf(&b, "redcron_lock_node_up{node=%q} %d\n", n, up(i))
	}
	for i, n := range names {
		fmt.Fprintf(&b, "redcron_lock_node_warming_up{node=%q} %d\n", n, warming(i))
	}
	return b.String()
}

// nodeNames are the node families, for compare.
var nodeNames = []string{"redcron_lock_node_errors_total", "redcron_lock_node_up", "redcron_lock_node_warming_up"}

func always(v int) func(int) int { return func(int) int { return v } }

func noErrors(int, string) int { return 0 }
