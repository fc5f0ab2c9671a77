package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redcron/redcron/internal/redisproc"
)

// Cluster is a set of independent redis-server masters started by Start.
type Cluster struct {
	nodes []*Server
}

// Start starts k independent redis-server masters on free loopback ports,
// each in its own temporary directory and without persistence unless
// WithAppendOnly is given. It returns once every server answers PING and
// stops them all when the test ends. It fails the test if redis-server is
// not installed.
func Start(t testing.TB, k int, opts ...Option) *Cluster {
	t.Helper()
	bin, err := redisproc.BinPath()
	if err != nil {
		t.Fatalf("redistest: %v; install it, "+
			"e.g. run scripts/test, which installs the Debian redis-server package", err)
	}
	cfg := &config{}
	for _, opt := range opts {
		opt(cfg)
	}

	c := &Cluster{nodes: make([]*Server, k)}
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range c.nodes {
		pc := cfg.procConfig(bin, t.TempDir())
		wg.Go(func() {
			p, err := redisproc.Start(pc)
			if err != nil {
				errs[i] = fmt.Errorf("redistest: %w", err)
				return
			}
			c.nodes[i] = &Server{t: t, proc: p}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range c.nodes {
			if s != nil {
				s.Kill()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	if cfg.proxy {
		for _, s := range c.nodes {
			s.proxy = s.NewProxy(t)
		}
	}
	return c
}

// Nodes returns the servers in start order.
func (c *Cluster) Nodes() []*Server {
	return slices.Clone(c.nodes)
}

// Node returns the i-th server.
func (c *Cluster) Node(i int) *Server {
	return c.nodes[i]
}

// Addrs returns the address clients should dial for each server, in order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.Addr()
	}
	return addrs
}

// KeyOn reports, for every server in start order, whether key exists on
// it; t fails if a server cannot be asked.
func (c *Cluster) KeyOn(t testing.TB, key string) []bool {
	t.Helper()
	out := make([]bool, len(c.nodes))
	for i, s := range c.nodes {
		n, err := s.Client(t).Exists(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("redistest: EXISTS %s on %s: %v", key, s.Addr(), err)
		}
		out[i] = n == 1
	}
	return out
}
