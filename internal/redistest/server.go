package redistest

import (
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// Server is one redis-server master started by Start. Its methods report
// failures through the testing.TB given to Start and must be called from the
// test goroutine; Addr, ServerAddr, TLSAddr and Running may be called from
// any goroutine.
type Server struct {
	t     testing.TB
	proc  *redisproc.Server
	proxy *Proxy // nil without WithProxy
}

// Addr returns the address clients should dial: the proxy's with WithProxy,
// the server's otherwise.
func (s *Server) Addr() string {
	if s.proxy != nil {
		return s.proxy.Addr()
	}
	return s.ServerAddr()
}

// ServerAddr returns the address redis-server itself listens on.
func (s *Server) ServerAddr() string {
	return s.proc.Addr()
}

// TLSAddr returns the address redis-server takes TLS connections on
// (directly, never through the proxy), or "" without WithTLSPort.
func (s *Server) TLSAddr() string {
	return s.proc.TLSAddr()
}

// Running reports whether the redis-server process is alive (a paused
// server is running).
func (s *Server) Running() bool {
	return s.proc.Running()
}

// Kill sends SIGKILL to the server and waits until the process is gone.
// Killing a server that is not running does nothing.
func (s *Server) Kill() {
	s.proc.Kill()
}

// Pause stops the server with SIGSTOP: connections stay open but nothing is
// answered until Resume.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.proc.Pause(); err != nil {
		s.t.Fatalf("redistest: Pause: %v", err)
	}
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.proc.Resume(); err != nil {
		s.t.Fatalf("redistest: Resume: %v", err)
	}
}

// Restart kills the server if it is running and starts it again on the same
// port and directory, waiting until it answers PING. Without WithAppendOnly
// it comes back empty.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.proc.Restart(); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

// Client returns a go-redis client for Addr with 1 s dial, read and write
// timeouts that also honours context deadlines. It is closed when t ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:                  s.Addr(),
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// SetLatency delays every chunk of data through the server's proxy by d, in
// both directions. It needs WithProxy.
func (s *Server) SetLatency(d time.Duration) {
	s.t.Helper()
	s.mustProxy("SetLatency").SetLatency(d)
}

// Cut closes every connection through the server's proxy and resets new
// ones until Heal. It needs WithProxy.
func (s *Server) Cut() {
	s.t.Helper()
	s.mustProxy("Cut").Cut()
}

// Heal lets the server's proxy accept connections again after Cut. It needs
// WithProxy.
func (s *Server) Heal() {
	s.t.Helper()
	s.mustProxy("Heal").Heal()
}

func (s *Server) mustProxy(method string) *Proxy {
	s.t.Helper()
	if s.proxy == nil {
		s.t.Fatalf("redistest: %s needs Start(..., WithProxy())", method)
	}
	return s.proxy
}
