package redcron

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/redcron/redcron/mutex"
)

// newClients makes New's clients, one per address, as New's doc says,
// after checking each address.
func newClients(addrs []string, cfg config) ([]redis.UniversalClient, []*redis.Client, error) {
	options := make([]*redis.Options, len(addrs))
	for i, addr := range addrs {
		o := &redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
			ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1}
		for _, f := range cfg.redisOptions {
			f(o)
		}
		if err := checkAddr(o); err != nil {
			return nil, nil, fmt.Errorf("%w: New: address %d %q: %w", mutex.ErrInvalidOption, i, addr, err)
		}
		options[i] = o
	}
	clients := make([]redis.UniversalClient, len(addrs))
	owned := make([]*redis.Client, len(addrs))
	for i, o := range options {
		owned[i] = redis.NewClient(o)
		clients[i] = owned[i]
	}
	return clients, owned, nil
}

// checkAddr checks the address of a client New makes: host:port, or a
// path for a Unix socket (Network "unix", set with WithRedisOptions).
func checkAddr(o *redis.Options) error {
	if o.Network == "unix" {
		if o.Addr == "" {
			return errors.New("empty socket path")
		}
		return nil
	}
	switch host, port, err := net.SplitHostPort(o.Addr); {
	case o.Addr == "":
		return errors.New("empty")
	case strings.Contains(o.Addr, "://"):
		return errors.New("a URL, not host:port (give host:port, or make the client with redis.ParseURL and pass it to NewWithClients)")
	case err != nil:
		return fmt.Errorf("not host:port (a port is needed, e.g. %s:6379): %w", o.Addr, err)
	case port == "":
		return fmt.Errorf("no port after the colon (e.g. %s:6379)", host)
	}
	return nil
}

// quietRedis is the part of go-redis's log lines New leaves out: its
// connection pool's, for each failed dial.
const quietRedis = "connection pool: failed to dial"

// quietGoRedis sets go-redis's process-wide logger to its own default one
// less the lines of quietRedis (see New).
func quietGoRedis() { redis.SetLogger(logging.NewBlacklistLogger([]string{quietRedis})) }
