package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/statuspage"
	"github.com/redcron/redcron/store"
)

// statusPage is the read-only status page of the demo's fleet, served on
// a loopback port while the demo runs.
type statusPage struct {
	addr    string // host:port it serves on
	srv     *http.Server
	clients []*redis.Client
}

// servePage serves the fleet's status page on addr (host:port; port 0 for
// a free one). It reads the nodes over clients of its own, behind no
// replica's gate, under the run's key prefix, and shows the jobs of the
// replica whose entries it is given.
func servePage(addr string, cfg config, addrs []string, trusted bool, prefix string, jobs func() []scheduler.Entry) (*statusPage, error) {
	if host, _, err := net.SplitHostPort(addr); err != nil || !loopback(host) {
		return nil, fmt.Errorf("%q: the demo serves its page on a loopback address only (127.0.0.1, ::1, localhost)", addr)
	}
	p := &statusPage{}
	nodes := make([]*store.Node, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, DialTimeout: 2 * cfg.nodeTimeout, ReadTimeout: 5 * cfg.nodeTimeout,
			WriteTimeout: 5 * cfg.nodeTimeout, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
			PoolSize: 4, DisableIdentity: true})
		p.clients = append(p.clients, c)
		n, err := store.NewNode(nodeName(i), c)
		if err != nil {
			p.close()
			return nil, err
		}
		nodes[i] = n
	}
	opts := []mutex.Option{mutex.WithNodeTimeout(cfg.nodeTimeout), mutex.WithMaxTTL(cfg.lockTTL), mutex.WithKeyPrefix(prefix),
		mutex.WithStateTTL(10 * time.Minute)}
	if trusted {
		opts = append(opts, mutex.WithTrustedNodes())
	}
	locks, err := mutex.New(nodes, opts...)
	if err != nil {
		p.close()
		return nil, err
	}
	page, err := statuspage.New(locks, statuspage.WithJobs(jobs))
	if err != nil {
		p.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.close()
		return nil, err
	}
	p.addr = ln.Addr().String()
	// Another site's page in the browser may resolve its own name to this
	// address (DNS rebinding): a request must name a loopback host.
	onlyLoopback := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !loopback(host) {
			http.Error(w, "the demo's status page answers loopback names only", http.StatusMisdirectedRequest)
			return
		}
		page.ServeHTTP(w, r)
	})
	p.srv = &http.Server{Handler: onlyLoopback, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.srv.Serve(ln) }() // ends with close
	return p, nil
}

// loopback reports whether host is a loopback address or "localhost".
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// close stops serving and closes the page's clients.
func (p *statusPage) close() {
	if p == nil {
		return
	}
	if p.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = p.srv.Shutdown(ctx)
		cancel()
	}
	for _, c := range p.clients {
		_ = c.Close()
	}
}
