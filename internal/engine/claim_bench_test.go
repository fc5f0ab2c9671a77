package engine_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkClaimShard: the steady state of a shard's jobs due every
// second, claimed in bulk: each iteration claims the next tick of the
// shard's jobs in one call, carrying the ends of their previous runs, as
// a replica's claim does, ledger on. It reports the server's CPU per
// job-tick (server-µs/job-tick, from INFO commandstats: the script's own
// time, the commands inside it included), for -jobs per call.
func BenchmarkClaimShard(b *testing.B) {
	for _, jobs := range []int{16, 156} {
		b.Run(fmt.Sprint("jobs=", jobs), func(b *testing.B) { benchmarkClaimShard(b, jobs) })
	}
}

func benchmarkClaimShard(b *testing.B, jobs int) {
	s := redistest.Start(b, 1).Node(0)
	cl := s.Client(b)
	n, err := engine.NewNode(s.Addr(), cl)
	if err != nil {
		b.Fatal(err)
	}
	ks, err := engine.NewKeyspace("bench")
	if err != nil {
		b.Fatal(err)
	}
	var keys []engine.LockKeys // jobs of one shard
	for i := 0; len(keys) < jobs; i++ {
		if name := fmt.Sprintf("tenant-%d-report", i); engine.ShardOf(name) == 7 {
			k, err := ks.Lock(name)
			if err != nil {
				b.Fatal(err)
			}
			keys = append(keys, k)
		}
	}
	ctx := context.Background()
	right := engine.Parent{Key: "bench~shards:{s9}:shard-7:lock", Value: "rc1|right|1|0|"}
	anchor := engine.Parent{Key: "bench~shards:{s3}:replica-a:lock", Value: "rc1|anchor|1|0|"}
	for _, p := range []engine.Parent{right, anchor} {
		if err := cl.Set(ctx, p.Key, p.Value, 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	const ledgerCap, window = 20, 7 * 24 * time.Hour
	tick := time.Now().Truncate(time.Second).UnixMilli()
	var ends []engine.FreeRequest
	claim := func(it int) {
		occ := tick + int64(it)*1000
		running := engine.RunningValue(anchor, "rc1|run-"+strconv.Itoa(it)+"|1|"+strconv.FormatInt(occ, 10)+"|")
		reqs := make([]engine.ClaimRequest, len(keys))
		next := make([]engine.FreeRequest, len(keys))
		for j, k := range keys {
			rec := engine.Record{Job: k.Name, Owner: "replica-a", Tick: occ, Fence: uint64(occ) * 1000, Start: occ}
			started := rec.Text()
			reqs[j] = engine.ClaimRequest{Right: right, Keys: k, Running: running, Occurrence: occ, Fence: rec.Fence,
				Ledger: engine.LedgerWrite{New: started, Score: occ, Cap: ledgerCap, Window: window}}
			rec.End, rec.Run, rec.Result, rec.Try, rec.Delay = occ+12, "0190d3a1-7c2e-7f00-8000-00000000000"+strconv.Itoa(j%10), "success", 1, 2
			next[j] = engine.FreeRequest{Keys: k, Running: running,
				Ledger: engine.LedgerWrite{Old: started, New: rec.Text(), Score: occ, Cap: ledgerCap, Window: window}}
		}
		ch := make(chan []engine.AcquireResult, 1)
		n.ClaimAllAsync(ctx, reqs, ends, time.Hour, func(rs []engine.AcquireResult, _ []bool) { ch <- rs })
		for j, r := range <-ch {
			if r.Err != nil || r.Reply.Status != engine.Acquired {
				b.Fatalf("tick %d, job %d: %v %v", it, j, r.Reply.Status, r.Err)
			}
		}
		ends = next
	}
	for it := range 30 { // a full ledger, as in a shard that has run a while
		claim(it)
	}
	before := scriptUsec(b, cl)
	b.ResetTimer()
	for it := range b.N {
		claim(30 + it)
	}
	b.StopTimer()
	b.ReportMetric((scriptUsec(b, cl)-before)/float64(b.N*jobs), "server-µs/job-tick")
}

// scriptUsec returns the server's CPU in scripts so far, in µs (INFO
// commandstats' evalsha and eval).
func scriptUsec(b *testing.B, cl *redis.Client) float64 {
	info, err := cl.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		for _, f := range strings.Split(strings.TrimSpace(line[strings.Index(line, ":")+1:]), ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				x, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += x
			}
		}
	}
	return total
}
