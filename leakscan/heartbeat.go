package leakscan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/duehook"
	"github.com/redcron/redcron/internal/engine"
)

// heartbeats publishes the owner's heartbeat at once and then every
// interval until ctx is done.
func (s *Scanner) heartbeats(ctx context.Context) {
	ticker := time.NewTicker(s.cfg.beatEvery)
	defer ticker.Stop()
	for {
		hctx, cancel := context.WithTimeout(ctx, s.cfg.beatEvery)
		err := s.heartbeat(hctx)
		s.r.LogNodes(hctx) // keeps the nodes' states fresh between jobs, and logs their changes
		cancel()
		if err != nil && ctx.Err() == nil {
			s.cfg.logger.LogAttrs(ctx, slog.LevelWarn, "heartbeat failed", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// heartbeat sets the owner's heartbeat key on every node, in parallel, and
// succeeds when a quorum did. The key lives for the heartbeat TTL plus the
// max TTL: a lease stays valid for up to its TTL after its last extension,
// so an owner cut off from the nodes is taken for dead only once none of
// its leases can still be valid.
func (s *Scanner) heartbeat(ctx context.Context) error {
	key, value := s.keys.Heartbeat(s.owner), s.beat(ctx).String()
	ttl := s.cfg.beatTTL + s.r.MaxTTL
	start := time.Now()
	offsets := make([]time.Duration, len(s.nodes))
	errs := engine.OnEach(s.nodes, func(i int, n *engine.Node) error {
		// A hung node must not hold the heartbeat: each node gets a
		// quarter of the interval, so that a success is recorded well
		// within the heartbeat's TTL (at least two intervals).
		nctx, cancel := context.WithTimeout(ctx, s.cfg.beatEvery/4)
		defer cancel()
		sent := s.now()
		at, err := n.Heartbeat(nctx, key, value, ttl)
		offsets[i] = sent.Add(s.now().Sub(sent) / 2).Sub(at) // our clock at the node's reading, less the node's
		return err
	})
	yes := 0
	nodes := make(map[string]error, len(s.nodes))
	var answered []time.Duration
	for i, err := range errs {
		nodes[s.nodes[i].Name()] = err
		if err == nil {
			yes++
			answered = append(answered, offsets[i])
		}
	}
	var err error
	if yes < s.quorum {
		err = fmt.Errorf("leakscan: heartbeat of %q reached %d of %d nodes: %w", s.owner, yes, len(s.nodes), errors.Join(errs...))
		s.beats.failed()
	} else {
		s.beats.record(start)
	}
	offset := s.skew.record(answered, s.quorum)
	if ctx.Err() != nil {
		return err // stopped: the nodes' errors say nothing of them
	}
	s.warnSkew(ctx, offset)
	s.emit(Event{Nodes: nodes, Duration: time.Since(start), Offset: offset, Err: err})
	return err
}

// beat returns the heartbeat to send now: the replica's instance id,
// version, job table and clock offset as last measured, and its recent
// skips when ctx carries its scheduler's duehook.Hook (the front door's).
func (s *Scanner) beat(ctx context.Context) engine.Beat {
	b := engine.Beat{Format: engine.BeatFormat, Instance: s.owner, Version: s.cfg.version,
		StartMS: s.started.UnixMilli(), SentMS: s.now().UnixMilli()}
	if s.cfg.jobTable != nil {
		b.JobTable = s.cfg.jobTable()
	}
	if h := duehook.FromContext(ctx); h != nil {
		b.Skips = h.Skips(s.now().Add(-missedLookback))
	}
	if offset, ok := s.skew.last(); ok {
		ms := offset.Milliseconds()
		b.OffsetMS = &ms
	}
	return b
}

// Check returns an error when owner is this Scanner's owner and its last
// successful heartbeat is older than the heartbeat TTL, or it has had none
// yet while heartbeats failed; and, unless extending, when the last
// heartbeat found this replica's clock more than 2 s from the nodes'
// (see Event.Offset); nil otherwise. Give it to the Redlock with
// mutex.WithOwnerCheck. A lease extended while the heartbeat is at most its
// TTL old ends before the heartbeat key, which lives the max TTL longer, so
// the scan never calls the owner of a valid lease dead; and a replica whose
// clock is off by more than the 2 s the restart rule allows claims no tick
// until it is back within them (its leases already won run on: their
// validity does not depend on the clock).
func (s *Scanner) Check(owner string, extending bool) error {
	if s == nil || owner == "" || owner != s.owner {
		return nil
	}
	if err := s.beats.fresh(owner, s.cfg.beatTTL); err != nil {
		return err
	}
	if !extending {
		return s.skew.check(owner)
	}
	return nil
}

// beats remembers the owner's last successful heartbeat.
type beats struct {
	mu    sync.Mutex
	tried bool      // a heartbeat was sent
	last  time.Time // the last that reached a quorum, when it was sent, with the monotonic reading
}

func (b *beats) record(at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tried = true
	if at.After(b.last) {
		b.last = at
	}
}

func (b *beats) failed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tried = true
}

// fresh returns an error when heartbeats were tried and none succeeded, or
// the last success is older than ttl; nil before the first heartbeat.
func (b *beats) fresh(owner string, ttl time.Duration) error {
	b.mu.Lock()
	tried, last := b.tried, b.last
	b.mu.Unlock()
	switch {
	case !tried:
		return nil
	case last.IsZero():
		return fmt.Errorf("owner %q has no successful heartbeat: its leases are not kept, as the leak scan would take it for dead", owner)
	case time.Since(last) > ttl:
		return fmt.Errorf("owner %q's last heartbeat was %v ago, past its TTL %v: its leases are not kept, as the leak scan may take it for dead",
			owner, time.Since(last).Round(time.Millisecond), ttl)
	}
	return nil
}
