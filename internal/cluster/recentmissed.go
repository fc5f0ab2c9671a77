package cluster

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
)

// MissedSince returns, by job, how many ticks at or after since the jobs'
// ledgers record as missed, merged over nodes (those of c a scan could
// read: a tick recorded on several nodes counts once); jobs with none are
// left out. It reads the missed records alone (ZSCAN MATCH "m|*"), of each
// shard's ledger once, up to 8 shards at a time.
func (c *Cluster) MissedSince(ctx context.Context, nodes []*engine.Node, jobs []string, since time.Time) map[string]int {
	byShard := map[string]map[string]bool{} // ledger key → its jobs asked for
	for _, job := range jobs {
		if lk, err := c.Keys.Lock(job); err == nil {
			if byShard[lk.Ledger] == nil {
				byShard[lk.Ledger] = map[string]bool{}
			}
			byShard[lk.Ledger][job] = true
		}
	}
	var mu sync.Mutex
	out := map[string]int{}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for key, want := range byShard {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			copies := make([]map[string][]engine.Entry, len(nodes)) // by node, by job
			engine.OnEach(nodes, func(j int, n *engine.Node) (err error) {
				copies[j], err = missedRecords(ctx, n, key, want)
				return err
			})
			for job := range want {
				perNode := make([][]engine.Entry, len(nodes))
				for j := range copies {
					perNode[j] = copies[j][job]
				}
				for _, r := range ledger.Merge(perNode) {
					if r.State == ledger.StateMissed && r.Tick >= since.UnixMilli() {
						mu.Lock()
						out[job]++
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	return out
}

// missedRecords returns the missed-tick records of the jobs want in the
// shard's ledger at key on the node, by job (their scores left out: a
// record carries its tick).
func missedRecords(ctx context.Context, n *engine.Node, key string, want map[string]bool) (map[string][]engine.Entry, error) {
	out := map[string][]engine.Entry{}
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
			if err != nil || !want[e.Record.Job] {
				continue
			}
			out[e.Record.Job] = append(out[e.Record.Job], e)
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}
