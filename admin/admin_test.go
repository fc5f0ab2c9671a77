package admin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// clientOf returns a Client of c's servers with opts, and a client per
// server.
func clientOf(t *testing.T, c *redistest.Cluster, opts admin.Options) (*admin.Client, []*redis.Client) {
	t.Helper()
	var nodes []*store.Node
	var clients []*redis.Client
	for _, s := range c.Nodes() {
		cl := s.Client(t)
		n, err := store.NewNode(s.Addr(), cl)
		if err != nil {
			t.Fatal(err)
		}
		nodes, clients = append(nodes, n), append(clients, cl)
	}
	a, err := admin.New(nodes, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a, clients
}

// frontDoor runs a front-door replica ("replica-0", trusted nodes, with
// seconds) over c, with the jobs add adds, until the test ends.
func frontDoor(t *testing.T, c *redistest.Cluster, add func(*redcron.Scheduler) error) *redcron.Scheduler {
	t.Helper()
	s, err := redcron.New(c.Addrs(), redcron.WithLockOptions(mutex.WithTrustedNodes()),
		redcron.WithSchedulerOptions(scheduler.WithInstanceID("replica-0"), scheduler.WithSeconds()))
	if err != nil {
		t.Fatal(err)
	}
	if err := add(s); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()); <-done })
	return s
}

// lockKeys returns the keys of the lock called name under the default
// prefix.
func lockKeys(t *testing.T, name string) engine.LockKeys {
	t.Helper()
	ks, _ := engine.NewKeyspace("")
	k, err := ks.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestNewRefusesBadOptions: New's errors name what is wrong and match
// mutex.ErrInvalidOption.
func TestNewRefusesBadOptions(t *testing.T) {
	n := func(name string) *store.Node {
		node, err := store.NewNode(name, redis.NewClient(&redis.Options{Addr: name}))
		if err != nil {
			t.Fatal(err)
		}
		return node
	}
	a, b := n("a:1"), n("b:1")
	for _, tc := range []struct {
		nodes []*store.Node
		opts  admin.Options
		want  string
	}{
		{nil, admin.Options{}, "no node"},
		{[]*store.Node{a, nil}, admin.Options{}, "node 1 is nil"},
		{[]*store.Node{a, b, a}, admin.Options{}, `node "a:1" given twice`},
		{[]*store.Node{a}, admin.Options{KeyPrefix: "red cron"}, "KeyPrefix"},
		{[]*store.Node{a}, admin.Options{MaxAge: -time.Hour}, "MaxAge: -1h0m0s is negative"},
		{[]*store.Node{a}, admin.Options{MaxTTL: -time.Second}, "MaxTTL"},
		{[]*store.Node{a}, admin.Options{LedgerWindow: -time.Second}, "LedgerWindow"},
		{[]*store.Node{a}, admin.Options{Operator: "ops|root"}, `Operator "ops|root"`},
	} {
		_, err := admin.New(tc.nodes, tc.opts)
		if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%d nodes, %+v) = %v; want %q, matching mutex.ErrInvalidOption", len(tc.nodes), tc.opts, err, tc.want)
		}
	}
	if _, err := admin.New([]*store.Node{a, b}, admin.Options{KeyPrefix: "billing", Operator: "deploy-bot"}); err != nil {
		t.Errorf("New with good options: %v", err)
	}
}

// TestUnknownJob: without AnyJob, an action on a name no live replica
// publishes fails with an error naming it and matching
// scheduler.ErrUnknownJob, and writes nothing; with it, the action is
// done, and recorded by the operator.
func TestUnknownJob(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	strict, clients := clientOf(t, c, admin.Options{})
	ctx := context.Background()
	_, pauseErr := strict.Pause(ctx, "nightly")
	_, resumeErr := strict.Resume(ctx, "nightly")
	_, _, triggerErr := strict.Trigger(ctx, "nightly")
	_, _, historyErr := strict.History(ctx, "nightly", 10)
	for what, err := range map[string]error{"Pause": pauseErr, "Resume": resumeErr, "Trigger": triggerErr, "History": historyErr} {
		if !errors.Is(err, scheduler.ErrUnknownJob) || !strings.Contains(err.Error(), `no such job: "nightly"`) {
			t.Errorf("%s of a job no replica publishes: %v; want no such job, matching scheduler.ErrUnknownJob", what, err)
		}
	}
	for i, cl := range clients {
		if n := cl.DBSize(ctx).Val(); n != 0 {
			t.Errorf("node %d: %d keys written by refused actions", i, n)
		}
	}

	forced, _ := clientOf(t, c, admin.Options{AnyJob: true, Operator: "deploy-bot"})
	errs, err := forced.Pause(ctx, "nightly")
	if err != nil || len(errs) != 3 || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("Pause with AnyJob: %v, %v", errs, err)
	}
	if on := c.KeyOn(t, lockKeys(t, "nightly").Pause); !on[0] || !on[1] || !on[2] {
		t.Errorf("pause key on %v, want every node", on)
	}
	records, _, err := forced.History(ctx, "nightly", 10)
	if err != nil || len(records) != 1 || records[0].State != "operator" || records[0].Result != "paused" ||
		records[0].Owner != "deploy-bot" || records[0].Nodes != 3 {
		t.Errorf("history after the pause: %+v, %v; want deploy-bot's pause on 3 nodes", records, err)
	}
}

// TestNoMajority: a pause that reaches one node of three fails with an
// error matching mutex.ErrNoQuorum, each down node's error names it,
// and the pause is taken back where it was set; a history read from one
// node fails likewise, with the records read.
func TestNoMajority(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	a, _ := clientOf(t, c, admin.Options{AnyJob: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := a.Pause(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	c.Node(1).Kill()
	c.Node(2).Kill()
	errs, err := a.Resume(ctx, "nightly")
	if !errors.Is(err, mutex.ErrNoQuorum) || !strings.Contains(err.Error(), `resume "nightly"`) {
		t.Errorf("Resume on 1 node of 3: %v; want it to name the job and match mutex.ErrNoQuorum", err)
	}
	if len(errs) != 3 || errs[0] != nil || errs[1] == nil || !strings.Contains(errs[1].Error(), c.Node(1).Addr()) ||
		errs[2] == nil || !strings.Contains(errs[2].Error(), c.Node(2).Addr()) {
		t.Errorf("each node's error: %v; want the two down nodes', naming them", errs)
	}
	_, err = a.Pause(ctx, "other")
	if !errors.Is(err, mutex.ErrNoQuorum) {
		t.Errorf("Pause on 1 node of 3: %v", err)
	}
	if on := c.Node(0).Client(t).Exists(ctx, lockKeys(t, "other").Pause).Val(); on != 0 {
		t.Errorf("a pause on a minority was left in place")
	}
	records, _, err := a.History(ctx, "nightly", 10)
	if !errors.Is(err, mutex.ErrNoQuorum) || len(records) != 1 {
		t.Errorf("History from 1 node of 3: %d records, %v; want the pause's record and an error matching ErrNoQuorum", len(records), err)
	}
}

// TestTriggerNotTaken: a trigger no replica takes by ctx's deadline fails
// with an error matching context.DeadlineExceeded, and its request is
// withdrawn from every node.
func TestTriggerNotTaken(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	a, clients := clientOf(t, c, admin.Options{AnyJob: true})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	rec, errs, err := a.Trigger(ctx, "nightly")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `trigger "nightly"`) || rec.Ticket == "" || len(errs) != 3 {
		t.Fatalf("Trigger with no replica: %+v, %v, %v; want its ticket and an error matching context.DeadlineExceeded", rec, errs, err)
	}
	for i, cl := range clients {
		if n := cl.Exists(context.Background(), lockKeys(t, "nightly").Trigger).Val(); n != 0 {
			t.Errorf("node %d: the request was left behind", i)
		}
	}
}

// TestFixLeaks: FixLeaks deletes the copies it is given that leaked, by
// compare-and-delete: a copy that changed since the scan is left alone
// (changed), a leak not given is not touched.
func TestFixLeaks(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	a, clients := clientOf(t, c, admin.Options{})
	ctx := context.Background()
	value := func(owner string) string {
		return engine.Value{Token: engine.NewToken(), Acquired: time.Now().Add(-time.Minute), Owner: owner}.String()
	}
	abandoned, forever := lockKeys(t, "abandoned").Lock, lockKeys(t, "forever").Lock
	for _, cl := range clients {
		cl.Set(ctx, abandoned, value("dead"), time.Minute)
		cl.Set(ctx, forever, value("dead"), 0)
	}
	st, err := a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pick []admin.Leak
	for _, l := range st.Leaks {
		if l.Name == "abandoned" {
			pick = append(pick, l)
		}
	}
	if len(pick) != 3 || len(st.Leaks) != 6 || !strings.Contains(strings.Join(pick[0].Classes, ","), "orphaned") {
		t.Fatalf("leaks found: %+v; want both locks' three copies, abandoned orphaned", st.Leaks)
	}
	clients[2].Set(ctx, abandoned, value("new-owner"), time.Minute) // taken since the scan
	fixed, err := a.FixLeaks(ctx, pick)
	if err != nil || len(fixed) != 3 {
		t.Fatalf("FixLeaks: %+v, %v", fixed, err)
	}
	for i, l := range fixed {
		if deleted := i < 2; l.Deleted != deleted || (!deleted && l.Reason != "changed") {
			t.Errorf("copy %d (%s): deleted %v, reason %q", i, l.Node, l.Deleted, l.Reason)
		}
	}
	if on := c.KeyOn(t, abandoned); on[0] || on[1] || !on[2] {
		t.Errorf("abandoned on %v; want it deleted where unchanged, kept where taken", on)
	}
	if on := c.KeyOn(t, forever); !on[0] || !on[1] || !on[2] {
		t.Errorf("forever, not given to FixLeaks, on %v; want it untouched", on)
	}
}
