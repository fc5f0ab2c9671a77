// Package redisnode is the Redis side of the benchmarks: it starts the
// redis-server processes they run against (through the root module's
// internal/redisproc: no persistence, free loopback ports, temporary
// directories removed when the benchmark ends), makes the go-redis clients
// every benchmark uses, and reads the servers' INFO statistics.
package redisnode

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redcron/redcron/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// BinPath finds the redis-server binary: on PATH, else /usr/bin.
func BinPath() (string, error) {
	bin, err := redisproc.BinPath("/usr/bin/redis-server")
	if err != nil {
		return "", fmt.Errorf("%w: install Redis (e.g. apt-get install redis-server)", err)
	}
	return bin, nil
}

// StartN starts n servers from bin, each in a new temporary directory. On
// error it returns those already started, for StopAll.
func StartN(bin string, n int) ([]*redisproc.Server, error) {
	var servers []*redisproc.Server
	for range n {
		s, err := start(bin)
		if err != nil {
			return servers, err
		}
		servers = append(servers, s)
	}
	return servers, nil
}

// start starts one server in a new temporary directory.
func start(bin string) (*redisproc.Server, error) {
	dir, err := os.MkdirTemp("", "redcron-bench-redis-")
	if err != nil {
		return nil, err
	}
	s, err := redisproc.Start(redisproc.Config{Bin: bin, Dir: dir})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// StopAll kills servers started by StartN (paused ones too), waits for
// them and removes their directories. It may be called more than once.
func StopAll(servers []*redisproc.Server) {
	for _, s := range servers {
		s.Kill()
		_ = os.RemoveAll(s.Dir())
	}
}

// Cluster is a set of servers started by Start, with a client for each.
type Cluster struct {
	Servers []*redisproc.Server
	// Clients are clients of Servers, from NewClient, in the same order.
	Clients []*redis.Client
}

// Start starts n servers from bin, as StartN does, and makes a client for
// each. On error it returns the servers already started, for Close.
func Start(bin string, n int) (*Cluster, error) {
	servers, err := StartN(bin, n)
	c := &Cluster{Servers: servers}
	if err != nil {
		return c, err
	}
	c.Clients = make([]*redis.Client, len(servers))
	for i, s := range servers {
		c.Clients[i] = NewClient(s.Addr())
	}
	return c, nil
}

// Close closes the clients, then stops the servers with StopAll.
func (c *Cluster) Close() {
	for _, cl := range c.Clients {
		_ = cl.Close()
	}
	StopAll(c.Servers)
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
