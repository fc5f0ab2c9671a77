package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node is one independent Redis master. It wraps a go-redis client the
// caller owns and configures (TLS, ACL, pool sizes, timeouts); a Cluster
// or Sentinel client counts as one master. Node never retries.
//
// Lock operations (Acquire, Commit, Extend, Release and their Async forms)
// are pipelined: concurrent calls share round trips through one worker
// goroutine per node, started by the first call and ended after a second
// without calls. After a network failure or a timeout the node backs off:
// calls fail at once with ErrNodeDown for 100ms, doubling up to 2s while
// failures go on (releases are sent all the same); the first call after
// that probes the node.
//
// A Node is safe for concurrent use.
type Node struct {
	name   string
	client redis.UniversalClient
	batch  *batcher
}

// NewNode returns the node called name (used in errors, logs and as the
// bounded "node" metric label; an address is a good name) over client. It
// does no I/O.
func NewNode(name string, client redis.UniversalClient) (*Node, error) {
	if name == "" {
		return nil, errors.New("redcron: NewNode: empty node name")
	}
	if client == nil {
		return nil, fmt.Errorf("redcron: NewNode %q: nil client", name)
	}
	n := &Node{name: name, client: client}
	n.batch = newBatcher(n)
	return n, nil
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// Client returns the go-redis client the node was built with.
func (n *Node) Client() redis.UniversalClient { return n.client }

// Error is the error of an operation on one node. It names the node, the
// operation and the key, and keeps the client's error as its cause.
type Error struct {
	Node string // the node's name
	Op   string // acquire, commit, extend, release, ...
	Key  string // the key acted on, if any
	Err  error  // the cause, as returned by the client
}

// Error implements error.
func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("redcron: %s on node %s: %v", e.Op, e.Node, e.Err)
	}
	return fmt.Sprintf("redcron: %s on node %s, key %q: %v", e.Op, e.Node, e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ServerError reports whether err carries an error reply from the Redis
// server (for example WRONGTYPE) rather than a network or context error.
func ServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

func (n *Node) fail(op, key string, err error) error {
	return &Error{Node: n.name, Op: op, Key: key, Err: err}
}

// Ping checks that the node answers.
func (n *Node) Ping(ctx context.Context) error {
	if err := n.client.Ping(ctx).Err(); err != nil {
		return n.fail("ping", "", err)
	}
	return nil
}

// Info is what a node says about itself.
type Info struct {
	RunID  string        // changes every time the server process starts
	Uptime time.Duration // time since the server process started
}

// Info returns the node's run id and uptime (INFO server).
func (n *Node) Info(ctx context.Context) (Info, error) {
	s, err := n.client.Info(ctx, "server").Result()
	if err != nil {
		return Info{}, n.fail("info", "", err)
	}
	var uptime, runID string
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case ok && k == "run_id":
			runID = v
		case ok && k == "uptime_in_seconds":
			uptime = v
		}
	}
	info, err := parseInfo(uptime, runID)
	if err != nil {
		return Info{}, n.fail("info", "", err)
	}
	return info, nil
}

// parseInfo reads INFO server's uptime_in_seconds and run_id. Anything
// unreadable is an error: a negative uptime (the server's clock stepped
// back), a missing field or an empty run id.
func parseInfo(uptime, runID string) (Info, error) {
	sec, err := strconv.ParseInt(uptime, 10, 64)
	switch {
	case uptime == "?":
		return Info{}, errors.New("INFO server failed or has no uptime_in_seconds")
	case err != nil:
		return Info{}, fmt.Errorf("uptime_in_seconds %q unreadable: %w", uptime, err)
	case sec < 0:
		return Info{}, fmt.Errorf("uptime_in_seconds %q is negative (the server's clock stepped back?)", uptime)
	case runID == "" || runID == "?":
		return Info{}, errors.New("no run_id in INFO server")
	}
	return Info{RunID: runID, Uptime: time.Duration(sec) * time.Second}, nil
}

// Heartbeat sets key to value (a Beat's String) with a TTL, and returns the
// server's clock (TIME), read in the same round trip.
func (n *Node) Heartbeat(ctx context.Context, key, value string, ttl time.Duration) (time.Time, error) {
	var now *redis.TimeCmd
	_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, value, ttl)
		now = p.Time(ctx)
		return nil
	})
	if err != nil {
		return time.Time{}, n.fail("heartbeat", key, err)
	}
	return now.Val(), nil
}

// EndHeartbeat deletes the heartbeat key key: its replica stopped cleanly
// and says goodbye.
func (n *Node) EndHeartbeat(ctx context.Context, key string) error {
	if err := n.client.Del(ctx, key).Err(); err != nil {
		return n.fail("heartbeat", key, err)
	}
	return nil
}
