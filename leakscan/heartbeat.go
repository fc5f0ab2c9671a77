package leakscan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// heartbeats publishes the owner's heartbeat at once and then every
// interval until ctx is done.
func (s *Scanner) heartbeats(ctx context.Context) {
	ticker := time.NewTicker(s.cfg.beatEvery)
	defer ticker.Stop()
	for {
		hctx, cancel := context.WithTimeout(ctx, s.cfg.beatEvery)
		err := s.heartbeat(hctx)
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
	key := s.keys.Heartbeat(s.owner)
	ttl := s.cfg.beatTTL + s.r.MaxTTL()
	start := time.Now()
	errs := make([]error, len(s.nodes))
	var wg sync.WaitGroup
	for i, n := range s.nodes {
		wg.Go(func() { errs[i] = n.Heartbeat(ctx, key, ttl) })
	}
	wg.Wait()
	yes := 0
	nodes := make(map[string]error, len(s.nodes))
	for i, err := range errs {
		nodes[s.nodes[i].Name()] = err
		if err == nil {
			yes++
		}
	}
	var err error
	if yes < s.quorum {
		err = fmt.Errorf("leakscan: heartbeat of %q reached %d of %d nodes: %w", s.owner, yes, len(s.nodes), errors.Join(errs...))
		s.beats.failed()
	} else {
		s.beats.record(start)
	}
	s.emit(Event{Nodes: nodes, Duration: time.Since(start), Err: err})
	return err
}

// Check returns an error when owner is this Scanner's owner and its last
// successful heartbeat is older than the heartbeat TTL, or it has had
// none yet while heartbeats failed; nil otherwise. Give it to the Redlock
// with mutex.WithOwnerCheck: a lease extended while the heartbeat is at
// most its TTL old ends before the heartbeat key, which lives the max TTL
// longer, so the scan never calls the owner of a valid lease dead.
func (s *Scanner) Check(owner string) error {
	if s == nil || owner == "" || owner != s.owner {
		return nil
	}
	return s.beats.fresh(owner, s.cfg.beatTTL)
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
