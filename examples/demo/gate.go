package main

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
)

// stalledError is the dial error of a stalled replica.
type stalledError struct{}

func (stalledError) Error() string { return "replica stalled by the demo: connections refused" }

// gate is the dialer of one replica's Redis clients. Closing it cuts the
// replica off every node at once, as a network partition or a long pause
// of the process would, while the nodes and the other replicas carry on:
// live connections are closed and new dials fail at once.
type gate struct {
	dialer net.Dialer

	mu     sync.Mutex
	closed bool
	conns  map[*gatedConn]struct{}
}

func newGate() *gate {
	return &gate{conns: make(map[*gatedConn]struct{})}
}

// dial has the signature of redis.Options.Dialer.
func (g *gate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if g.isClosed() {
		return nil, stalledError{}
	}
	c, err := g.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	gc := &gatedConn{Conn: c, g: g}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed { // closed while dialing
		_ = c.Close()
		return nil, stalledError{}
	}
	g.conns[gc] = struct{}{}
	return gc, nil
}

func (g *gate) isClosed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// stall closes every connection and refuses new ones until resume.
func (g *gate) stall() {
	g.mu.Lock()
	g.closed = true
	conns := g.conns
	g.conns = make(map[*gatedConn]struct{})
	g.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
}

// resume lets the replica connect again.
func (g *gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = false
}

// gatedConn is a connection the gate can close.
type gatedConn struct {
	net.Conn
	g *gate
}

// Close forgets the connection and closes it.
func (c *gatedConn) Close() error {
	c.g.mu.Lock()
	delete(c.g.conns, c)
	c.g.mu.Unlock()
	return c.Conn.Close()
}

// SyscallConn exposes the socket, so that go-redis can check a pooled
// connection's health before using it, as it does for plain TCP
// connections.
func (c *gatedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}
