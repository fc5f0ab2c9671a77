package shard

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// presence writes this replica's presence on every node and returns the
// live replicas (those whose presence is fresh on a quorum of the nodes),
// and sets the gate's shared jobs by their job tables; nil when fewer than
// a quorum of nodes answered (the last view stands), or when the replica
// is leaving; an error when it may not claim ticks now.
func (k *Keeper) presence(ctx context.Context) ([]string, error) {
	if err := k.check(); err != nil {
		return nil, err
	}
	if k.leaving.Load() {
		return nil, nil
	}
	digest, jobs := k.table()
	member := k.self + "\x00" + digest
	k.member.Store(&member)
	answers, answered := k.write(ctx, member)
	if answered < k.quorum {
		return nil, nil
	}
	fresh := map[string]int{}   // instance → nodes where it is fresh
	digests := map[string]int{} // digest → nodes where a fresh replica publishes it
	for _, a := range answers {
		seen := map[string]bool{}
		for m, age := range a {
			inst, d, _ := strings.Cut(m, "\x00")
			if age > presenceStale || seen[m] {
				continue
			}
			seen[m] = true
			fresh[inst]++
			digests[d]++
		}
	}
	var fleet []string
	for inst, n := range fresh {
		if n >= k.quorum || inst == k.self {
			fleet = append(fleet, inst)
		}
	}
	slices.Sort(fleet)
	// A table not read in time is read again next round: a round held up
	// would leave the presence stale.
	tctx, cancel := context.WithTimeout(ctx, presenceStale/4)
	defer cancel()
	k.share(tctx, digest, jobs, digests)
	return fleet, nil
}

// write writes the presence member on every node and returns each node's
// answer (nil for a node that did not answer in time) and how many
// answered. The answers are waited for half the staleness, not a round:
// under load a node answers late, and a presence not written for
// presenceStale makes the others take this replica's shards (and it
// theirs) while it still holds them. A late write is not cut short: a
// call cut short closes its connection, and a new one costs round trips
// of its own (the handshake), so that a node that far away would never be
// written again. It goes on for up to presenceTTL, and no second write
// goes to that node while it is out.
func (k *Keeper) write(ctx context.Context, member string) ([]map[string]time.Duration, int) {
	type answer struct {
		i    int
		ages map[string]time.Duration
	}
	got := make(chan answer, len(k.nodes)) // late writes do not block
	sent := 0
	for i, n := range k.nodes {
		if !k.writing[i].CompareAndSwap(false, true) {
			continue
		}
		sent++
		k.writes.Go(func() {
			defer k.writing[i].Store(false)
			wctx, cancel := context.WithTimeout(ctx, presenceTTL)
			defer cancel()
			ages, err := n.Presence(wctx, k.key, member, presenceTTL)
			if err != nil {
				ages = nil
			}
			got <- answer{i, ages}
		})
	}
	answers := make([]map[string]time.Duration, len(k.nodes))
	answered := 0
	wait := time.NewTimer(presenceStale / 2)
	defer wait.Stop()
collect:
	for range sent {
		select {
		case a := <-got:
			if a.ages != nil {
				answers[a.i] = a.ages
				answered++
			}
		case <-wait.C:
			break collect
		}
	}
	return answers, answered
}

// withdraw removes the replica's presence from every node.
func (k *Keeper) withdraw(ctx context.Context) {
	member := k.member.Load()
	if member == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.ttl/2)
	defer cancel()
	engine.OnEach(k.nodes, func(_ int, n *engine.Node) error { return n.Client().ZRem(rctx, k.key, *member).Err() })
}
