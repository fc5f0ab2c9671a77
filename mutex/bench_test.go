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

// BenchmarkTryLockAll measures a tick's worth of locks on 5 nodes: one
// TryLockAll of n locks with occurrences, then their releases, against n
// TryLocks made one after another (the sequential baseline, in the same
// run). It reports the time per lock.
func BenchmarkTryLockAll(b *testing.B) {
	c := redistest.Start(b, 5)
	r := newRedlock(b, c)
	ctx := context.Background()
	base := time.Now().Add(-24 * time.Hour) // occurrences a day old: neither too old nor ahead
	for _, n := range []int{1, 100, 1000} {
		names := make([]string, n)
		for j := range names {
			names[j] = fmt.Sprintf("tick-%d-%d", n, j)
		}
		release := func(b *testing.B, locks []*mutex.Lock) {
			errs := make(chan error, len(locks))
			for _, l := range locks {
				go func() { errs <- l.Release(ctx) }()
			}
			for range locks {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(fmt.Sprintf("locks=%d/batch", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				reqs := make([]mutex.Request, n)
				at := base.Add(time.Duration(i) * time.Millisecond)
				for j := range reqs {
					reqs[j] = mutex.Request{Name: names[j], TTL: 10 * time.Second, Options: []mutex.LockOption{mutex.Occurrence(at)}}
				}
				locks := make([]*mutex.Lock, 0, n)
				for _, res := range r.TryLockAll(ctx, reqs) {
					if res.Err != nil {
						b.Fatal(res.Err)
					}
					locks = append(locks, res.Lock)
				}
				release(b, locks)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/lock")
		})
		b.Run(fmt.Sprintf("locks=%d/sequential", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				at := base.Add(time.Duration(1_000_000+i) * time.Millisecond)
				locks := make([]*mutex.Lock, 0, n)
				for _, name := range names {
					l, err := r.TryLock(ctx, name, 10*time.Second, mutex.Occurrence(at))
					if err != nil {
						b.Fatal(err)
					}
					locks = append(locks, l)
				}
				release(b, locks)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/lock")
		})
	}
}
