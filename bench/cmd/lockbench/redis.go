package main

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
	"time"

	"github.com/redis/go-redis/v9"
)

// readyTimeout bounds how long a starting redis-server may take to answer.
const readyTimeout = 10 * time.Second

// server is a redis-server process started by the benchmark, without
// persistence, in a temporary directory of its own.
type server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
}

// redisServerPath finds the redis-server binary.
func redisServerPath() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", errors.New("redis-server not found on PATH nor at /usr/bin/redis-server: install Redis (e.g. apt-get install redis-server)")
}

// newClient returns the go-redis client used by every implementation: the
// same options as the library's tests.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		ContextTimeoutEnabled: true,
	})
}

// startServers starts n servers on free loopback ports. On error it
// returns those already started, for stopServers.
func startServers(bin string, n int) ([]*server, error) {
	var servers []*server
	for range n {
		s, err := startServer(bin)
		if err != nil {
			return servers, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// stopServers kills the servers, waits for them and removes their
// directories.
func stopServers(servers []*server) {
	for _, s := range servers {
		_ = s.cmd.Process.Kill() // fails only if it already exited
		<-s.done
		_ = os.RemoveAll(s.dir)
	}
}

// startServer starts one server, trying another port if the chosen one
// was taken in the meantime.
func startServer(bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "lockbench-redis-")
	if err != nil {
		return nil, err
	}
	for range 3 {
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		var s *server
		if s, err = launch(bin, dir, port); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// launch runs redis-server on port and waits until it answers.
func launch(bin, dir string, port int) (*server, error) {
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
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(); err != nil {
		stopServers([]*server{s})
		out, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("redis-server on %s: %w\n%s", s.addr, err, out)
	}
	return s, nil
}

// waitReady polls the server until it answers INFO as this process (not
// another one that owns the port), it exits, or readyTimeout passes.
func (s *server) waitReady() error {
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

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
