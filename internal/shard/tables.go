package shard

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/redcron/redcron/internal/engine"
)

// The jobs gated by shard: those every live replica runs with the same
// ticks, by the job tables the replicas publish (see Keeper.presence).

// share sets the gate's shared jobs: all of them when every live replica
// publishes this replica's table, else the jobs of this replica's table
// that every other live table holds with the same ticks (spec and zone:
// the other options, a catch-up window or a timeout changed by a deploy,
// do not change which ticks its shard's holder claims, so that a deploy
// that changes them does not make every replica contend for every job).
// A table that no answering node has counts as empty (a replica without
// jobs, or of a release that publishes none: its jobs are ungated); a
// table that could not be read leaves the last shared jobs as they were
// (ungating every job because a loaded node answered late would load
// every node with every replica's claims), or ungates every job if none
// were computed yet, and is read again next round.
// It computes them again only when the live tables change.
func (k *Keeper) share(ctx context.Context, own string, jobs map[string]engine.JobSpec, digests map[string]int) {
	live := slices.Sorted(maps.Keys(digests))
	key := own + "|" + strings.Join(live, ",")
	if key == k.sharedFor {
		return
	}
	if len(live) == 1 && live[0] == own {
		k.gate.shared.Store(nil)
		k.sharedFor, k.sharedOnce = key, true
		return
	}
	shared := map[string]bool{}
	for j := range jobs {
		shared[j] = true
	}
	complete := true
	for _, d := range live {
		if d == own {
			continue
		}
		t, err := k.readTable(ctx, d)
		if err != nil {
			if !k.sharedOnce {
				// Nothing known yet: every job ungated, as for a table missing.
				k.gate.shared.Store(&map[string]bool{})
			}
			k.log.LogAttrs(ctx, slog.LevelWarn, "job table not read: the jobs gated by shard stay as they were", slog.String("digest", d), slog.Any("error", err))
			return
		}
		if t == nil {
			complete = false
		}
		for j := range shared {
			if other, ok := t[j]; !ok || other.Spec != jobs[j].Spec || other.Zone != jobs[j].Zone {
				delete(shared, j)
			}
		}
	}
	k.gate.shared.Store(&shared)
	k.sharedFor, k.sharedOnce = key, true
	if !complete {
		k.sharedFor = "" // a table missing now may be published by the next round
	}
}

// readTable returns the table of digest, from the first node to answer
// with it (engine.Node.JobTable; all are asked at once, so that one slow
// node does not use up the bound); a table once read is kept (a digest's
// table never changes). It returns nil when no node has it but a quorum
// answered (a replica that publishes no table), and an error when fewer
// answered.
func (k *Keeper) readTable(ctx context.Context, digest string) (map[string]engine.JobSpec, error) {
	if t, ok := k.tables[digest]; ok {
		return t, nil
	}
	if digest == "" {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		t   map[string]engine.JobSpec
		err error
	}
	answers := make(chan answer, len(k.nodes))
	for _, n := range k.nodes {
		go func() {
			t, err := n.JobTable(ctx, k.keys.JobTable(digest))
			answers <- answer{t, err}
		}()
	}
	var errs []error
	for range k.nodes {
		a := <-answers
		if a.err != nil {
			errs = append(errs, a.err)
			continue
		}
		if len(a.t) == 0 {
			continue
		}
		if len(k.tables) > 64 {
			clear(k.tables)
		}
		k.tables[digest] = a.t
		return a.t, nil
	}
	if len(k.nodes)-len(errs) < k.quorum {
		return nil, errors.Join(errs...)
	}
	return nil, nil
}
