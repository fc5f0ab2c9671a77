package cluster

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/ledger"
)

// MissedSince returns, by job, how many ticks at or after since the jobs'
// ledgers record as missed, merged over the nodes the scan of rep could
// read (a tick recorded on several nodes counts once); jobs with none are
// left out. It reads the missed records alone (ZSCAN MATCH "m|*"), of up
// to 8 jobs at a time.
func (c *Cluster) MissedSince(ctx context.Context, rep *leaks.Report, jobs []string, since time.Time) map[string]int {
	nodes := rep.Readable(c.Nodes)
	counts := make([]int, len(jobs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, job := range jobs {
		lk, err := c.Keys.Lock(job)
		if err != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			copies := make([][]engine.Entry, len(nodes))
			engine.OnEach(nodes, func(j int, n *engine.Node) (err error) {
				copies[j], err = missedRecords(ctx, n, lk.Ledger)
				return err
			})
			for _, r := range ledger.Merge(copies) {
				if r.State == ledger.StateMissed && r.Tick >= since.UnixMilli() {
					counts[i]++
				}
			}
		})
	}
	wg.Wait()
	out := map[string]int{}
	for i, n := range counts {
		if n > 0 {
			out[jobs[i]] = n
		}
	}
	return out
}

// missedRecords returns the missed-tick records of the ledger at key on
// the node (their scores left out: a record carries its tick).
func missedRecords(ctx context.Context, n *engine.Node, key string) ([]engine.Entry, error) {
	var out []engine.Entry
	var cursor uint64
	for {
		kv, next, err := n.Client().ZScan(ctx, key, cursor, string(engine.RecordMissed)+"|*", 1000).Result()
		if err != nil {
			return out, err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if !strings.HasPrefix(kv[i], string(engine.RecordMissed)+"|") {
				continue
			}
			e, err := engine.ParseEntry(kv[i])
			if err != nil {
				continue
			}
			out = append(out, e)
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}
