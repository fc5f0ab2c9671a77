package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/scheduler"
)

// TestTriggerEndToEnd: a trigger from the command runs the job once, on
// one replica of three, and its run is in the job's history, with the
// request's ticket; a trigger of a job no replica has, forced, fails and
// leaves no request behind.
func TestTriggerEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	var mu sync.Mutex
	var runs []scheduler.RunInfo
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		runJob(t, c, id, "report", "0 0 0 1 1 *", func(_ context.Context, run scheduler.RunInfo) error {
			mu.Lock()
			runs = append(runs, run)
			mu.Unlock()
			return nil
		})
	}
	awaitStatusJSON(t, bin, addrs, "the replicas' job", func(jobs map[string]jobStatus) bool { return jobs["report"].PublishedBy == 3 })
	ran := func() []scheduler.RunInfo {
		mu.Lock()
		defer mu.Unlock()
		return append([]scheduler.RunInfo(nil), runs...)
	}

	for i := 1; i <= 2; i++ {
		o := exe(t, bin, nil, "-addrs", addrs, "-json", "trigger", "report")
		var doc struct {
			Ticket  string `json:"ticket"`
			Replica string `json:"replica"`
			Fence   uint64 `json:"fence"`
		}
		if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || o.code != 0 || !strings.HasPrefix(doc.Replica, "replica-") {
			t.Fatalf("trigger %d: %v: %s", i, err, o)
		}
		waitUntil(t, 10*time.Second, "the triggered run", func() bool { return len(ran()) >= i })
		<-time.After(2 * time.Second) // room for a second replica to run the same request, which must not
		got := ran()
		if len(got) != i {
			t.Fatalf("after %d triggers, %d runs: %+v", i, len(got), got)
		}
		if r := got[i-1]; r.Instance != doc.Replica || r.Fence != doc.Fence || !r.Tick.IsZero() {
			t.Errorf("trigger %d ran %+v; the command said %+v", i, r, doc)
		}
	}
	o := exe(t, bin, nil, "-addrs", addrs, "history", "report")
	if o.code != 0 || strings.Count(o.stdout, "manual") != 2 {
		t.Errorf("history after two triggers: %s", o)
	}

	// The ledgers and the set of pending triggers are not leaks.
	if o := exe(t, bin, nil, "-addrs", addrs, "leaks"); o.code != 0 {
		t.Errorf("leak scan after triggers: %s", o)
	}

	o = exe(t, bin, nil, "-addrs", addrs, "-timeout", "5s", "-force", "trigger", "nobody-has-it")
	if o.code != 2 || !strings.Contains(o.stderr, "no replica took the trigger") {
		t.Errorf("trigger -force of an unknown job: %s", o)
	}
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("nobody-has-it")
	for _, cl := range clientsOf(t, c) {
		if n := cl.Exists(context.Background(), lk.Trigger).Val(); n != 0 {
			t.Errorf("an unknown job's request was left on a node")
		}
	}
}
