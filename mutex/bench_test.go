package mutex_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// BenchmarkAcquireRelease measures TryLock+Release on distinct names, for
// 1 and 5 nodes, 1 and 16 goroutines, with fencing on and off. The
// baseline to compare with is bench/cmd/lockbench, which runs a raw
// SET NX PX + compare-and-delete fan-out on the same nodes in the same run.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, nodes := range []int{1, 5} {
		c := redistest.Start(b, nodes)
		for _, fencing := range []bool{false, true} {
			r := newRedlock(b, c, mutex.WithFencing(fencing))
			for _, g := range []int{1, 16} {
				b.Run(fmt.Sprintf("nodes=%d/fencing=%t/goroutines=%d", nodes, fencing, g), func(b *testing.B) {
					benchAcquireRelease(b, r, g)
				})
			}
		}
	}
}

func benchAcquireRelease(b *testing.B, r *mutex.Redlock, goroutines int) {
	ctx := context.Background()
	var id atomic.Int64
	b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := id.Add(1)
		i := 0
		for pb.Next() {
			i++
			l, err := r.TryLock(ctx, fmt.Sprintf("bench-%d-%d", g, i%64), time.Second)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
