// Package redisproc starts and controls the redis-server processes the
// benchmarks run against: without persistence, on free loopback ports, in
// temporary directories, killed when the benchmark ends. It also reads the
// servers' INFO statistics.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// readyTimeout bounds how long a starting redis-server may take to answer.
const readyTimeout = 10 * time.Second

// Server is a redis-server process started by a benchmark.
type Server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
}

// BinPath finds the redis-server binary: on PATH, else /usr/bin.
func BinPath() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", errors.New("redis-server not found on PATH nor at /usr/bin/redis-server: install Redis (e.g. apt-get install redis-server)")
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Pid returns the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// StartN starts n servers. On error it returns those already started, for
// StopAll.
func StartN(bin string, n int) ([]*Server, error) {
	var servers []*Server
	for range n {
		s, err := Start(bin)
		if err != nil {
			return servers, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// StopAll stops every server (see Stop).
func StopAll(servers []*Server) {
	for _, s := range servers {
		s.Stop()
	}
}

// Start starts one server on a free loopback port, trying another port if
// the chosen one was taken in the meantime.
func Start(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "redcron-bench-redis-")
	if err != nil {
		return nil, err
	}
	for range 3 {
		var port int
		if port, err = FreePort(); err != nil {
			break
		}
		var s *Server
		if s, err = launch(bin, dir, port); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// Kill sends SIGKILL (which also ends a paused process) and waits until
// the process has been reaped. The directory is kept until Stop.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill() // fails only if it already exited
	<-s.done
}

// Stop kills the server, waits for it and removes its directory. It may
// be called more than once.
func (s *Server) Stop() {
	s.Kill()
	_ = os.RemoveAll(s.dir)
}

// Pause stops the process with SIGSTOP: it keeps its connections and its
// data but answers nothing until Resume.
func (s *Server) Pause() error {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause %s: %w", s.addr, err)
	}
	return nil
}

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() error {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume %s: %w", s.addr, err)
	}
	return nil
}

// Running reports whether the process has not exited.
func (s *Server) Running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// launch runs redis-server on port and waits until it answers.
func launch(bin, dir string, port int) (*Server, error) {
	logPath := filepath.Join(dir, "redis.log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own descriptor
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(); err != nil {
		s.Kill()
		out, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("redis-server on %s: %w\n%s", s.addr, err, out)
	}
	return s, nil
}

// waitReady polls the server until it answers INFO as this process (not
// another one that owns the port), it exits, or readyTimeout passes.
func (s *Server) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: s.addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	pid := "process_id:" + strconv.Itoa(s.cmd.Process.Pid) + "\r\n"
	deadline := time.Now().Add(readyTimeout)
	for {
		info, err := c.Info(context.Background(), "server").Result()
		switch {
		case err == nil && strings.Contains(info, pid):
			return nil
		case err == nil:
			err = errors.New("another process answers on this port")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer after %v: %w", readyTimeout, err)
		}
		select {
		case <-s.done:
			return fmt.Errorf("exited during startup (%v)", s.cmd.ProcessState)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// NewClient returns the go-redis client every benchmark uses for a node:
// the options of the library's tests (1 s dial/read/write timeouts,
// context deadlines honoured, default pool) with no command retries
// (MaxRetries -1), as the README recommends for nodes. go-redis's own dial
// retries (DialerRetries, 5 attempts 100 ms apart) keep their default.
func NewClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	})
}

// SilenceClientLogs discards go-redis's own log lines (such as "failed to
// dial after 5 attempts" for every command sent to a killed node), which
// the benchmarks count as errors instead.
func SilenceClientLogs() { redis.SetLogger(discardLogger{}) }

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}
