package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
)

// Pause pauses the job cluster-wide (on) or resumes it (!on): it sets the
// job's pause key, with no TTL and naming who, on every node, or deletes
// it. While a majority has the key no replica wins a tick of the job (each
// reports it skipped, paused); a manual run is not refused. It returns
// each node's error (nil where the change was made). With fewer than a
// majority changed its error matches ErrNoMajority, and a pause is taken
// back where it was set: on a minority it is not in effect, but costs the
// job those nodes' votes. A change made on a majority is recorded in the
// job's ledger (paused or resumed, by who).
func (c *Cluster) Pause(ctx context.Context, job, who string, on bool) ([]error, error) {
	lk, err := c.Keys.Lock(job)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	value := strconv.FormatInt(now.UnixMilli(), 10) + "|" + who
	errs := c.onEveryNode(func(_ int, n *engine.Node) error {
		if on {
			return n.Client().Set(ctx, lk.Pause, value, 0).Err()
		}
		return n.Client().Del(ctx, lk.Pause).Err()
	})
	done := engine.Answered(errs)
	if done < c.Quorum() {
		if on {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			for i, n := range c.Nodes {
				if errs[i] == nil {
					_ = n.Client().Del(rctx, lk.Pause).Err()
				}
			}
		}
		return errs, fmt.Errorf("%w: %d of %d nodes changed", ErrNoMajority, done, len(c.Nodes))
	}
	action := ledger.ActionResumed
	if on {
		action = ledger.ActionPaused
	}
	c.record(ctx, lk, engine.Record{Owner: who, Start: now.UnixMilli(), Result: action})
	return errs, nil
}
