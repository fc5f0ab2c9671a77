package store

import (
	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/engine"
)

// Node is one independent Redis master of a Redlock. It wraps a go-redis
// client the caller owns and configures (TLS, ACL, pool sizes, timeouts);
// a Cluster or Sentinel client counts as one master. Lock calls to a node
// are pipelined: concurrent calls share round trips. A Node is safe for
// concurrent use; pass it to mutex.New.
type Node engine.Node

// NewNode returns the node called name (used in errors, logs and as the
// "node" metric label; an address is a good name) over client. It does no
// I/O and starts no goroutine.
func NewNode(name string, client redis.UniversalClient) (*Node, error) {
	n, err := engine.NewNode(name, client)
	return (*Node)(n), err
}
