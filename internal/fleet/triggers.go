package fleet

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	tickets "github.com/redcron/redcron/internal/ticket"
	"github.com/redcron/redcron/scheduler"
)

// triggerPoll is how often a replica looks for trigger requests.
const triggerPoll = time.Second

// takeTriggers looks for trigger requests on the nodes (the admin
// command's trigger) every second until ctx is done, and runs each request
// for a job of this replica through the scheduler's Trigger, with the
// request's ticket in its context (package internal/ticket): the lease that
// takes the request's ticket on a majority runs it, so it runs once, on one
// replica, under the job's lock. A request whose job is running, or whose
// attempt reached no decision, is tried again at the next look.
func (r *Replica) takeTriggers(ctx context.Context) {
	var (
		mu     sync.Mutex
		trying = map[string]bool{} // tickets being tried here
		wg     sync.WaitGroup
	)
	defer wg.Wait()
	timer := time.NewTimer(rand.N(triggerPoll)) // replicas started together look at different moments
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		for name, ticket := range pendingTriggers(ctx, r.nodes, r.keys) {
			mu.Lock()
			busy := trying[ticket]
			trying[ticket] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Go(func() {
				defer func() { mu.Lock(); delete(trying, ticket); mu.Unlock() }()
				r.takeTrigger(ctx, name, ticket)
			})
		}
		timer.Reset(triggerPoll)
	}
}

// takeTrigger tries to run the request ticket for the job called name.
func (r *Replica) takeTrigger(ctx context.Context, name, ticket string) {
	info, err := r.sched.Trigger(tickets.NewContext(ctx, ticket), name)
	switch {
	case err == nil:
		r.log.LogAttrs(ctx, slog.LevelInfo, "trigger request taken", slog.String("job", name),
			slog.String("ticket", ticket), slog.String("run_id", info.RunID), slog.Uint64("fence", info.Fence))
	case errors.Is(err, scheduler.ErrUnknownJob), errors.Is(err, scheduler.ErrClosed), ctx.Err() != nil:
	default:
		r.log.LogAttrs(ctx, slog.LevelDebug, "trigger request not taken", slog.String("job", name),
			slog.String("ticket", ticket), slog.Any("error", err))
	}
}

// pendingTriggers returns the trigger requests on the nodes: the ticket of
// each job whose trigger key holds the same ticket on a majority. The
// nodes are read in parallel, each within half a poll: a node that fails
// or hangs is left out.
func pendingTriggers(ctx context.Context, nodes []*engine.Node, keys engine.Keyspace) map[string]string {
	tickets := make([]map[string]string, len(nodes)) // each node's: job → ticket
	engine.OnEach(nodes, func(i int, n *engine.Node) (err error) {
		nctx, cancel := context.WithTimeout(ctx, triggerPoll/2)
		defer cancel()
		tickets[i], err = n.Tickets(nctx, keys)
		return err
	})
	votes := map[[2]string]int{} // job, ticket → nodes
	for _, ts := range tickets {
		for name, t := range ts {
			votes[[2]string{name, t}]++
		}
	}
	out := map[string]string{}
	for v, n := range votes {
		if n >= len(nodes)/2+1 {
			out[v[0]] = v[1]
		}
	}
	return out
}
