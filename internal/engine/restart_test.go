package engine_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redis/go-redis/v9"
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

// switchProxy forwards each client connection to the server it was told
// last (set), on a new server connection at the client's next write, and
// never closes the client's side: as a proxy that moves its clients to
// another backend (restarted, or failed over) without their seeing it.
type switchProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  []net.Conn
}

func newSwitchProxy(t *testing.T, target string) *switchProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{ln: ln, target: target}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			p.keep(client)
			wg.Go(func() { p.forward(client, &wg) })
		}
	})
	return p
}

func (p *switchProxy) set(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

func (p *switchProxy) keep(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

// forward copies the client's writes to the current target, switching
// between two writes (a client waits for a pipeline's answers before it
// writes the next: none is outstanding then), and the server's answers
// back.
func (p *switchProxy) forward(client net.Conn, wg *sync.WaitGroup) {
	var server net.Conn
	to := ""
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		if target != to {
			if server != nil {
				_ = server.Close()
			}
			if server, err = net.Dial("tcp", target); err != nil {
				return
			}
			p.keep(server)
			to = target
			wg.Go(func() { _, _ = io.Copy(client, server) })
		}
		if _, err := server.Write(buf[:n]); err != nil {
			return
		}
	}
}

// TestInfoBehindSwitchingProxy: behind a proxy that moves a busy
// connection to another server without closing it, the answers carry the
// new server's run id within infoMaxAge (100 ms) of its first answers,
// though the connection never failed nor idled: a busy connection reads
// INFO again every infoMaxAge.
func TestInfoBehindSwitchingProxy(t *testing.T) {
	c := redistest.Start(t, 2)
	a, b := c.Node(0), c.Node(1)
	p := newSwitchProxy(t, a.Addr())
	client := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String(), DialTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	n, err := engine.NewNode(p.ln.Addr().String(), client)
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := engine.NewKeyspace("t")
	idOf := func(s *redistest.Server) string {
		info, err := s.Client(t).Info(context.Background(), "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		return runIDOf(info)
	}
	idA, idB := idOf(a), idOf(b)
	ctx, cancel := context.WithTimeout(engine.MayBlock(context.Background()), time.Minute)
	defer cancel()
	var switched time.Time
	for i := 0; ; i++ {
		k, _ := ks.Lock(fmt.Sprintf("p-%d", i))
		rep, err := n.Acquire(ctx, engine.AcquireRequest{Keys: k, Value: "v", TTL: time.Minute, WantInfo: true})
		if err != nil || rep.Status != engine.Acquired || rep.Info == nil {
			t.Fatalf("acquisition %d: %+v, %v", i, rep, err)
		}
		switch {
		case switched.IsZero() && rep.Info.RunID != idA:
			t.Fatalf("acquisition %d, before the switch: run id %s, want %s", i, rep.Info.RunID, idA)
		case switched.IsZero() && i == 200: // well past the node's first pipelines: on its kept connection
			p.set(b.Addr())
			switched = time.Now()
		case !switched.IsZero() && rep.Info.RunID == idB:
			t.Logf("the new server's run id after %v (%d acquisitions)", time.Since(switched), i-200)
			return
		case !switched.IsZero() && time.Since(switched) > 5*time.Second:
			t.Fatalf("5 s after the proxy moved the connection to another server, the answers still carry the old run id %s", rep.Info.RunID)
		}
	}
}
