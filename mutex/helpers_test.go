package mutex_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// TestMain silences go-redis's logging of the failed dials that the
// tests' killed and stopped servers cause on purpose.
func TestMain(m *testing.M) {
	redistest.QuietClients()
	if spec := os.Getenv(semaphoreChildEnv); spec != "" {
		os.Exit(semaphoreChild(spec)) // a contender process of semaphore_test.go
	}
	os.Exit(m.Run())
}

// nodesOf returns a store.Node per server of c, each with its own client.
func nodesOf(t testing.TB, c *redistest.Cluster) []*store.Node {
	t.Helper()
	return nodesWith(t, c, nil)
}

// nodesWith is nodesOf, with prepare (if not nil) given each server's
// index and client: the node is built on the client it returns.
func nodesWith(t testing.TB, c *redistest.Cluster, prepare func(i int, cl *redis.Client) *redis.Client) []*store.Node {
	t.Helper()
	var nodes []*store.Node
	for i, s := range c.Nodes() {
		cl := s.Client(t)
		if prepare != nil {
			cl = prepare(i, cl)
		}
		n, err := store.NewNode(s.Addr(), cl)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// newRedlock returns a Redlock over c. The servers are fresh, so unless
// the options say otherwise the nodes are trusted (no restart quarantine).
func newRedlock(t testing.TB, c *redistest.Cluster, opts ...mutex.Option) *mutex.Redlock {
	t.Helper()
	return newRedlockOn(t, nodesOf(t, c), opts...)
}

// contendersOn returns k Redlocks over c, each with clients of its own, as
// replicas racing for the same locks have.
func contendersOn(t testing.TB, c *redistest.Cluster, k int) []*mutex.Redlock {
	t.Helper()
	out := make([]*mutex.Redlock, k)
	for i := range out {
		out[i] = newRedlock(t, c)
	}
	return out
}

// newRedlockOn returns a Redlock over nodes, trusted unless the options
// say otherwise.
func newRedlockOn(t testing.TB, nodes []*store.Node, opts ...mutex.Option) *mutex.Redlock {
	t.Helper()
	opts = append([]mutex.Option{mutex.WithTrustedNodes()}, opts...)
	r, err := mutex.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// failedVote reports whether a vote is a failure of the node.
func failedVote(v string) bool { return v == "timeout" || v == "unreachable" || v == "error" }

// recorder keeps every event given to its ObserveLock.
type recorder struct {
	mu     sync.Mutex
	events []mutex.Event
}

func (r *recorder) ObserveLock(e mutex.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) last(op string) (mutex.Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].Op == op {
			return r.events[i], true
		}
	}
	return mutex.Event{}, false
}

func lockKey(t testing.TB, r *mutex.Redlock, name string) engine.LockKeys {
	t.Helper()
	ks, err := engine.NewKeyspace(lockwire.Of(r).KeyPrefix)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ks.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// storeNodes returns r's nodes, as mutex.New takes them.
func storeNodes(r *mutex.Redlock) []*store.Node {
	var out []*store.Node
	for _, n := range lockwire.Of(r).Nodes {
		out = append(out, (*store.Node)(n))
	}
	return out
}
