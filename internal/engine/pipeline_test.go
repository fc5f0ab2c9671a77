package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

// pipeHook passes each pipeline's commands to seen before sending them.
type pipeHook struct{ seen func([]redis.Cmder) }

func (h pipeHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h pipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}

func (h pipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.seen(cmds)
		return next(ctx, cmds)
	}
}

// TestPipelineOrder: while a node's pipeline is out, the calls made meanwhile
// wait in its queue; the next pipeline carries at most 2,048 locks (8
// claim calls of 256 parts), the others follow in the one after; and an
// extension made after them all goes first, so that a lease kept alive
// never waits behind claims.
func TestPipelineOrder(t *testing.T) {
	c := redistest.Start(t, 1)
	s := c.Node(0)
	rc := s.Client(t)
	var (
		mu      sync.Mutex
		pipes   [][]string
		entered = make(chan struct{})
		gate    = make(chan struct{})
	)
	rc.AddHook(pipeHook{func(cmds []redis.Cmder) {
		var names []string
		for _, cmd := range cmds {
			if name := engine.ScriptName(cmd); name != "" {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return // a connection's handshake
		}
		mu.Lock()
		pipes = append(pipes, names)
		first := len(pipes) == 1
		mu.Unlock()
		if first {
			close(entered)
			<-gate
		}
	}})
	n, err := engine.NewNode(s.Addr(), rc)
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := engine.NewKeyspace("t")
	ctx := context.Background()
	right := engine.Parent{Key: "t~shards:shard-4", Value: "right-1"}
	anchor := engine.Parent{Key: "t~shards:replica-1", Value: "anchor-1"}
	rc.Set(ctx, right.Key, right.Value, time.Minute)
	rc.Set(ctx, anchor.Key, anchor.Value, time.Minute)
	held, _ := ks.Lock("held")
	var reqs []engine.ClaimRequest // 2,560 parts of one shard: 10 claim calls
	for i := 0; len(reqs) < 2560; i++ {
		k, _ := ks.Lock(fmt.Sprintf("job-%d", i))
		if engine.ShardOf(k.Name) == 4 {
			reqs = append(reqs, engine.ClaimRequest{Right: right, Keys: k, Running: engine.RunningValue(anchor, "v"), Occurrence: 1000, Fence: 1})
		}
	}
	var wg sync.WaitGroup
	wg.Add(3)
	n.ExtendAsync(ctx, held, "v", time.Minute, func(bool, error) { wg.Done() }) // the pipeline held out
	<-entered
	n.ClaimAllAsync(ctx, reqs, nil, time.Hour, func([]engine.AcquireResult, []bool) { wg.Done() })
	n.ExtendAsync(ctx, held, "v", time.Minute, func(bool, error) { wg.Done() })
	close(gate)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	// A pipeline of 2,048 locks carries 8 claim calls of 256 parts.
	want := [][]string{{"extend"}, append([]string{"extend"}, slices.Repeat([]string{"claim"}, 8)...), {"claim", "claim"}}
	if len(pipes) != len(want) {
		t.Fatalf("pipelines %q, want %q", pipes, want)
	}
	for i := range want {
		if !slices.Equal(pipes[i], want[i]) {
			t.Errorf("pipeline %d: %q, want %q", i, pipes[i], want[i])
		}
	}
}
