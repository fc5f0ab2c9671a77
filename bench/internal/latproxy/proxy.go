// Package latproxy is an in-process TCP proxy that delays traffic, to make
// one Redis node slow. It follows internal/redistest's proxy of the root
// module, which needs a testing.TB.
package latproxy

import (
	"net"
	"sync"
	"time"
)

// Proxy forwards connections to one server, delaying every chunk of data
// by the latency in force when it was read, in both directions. Its methods
// may be called from any goroutine.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu      sync.Mutex
	latency time.Duration
	links   map[*link]struct{}
	closed  bool
}

// New starts a proxy on a free loopback port that forwards to target.
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
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetLatency delays every chunk read from then on by d before it is
// forwarded, in both directions, so that a request-reply round trip takes
// 2*d more. Order is preserved; delays of chunks in flight overlap. Zero
// removes the delay.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Close stops the proxy, closes every connection and waits until all its
// goroutines have ended.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	links := p.links
	p.links = nil
	p.mu.Unlock()
	for l := range links {
		l.close()
	}
	_ = p.ln.Close()
	p.wg.Wait()
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

// handle forwards one client connection until either side closes it.
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

// pipe copies src to dst, holding each chunk until the latency in force
// when it was read has passed. A reader goroutine feeds the writer (this
// one) through a channel, so delays overlap instead of adding up. When
// either side ends, the whole link is closed.
func (p *Proxy) pipe(l *link, dst, src net.Conn) {
	defer l.close()
	chunks := make(chan chunk, 256)
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

// add registers l unless the proxy is closed.
func (p *Proxy) add(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
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
