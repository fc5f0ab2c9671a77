package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// TestMain silences go-redis's logging of the failed dials that the
// tests' killed and stopped servers cause on purpose.
func TestMain(m *testing.M) {
	redistest.QuietClients()
	os.Exit(m.Run())
}

// TestClusterAndRing: on a Cluster or a Ring client, whose servers each
// answer NOSCRIPT to their first script call, every lock of a batch is
// acquired at its first call, and Scan reads every server's keys, calling
// its function from one goroutine at a time (the test's function appends
// without a lock: the race detector checks).
func TestClusterAndRing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) (redis.UniversalClient, *redistest.Cluster)
	}{
		{"cluster", startCluster},
		{"ring", startRing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, servers := tc.start(t)
			n, err := engine.NewNode(tc.name, client)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ks, _ := engine.NewKeyspace("t")
			for round := range 2 {
				reqs := make([]engine.AcquireRequest, 30)
				for i := range reqs {
					k, _ := ks.Lock(fmt.Sprintf("job%d-%d", round, i))
					reqs[i] = engine.AcquireRequest{Keys: k, Value: "v", TTL: time.Minute}
				}
				for i, r := range n.AcquireAll(ctx, reqs) {
					if r.Err != nil || r.Reply.Status != engine.Acquired {
						t.Errorf("round %d, lock %d: %+v", round, i, r)
					}
				}
			}

			var seen []string
			if err := n.Scan(ctx, "t:*", func(ki engine.KeyInfo) error {
				seen = append(seen, ki.Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, s := range servers.Nodes() {
				total += s.Client(t).DBSize(ctx).Val()
			}
			if int64(len(seen)) != total || total < 60 {
				t.Errorf("Scan read %d keys; the servers hold %d, want at least the 60 locks'", len(seen), total)
			}
		})
	}
}

// startCluster starts a Redis Cluster of three masters and returns a
// client of it.
func startCluster(t *testing.T) (redis.UniversalClient, *redistest.Cluster) {
	c := redistest.Start(t, 3, redistest.WithArgs("--cluster-enabled", "yes"))
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes() {
		args = append(args, s.ServerAddr())
	}
	args = append(args, "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(cc.ClusterInfo(ctx).Val(), "cluster_state:ok") {
		if time.Now().After(deadline) {
			t.Fatal("the cluster's state is not ok after 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Every master must know the others' slots before the client asks.
	for _, s := range c.Nodes() {
		for !strings.Contains(s.Client(t).ClusterInfo(ctx).Val(), "cluster_state:ok") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the cluster's state is not ok after 20s", s.ServerAddr())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return cc, c
}

// startRing starts two servers and returns a Ring client over them.
func startRing(t *testing.T) (redis.UniversalClient, *redistest.Cluster) {
	c := redistest.Start(t, 2)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": c.Node(0).Addr(), "b": c.Node(1).Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	return ring, c
}
