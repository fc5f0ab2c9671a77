// Package tcpproxy is an in-process TCP proxy to one server that can delay
// traffic and cut connections. The integration tests (internal/redistest)
// and the benchmarks (bench/) use it to make a Redis node slow or
// unreachable without touching the server process.
package tcpproxy

import (
	"net"
	"sync"
	"time"
)

// Proxy forwards the connections it accepts on a loopback port to one
// server. It can delay traffic and cut connections. Each Proxy is an
// independent path: cutting one leaves connections through other proxies
// to the same server alone. Its methods may be called from any goroutine.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu      sync.Mutex
	latency time.Duration
	cut     bool
	closed  bool
	links   map[*link]struct{}
}

// New starts a proxy on a free loopback port that forwards to target, a
// host:port. Close stops it.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, links: make(map[*link]struct{})}
	p.wg.Go(p.serve)
	return p, nil
}

// Addr returns the address clients should dial to go through the proxy.
func (p *Proxy) Addr() string {
	return p.ln.Addr().String()
}

// SetLatency delays every chunk of data read from then on by d before it is
// forwarded, in both directions, so a request-reply round trip takes at least
// 2*d. Order is preserved. Zero removes the delay.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Cut closes every connection through the proxy and, until Heal, closes new
// ones as soon as they are accepted, so clients see errors, not timeouts.
func (p *Proxy) Cut() {
	p.disconnect(&p.cut)
}

// Heal undoes Cut: new connections are forwarded again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Close stops the proxy: it closes the listener and every connection, and
// waits until all the proxy's goroutines have ended. Heal does not undo it.
// Close may be called more than once.
func (p *Proxy) Close() {
	p.disconnect(&p.closed)
	_ = p.ln.Close()
	p.wg.Wait()
}

// disconnect sets *flag, p.cut or p.closed, so that add refuses new
// connections, and closes every current one.
func (p *Proxy) disconnect(flag *bool) {
	p.mu.Lock()
	*flag = true
	links := p.links
	p.links = make(map[*link]struct{})
	p.mu.Unlock()
	for l := range links {
		l.close()
	}
}

func (p *Proxy) serve() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return // the listener was closed
		}
		p.wg.Go(func() { p.handle(conn) })
	}
}

// handle forwards one client connection until either side closes it or the
// proxy cuts it.
func (p *Proxy) handle(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	l := &link{client: client, server: server, done: make(chan struct{})}
	if !p.add(l) {
		l.close()
		return
	}
	defer p.remove(l)
	p.wg.Go(func() { p.pipe(l, server, client) })
	p.pipe(l, client, server)
}

// pipe copies src to dst, holding each chunk until the latency in force when
// it was read has passed. A reader goroutine feeds the writer (this one)
// through a channel, so delays overlap instead of adding up. When either
// side ends, the whole link is closed.
func (p *Proxy) pipe(l *link, dst, src net.Conn) {
	defer l.close()
	chunks := make(chan chunk, 64)
	p.wg.Go(func() {
		defer close(chunks)
		for {
			buf := make([]byte, 16<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- chunk{data: buf[:n], due: time.Now().Add(p.delay())}:
				case <-l.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	for c := range chunks {
		if !l.waitUntil(c.due) {
			return
		}
		if _, err := dst.Write(c.data); err != nil {
			return
		}
	}
}

func (p *Proxy) delay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency
}

// add registers l unless the proxy is cut or closed.
func (p *Proxy) add(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut || p.closed {
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *Proxy) remove(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.links, l)
}

// link is a proxied connection: the client's and the server's side.
type link struct {
	client, server net.Conn
	done           chan struct{} // closed by close
	once           sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		_ = l.client.Close()
		_ = l.server.Close()
	})
}

// waitUntil waits until t; it returns false if the link is closed first.
func (l *link) waitUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-l.done:
		return false
	}
}

// chunk is data read from one side, to be written to the other at due.
type chunk struct {
	data []byte
	due  time.Time
}
