package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

// grant is one acquisition granted under load: its lock key and the run
// id its answer carried ("" for none).
type grant struct {
	key, runID string
}

// loadAcrossRestart acquires distinct locks (TTL a minute, never released)
// from 8 goroutines, back to back, so that the node's connection is never
// idle, calls restart once each goroutine has been granted a lock, and goes
// on until each has been granted one carrying a run id other than before
// (the new server's). It returns the grants and the old run id.
func loadAcrossRestart(t *testing.T, n *engine.Node, s *redistest.Server, ks engine.Keyspace, phase string, restart func()) ([]grant, string) {
	t.Helper()
	old, err := s.Client(t).Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	oldID := runIDOf(old)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const workers = 8
	var (
		mu        sync.Mutex
		grants    []grant
		wg        sync.WaitGroup
		restarted atomic.Bool
		before    sync.WaitGroup            // each worker granted once before the restart
		after     = make(chan int, workers) // each worker granted by the new server, once
	)
	before.Add(workers)
	stop := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			firstBefore, firstAfter := true, true
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k, _ := ks.Lock(fmt.Sprintf("%s-%d-%d", phase, w, i))
				rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "v", TTL: time.Minute, WantInfo: true})
				if err != nil || rep.Status != engine.Acquired {
					if ctx.Err() != nil {
						return
					}
					continue // the restart's failures, and the node's back-off
				}
				g := grant{key: k.Lock}
				if rep.Info != nil {
					g.runID = rep.Info.RunID
				}
				mu.Lock()
				grants = append(grants, g)
				mu.Unlock()
				if firstBefore {
					firstBefore = false
					before.Done()
				}
				if restarted.Load() && g.runID != "" && g.runID != oldID && firstAfter {
					firstAfter = false
					after <- w
				}
			}
		})
	}
	before.Wait()
	restart()
	restarted.Store(true)
	for seen := 0; seen < workers; seen++ {
		select {
		case <-after:
			continue
		case <-ctx.Done():
			t.Errorf("%s: %d of %d goroutines granted a lock by the restarted server", phase, seen, workers)
		}
		break
	}
	close(stop)
	wg.Wait()
	return grants, oldID
}

// runIDOf returns the run_id field of an INFO server text.
func runIDOf(info string) string {
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "run_id:"); ok {
			return id
		}
	}
	return ""
}

// TestInfoAcrossRestartUnderLoad: with the node's connection kept busy by
// acquisitions back to back (so that it reads INFO once and then fills
// the answers from it), a server that restarts empty, plainly or while
// paused with pipelines in flight on the connection, is never answered
// for with the old server's run id: every lock granted carries the run id
// of the server that granted it, told by whether its key survived the
// restart (keys of the old server are gone, with a minute of TTL left).
func TestInfoAcrossRestartUnderLoad(t *testing.T) {
	c := redistest.Start(t, 1)
	s := c.Node(0)
	n, err := engine.NewNode(s.Addr(), s.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := engine.NewKeyspace("t")
	rc := s.Client(t)
	for _, tc := range []struct {
		phase   string
		restart func()
	}{
		{"plain", s.Restart},
		{"paused", func() { s.Pause(); s.Restart() }}, // the pipelines sent meanwhile are in flight when it dies
	} {
		grants, oldID := loadAcrossRestart(t, n, s, ks, tc.phase, tc.restart)
		var kept, lost, bare int
		for _, g := range grants {
			exists, err := rc.Exists(context.Background(), g.key).Result()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case g.runID == "":
				bare++ // fails closed in mutex: no server info in the answer
			case exists == 1 && g.runID == oldID:
				t.Fatalf("%s: %s was granted by the restarted server, but its answer carries the old run id %s", tc.phase, g.key, oldID)
			case exists == 0 && g.runID != oldID:
				t.Fatalf("%s: %s was granted by the old server (its key is gone), but its answer carries run id %s", tc.phase, g.key, g.runID)
			case exists == 1:
				kept++
			default:
				lost++
			}
		}
		t.Logf("%s: %d grants by the old server, %d by the new one, %d without server info", tc.phase, lost, kept, bare)
		if lost == 0 || kept == 0 {
			t.Fatalf("%s: %d grants by the old server, %d by the new one: want both", tc.phase, lost, kept)
		}
	}
}
