package engine_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// TestInfoOncePerConnection: the acquisitions on a node's connection read
// the server's INFO once (per 100 ms), and the later ones carry what it
// said; after the server restarts, no answer carries the old server's run
// id: the first call on the broken connection fails, and the next one, on
// a new connection, reads the new server.
func TestInfoOncePerConnection(t *testing.T) {
	n, s, k := setup(t)
	ctx := engine.MayBlock(context.Background())
	rc := s.Client(t)
	acquire := func(value string) (engine.AcquireReply, error) {
		t.Helper()
		rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: value, TTL: time.Minute, WantInfo: true})
		if err == nil {
			rc.Del(ctx, k.Lock)
		}
		return rep, err
	}
	// The node's first pipeline goes through the client's pool, the next
	// on the connection the node keeps, which reads INFO on its first.
	if rep, err := acquire("v0"); err != nil || rep.Info == nil {
		t.Fatalf("first acquisition: %+v, %v", rep, err)
	}
	read := time.Now()
	first, err := acquire("v1")
	if err != nil || first.Info == nil {
		t.Fatalf("first acquisition on the node's connection: %+v, %v", first, err)
	}
	rc.ConfigResetStat(ctx)
	for i := range 5 {
		rep, err := acquire("v2")
		if err != nil || rep.Info == nil || rep.Info.RunID != first.Info.RunID || rep.Info.Uptime < first.Info.Uptime {
			t.Fatalf("acquisition %d on the same connection: %+v, %v; want the server's info as first read (%+v)", i, rep, err, first.Info)
		}
	}
	// A busy connection reads INFO again every 100 ms: on a machine slow
	// enough for the calls to take that long, once per 100 ms.
	elapsed := time.Since(read)
	if stats, _ := rc.Info(ctx, "commandstats").Result(); strings.Contains(stats, "cmdstat_info:") {
		_, after, _ := strings.Cut(stats, "cmdstat_info:calls=")
		calls, _ := strconv.Atoi(strings.SplitN(after, ",", 2)[0])
		if calls > int(elapsed/(100*time.Millisecond)) {
			t.Errorf("INFO read again on the same connection %d times in %v: %s", calls, elapsed, stats)
		}
	}

	s.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for failures := 0; ; failures++ {
		rep, err := acquire("v3")
		if err == nil && rep.Info != nil && rep.Info.RunID == first.Info.RunID {
			t.Fatalf("after a restart, an answer carries the old server's run id %s: %+v", first.Info.RunID, rep)
		}
		if err == nil {
			if rep.Info == nil || rep.Info.Uptime > 5*time.Second {
				t.Fatalf("after a restart: %+v, want the new server's info", rep)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer from the restarted server: %v", err)
		}
		if !errors.Is(err, engine.ErrNodeDown) && failures > 1 {
			t.Fatalf("acquisition %d after the restart failed: %v", failures, err)
		}
		<-time.After(50 * time.Millisecond) // the node backs off for 100 ms after the failure
	}
}
