package leakscan

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/leaks"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
)

// TestScanTurn: one replica at a time has the turn to scan; it is free
// again once given back.
func TestScanTurn(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := ctxTimeout(t, time.Minute)
	_, a := pair(t, c, "a")
	_, b := pair(t, c, "b")
	giveBack, err := a.takeTurn(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.takeTurn(ctx, time.Minute); !errors.Is(err, errNotMyTurn) {
		t.Fatalf("second replica's turn while the first scans: %v, want errNotMyTurn", err)
	}
	giveBack()
	giveBack, err = b.takeTurn(ctx, time.Minute)
	if err != nil {
		t.Fatalf("turn after the first gave it back: %v", err)
	}
	giveBack()
	c.Node(0).Kill()
	c.Node(1).Kill()
	if _, err := a.takeTurn(ctx, time.Minute); err == nil || errors.Is(err, errNotMyTurn) {
		t.Errorf("turn with 1 of 3 nodes up: %v, want an error naming the nodes", err)
	}
}

// TestPartialScanFails: a periodic scan that could not read every node
// fails, naming how many it missed, rather than reporting counts that hide
// the leaks of those nodes.
func TestPartialScanFails(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := ctxTimeout(t, time.Minute)
	var events []Event
	_, s := pair(t, c, "", WithObserver(func(e Event) { events = append(events, e) }))
	missed := c.Node(2).Client(t)
	if err := missed.Do(ctx, "ACL", "SETUSER", "default", "-scan").Err(); err != nil {
		t.Fatal(err)
	}
	if err := missed.Set(ctx, lockKey(t, s, "forever").Lock, "junk", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.scanOnce(ctx)
	if len(events) != 1 || !events[0].Scan || events[0].Err == nil ||
		!strings.Contains(events[0].Err.Error(), "1 of 3 nodes could not be scanned") {
		t.Errorf("scan events %+v, want one failed scan naming the node missed", events)
	}
}

// TestRun: replicas started together heartbeat at once and take turns to
// scan; each scan is reported with every class counted; Run returns when
// its context is done.
func TestRun(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu    sync.Mutex
		scans []Event
		beats int
	)
	observe := WithObserver(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Scan {
			scans = append(scans, e)
		} else if e.Err == nil {
			beats++
		}
	})
	var wg sync.WaitGroup
	for _, owner := range []string{"a", "b", "c"} {
		_, s := pair(t, c, owner, observe, WithInterval(time.Second), WithHeartbeat(time.Second, 2*time.Second))
		wg.Go(func() { s.Run(ctx) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(scans)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		<-time.After(100 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(scans) < 3 || beats < 3 {
		t.Fatalf("%d scans, %d heartbeats in 30s; want at least 3 of each", len(scans), beats)
	}
	for _, e := range scans {
		if e.Err != nil || len(e.Leaks) != len(leaks.AllClasses()) {
			t.Errorf("scan event %+v, want every class counted", e)
		}
	}
	for _, owner := range []string{"a", "b", "c"} {
		if c.KeyOn(t, "redcron:hb:"+owner)[0] != true {
			t.Errorf("no heartbeat of %s", owner)
		}
	}
}

// TestNewBadInput: bad options are refused, naming the option.
func TestNewBadInput(t *testing.T) {
	c := redistest.Start(t, 1)
	r, _ := pair(t, c, "")
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithInterval(time.Millisecond), "WithInterval"},
		{WithHeartbeat(time.Second, time.Second), "WithHeartbeat"},
		{WithHeartbeat(time.Millisecond, time.Second), "WithHeartbeat"},
		{WithLogger(nil), "WithLogger"},
		{WithObserver(nil), "WithObserver"},
		{nil, "option 0"},
	} {
		if _, err := New(r, "x", tc.opt); !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with a bad %s: %v", tc.want, err)
		}
	}
	if _, err := New(nil, "x"); !errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("New(nil): %v", err)
	}
}
