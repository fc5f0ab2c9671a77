package redistest

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server master started by Start. Its methods report
// failures through the testing.TB given to Start and must be called from the
// test goroutine; Addr, ServerAddr and Running may be called from any
// goroutine.
type Server struct {
	t     testing.TB
	bin   string
	dir   string
	cfg   *config
	port  int    // fixed once started: Restart reuses it
	proxy *Proxy // nil without WithProxy

	mu   sync.Mutex
	proc *process // the current run
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
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Running reports whether the redis-server process is alive (a paused
// server is running).
func (s *Server) Running() bool {
	p := s.current()
	return p != nil && p.running()
}

// Kill sends SIGKILL to the server and waits until the process is gone.
// Killing a server that is not running does nothing.
func (s *Server) Kill() {
	if p := s.current(); p != nil {
		p.kill()
	}
}

// Pause stops the server with SIGSTOP: connections stay open but nothing is
// answered until Resume.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP, "Pause")
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() {
	s.t.Helper()
	s.signal(syscall.SIGCONT, "Resume")
}

// Restart kills the server if it is running and starts it again on the same
// port and directory, waiting until it answers PING. Without WithAppendOnly
// it comes back empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	p, err := launch(s.bin, s.cfg.redisArgs(s.port, s.dir), s.dir, s.ServerAddr())
	if err != nil {
		s.t.Fatal(err)
	}
	s.setCurrent(p)
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

// startOnFreePort starts the server on a free port, trying other ports when
// another process takes the chosen one first. It runs in its own goroutine,
// so it returns errors instead of failing the test.
func (s *Server) startOnFreePort() error {
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			return err
		}
		var p *process
		p, err = launch(s.bin, s.cfg.redisArgs(s.port, s.dir), s.dir, s.ServerAddr())
		if err == nil {
			s.setCurrent(p)
			return nil
		}
		if !errors.Is(err, errAddrInUse) {
			return err
		}
	}
	return err
}

func (s *Server) signal(sig syscall.Signal, method string) {
	s.t.Helper()
	p := s.current()
	if p == nil || !p.running() {
		s.t.Fatalf("redistest: %s: server %s is not running", method, s.ServerAddr())
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: %s: server %s: %v", method, s.ServerAddr(), err)
	}
}

func (s *Server) mustProxy(method string) *Proxy {
	s.t.Helper()
	if s.proxy == nil {
		s.t.Fatalf("redistest: %s needs Start(..., WithProxy())", method)
	}
	return s.proxy
}

func (s *Server) current() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

func (s *Server) setCurrent(p *process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc = p
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
