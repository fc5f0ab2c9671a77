// Package redisproc runs redis-server processes on loopback ports, for the
// integration tests (through internal/redistest) and the benchmarks
// (bench/). It finds the binary, starts a server on a free port in a given
// directory, waits until the server answers as the process it started, and
// kills, pauses, resumes and restarts it.
package redisproc

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// logName is the file, in the server's directory, that collects the output
// of every run of redis-server.
const logName = "redis.log"

// errAddrInUse reports that redis-server could not bind its port.
var errAddrInUse = errors.New("address already in use")

// BinPath returns the path of the redis-server binary: the one on PATH,
// else the first of fallbacks (such as "/usr/bin/redis-server") that
// exists.
func BinPath(fallbacks ...string) (string, error) {
	if path, err := exec.LookPath("redis-server"); err == nil {
		return path, nil
	}
	for _, path := range fallbacks {
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	where := "on PATH"
	if len(fallbacks) > 0 {
		where += " nor at " + strings.Join(fallbacks, " or ")
	}
	return "", errors.New("redis-server not found " + where)
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

// Config describes the redis-server that Start runs.
type Config struct {
	// Bin is the redis-server binary (see BinPath).
	Bin string
	// Dir is the server's working directory, which must exist. It holds
	// the persistence files and redis.log, the output of every run.
	Dir string
	// AppendOnly turns on AOF persistence with appendfsync always, so that
	// data acknowledged before Kill survives Restart. Without it the server
	// persists nothing.
	AppendOnly bool
	// TLSPort gives the server a second free loopback port, for TLS
	// (--tls-port), picked with the plain one each time Start tries a port;
	// TLSAddr returns it. Args must then carry the server's certificate and
	// key (--tls-cert-file, --tls-key-file and so on).
	TLSPort bool
	// Args are extra redis-server command-line arguments, passed after the
	// package's own, for example "--maxmemory", "10mb".
	Args []string
}

// args returns the redis-server arguments for a server listening on port,
// and for TLS on tlsPort unless it is 0.
func (c *Config) args(port, tlsPort int) []string {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", c.Dir,
		"--save", "",
		"--logfile", "",
	}
	if tlsPort != 0 {
		args = append(args, "--tls-port", strconv.Itoa(tlsPort))
	}
	if c.AppendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	return append(args, c.Args...)
}

// Server is a redis-server on a fixed loopback port and directory, whose
// process can be killed, paused, resumed and restarted. Restart must not
// run concurrently with Kill or another Restart; otherwise its methods may
// be called from any goroutine.
type Server struct {
	cfg     Config
	port    int // fixed once started: Restart reuses it
	tlsPort int // likewise; 0 without Config.TLSPort

	mu   sync.Mutex
	proc *process // the current (or last) run
}

// Start runs redis-server as cfg says on a free loopback port (and a free
// TLS port with cfg.TLSPort), trying other ports when another process takes
// a chosen one first, and returns once the server answers PING. When it
// fails, no process is left running and the error includes the end of the
// server's log. On Linux the server is killed when the process that
// started it dies, even without cleanup (see startCmd).
func Start(cfg Config) (*Server, error) {
	cfg.Args = slices.Clone(cfg.Args)
	var err error
	for range 5 {
		s := &Server{cfg: cfg}
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if cfg.TLSPort {
			if s.tlsPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		if err = s.launch(); err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) {
			return nil, err
		}
	}
	return nil, err
}

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// TLSAddr returns the host:port the server takes TLS connections on, or ""
// without Config.TLSPort.
func (s *Server) TLSAddr() string {
	if s.tlsPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort))
}

// Dir returns the server's working directory.
func (s *Server) Dir() string {
	return s.cfg.Dir
}

// Pid returns the process id of the current run, or of the last one if the
// server is not running.
func (s *Server) Pid() int {
	return s.current().cmd.Process.Pid
}

// Running reports whether the redis-server process is alive (a paused
// server is running).
func (s *Server) Running() bool {
	return s.current().running()
}

// Kill sends SIGKILL to the server (which also ends a paused one) and waits
// until the process has been reaped. Killing a server that is not running
// does nothing.
func (s *Server) Kill() {
	s.current().kill()
}

// Pause stops the server with SIGSTOP: it keeps its connections and its
// data but answers nothing until Resume.
func (s *Server) Pause() error {
	return s.signal(syscall.SIGSTOP)
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() error {
	return s.signal(syscall.SIGCONT)
}

// Restart kills the server if it is running and starts it again on the same
// port and directory, waiting until it answers PING. Without AppendOnly it
// comes back empty.
func (s *Server) Restart() error {
	s.Kill()
	return s.launch()
}

func (s *Server) signal(sig syscall.Signal) error {
	p := s.current()
	if !p.running() {
		return fmt.Errorf("server %s is not running", s.Addr())
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("server %s: %w", s.Addr(), err)
	}
	return nil
}

// launch runs redis-server and waits until it answers PING as this
// process. When it fails the process has been killed and reaped, and the
// error wraps errAddrInUse if the port was taken.
func (s *Server) launch() error {
	logPath := filepath.Join(s.cfg.Dir, logName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	offset, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}

	cmd := exec.Command(s.cfg.Bin, s.cfg.args(s.port, s.tlsPort)...)
	cmd.Dir = s.cfg.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	reaped, err := startCmd(cmd)
	if err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		reaped()
		close(p.done)
	}()

	if err := p.waitReady(s.Addr()); err != nil {
		p.kill()
		log := logTail(logPath, offset, 20)
		if strings.Contains(log, "Address already in use") {
			err = errAddrInUse
		}
		return fmt.Errorf("redis-server on %s: %w\n--- %s ---\n%s", s.Addr(), err, logPath, log)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc = p
	return nil
}

func (s *Server) current() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// logTail returns the last n lines written to the log at path from offset on.
func logTail(path string, offset int64, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data[min(offset, int64(len(data))):])), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
