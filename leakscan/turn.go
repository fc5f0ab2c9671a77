package leakscan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// errNotMyTurn: another replica holds the scan turn.
var errNotMyTurn = errors.New("leakscan: another replica is scanning")

// takeTurn sets the scan-turn key on every node if absent, for ttl, and
// returns a function that gives the turn back, when a majority took it.
// It returns errNotMyTurn when a majority answered but the turn is another
// replica's (or split between contenders), and an error naming the nodes
// when too few answered. The turn is
// only there to spare the nodes duplicate scans: two replicas scanning at
// once would be harmless, as a scan only reads.
func (s *Scanner) takeTurn(ctx context.Context, ttl time.Duration) (func(), error) {
	key, token := s.keys.ScanTurn(), engine.NewToken()
	set := make([]bool, len(s.nodes))
	errs := engine.OnEach(s.nodes, func(i int, n *engine.Node) (err error) {
		set[i], err = n.Client().SetNX(ctx, key, token, ttl).Result()
		return err
	})
	giveBack := func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for i, n := range s.nodes {
			if set[i] {
				_, _ = n.DeleteIfValue(ctx, key, token)
			}
		}
	}
	taken, answered := 0, 0
	for i := range s.nodes {
		if errs[i] == nil {
			answered++
			if set[i] {
				taken++
			}
		}
	}
	switch {
	case taken >= s.quorum:
		return giveBack, nil
	case answered >= s.quorum: // held elsewhere, or split between contenders
		giveBack()
		return nil, errNotMyTurn
	}
	giveBack()
	return nil, fmt.Errorf("leakscan: the scan turn reached %d of %d nodes: %w", answered, len(s.nodes), errors.Join(errs...))
}
