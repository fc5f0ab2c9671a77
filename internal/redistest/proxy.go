package redistest

import (
	"testing"
	"time"

	"github.com/redcron/redcron/internal/tcpproxy"
)

// Proxy is an in-process TCP proxy to one server that can delay traffic and
// cut connections (a tcpproxy.Proxy closed when the test ends). Each Proxy
// is an independent path: cutting one leaves connections through other
// proxies to the same server alone. Its methods may be called from any
// goroutine.
type Proxy struct {
	p *tcpproxy.Proxy
}

// NewProxy starts a new proxy on a free loopback port that forwards to the
// server's ServerAddr. It is closed, with all its connections, when t ends.
func (s *Server) NewProxy(t testing.TB) *Proxy {
	t.Helper()
	p, err := tcpproxy.New(s.ServerAddr())
	if err != nil {
		t.Fatalf("redistest: proxy listen: %v", err)
	}
	t.Cleanup(p.Close)
	return &Proxy{p: p}
}

// Addr returns the address clients should dial to go through the proxy.
func (p *Proxy) Addr() string {
	return p.p.Addr()
}

// SetLatency delays every chunk of data read from then on by d before it is
// forwarded, in both directions, so a request-reply round trip takes at least
// 2*d. Order is preserved. Zero removes the delay.
func (p *Proxy) SetLatency(d time.Duration) {
	p.p.SetLatency(d)
}

// Cut closes every connection through the proxy and, until Heal, closes new
// ones as soon as they are accepted, so clients see errors, not timeouts.
func (p *Proxy) Cut() {
	p.p.Cut()
}

// Heal undoes Cut: new connections are forwarded again.
func (p *Proxy) Heal() {
	p.p.Heal()
}
