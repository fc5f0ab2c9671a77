package statuspage_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/browsertest"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/statuspage"
)

// TestHeadlineInBrowser drives headless Chromium against two replicas on
// five real Redis servers that are not trusted (a fresh or restarted
// server warms up for the max TTL, 20 s, before it votes), and reads the
// headline over the page in each state as it refreshes itself: not
// running while the fresh nodes warm up (each says when it votes, the
// headline when the fleet runs again); healthy once they vote; degraded
// with a node down, one restarted and warming up, a job paused from the
// page and a tick recorded missed, each named; not running once three
// nodes are down, since after the newest run the nodes hold and by the
// first tick the replicas report skipped for want of a quorum; the jobs
// say no quorum, not active. It saves a screenshot of each state.
func TestHeadlineInBrowser(t *testing.T) {
	redistest.QuietClients()
	c := redistest.Start(t, 5)
	f := startFleetOn(t, c, []mutex.Option{mutex.WithMaxTTL(20 * time.Second)}, 2, statuspage.WithAuthorize(basicAuth))
	tab := browsertest.Tab(t, browsertest.New(t), browsertest.Basic("ann", token))
	main := f.srv.URL + "/redcron/"
	addr := func(i int) string { return c.Node(i).Addr() }
	expect := func(state, text string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("the headline, %s, lacks %q: %s", state, w, text)
			}
		}
	}

	browsertest.Visit(t, tab, main)
	text := waitHeadline(t, tab, "not_running", 10*time.Second)
	expect("while the nodes warm up", text, "Not running", "No quorum: 0 of the 5 nodes vote, 3 needed",
		"Node "+addr(0)+" is warming up", "it votes from ", "It runs again from about ", "when 3 more nodes vote")
	browsertest.Screenshot(t, tab, "statuspage-warming.png")

	text = waitHeadline(t, tab, "healthy", 40*time.Second)
	expect("once the nodes vote", text, "Healthy", "All 5 nodes vote; 2 replicas live; 2 jobs, none paused")
	browsertest.Screenshot(t, tab, "statuspage-healthy.png")

	c.Node(4).Kill()
	c.Node(3).Restart()
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("tick")
	missed := engine.Record{Tick: time.Now().Add(-10 * time.Minute).Truncate(time.Second).UnixMilli(), Result: "no_quorum"}
	for i := range 3 {
		n, _ := engine.NewNode(addr(i), c.Node(i).Client(t))
		if err := n.AddMissed(context.Background(), lk, missed, 1000, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	browsertest.Visit(t, tab, main+"job/report")
	browsertest.Click(t, tab, `button[value="pause"]`)
	text = waitHeadline(t, tab, "degraded", 10*time.Second, "Job report is paused") // once the pause took effect
	expect("with nodes out and a job paused", text, "Degraded", "Jobs can run (3 of 5 nodes vote, 3 needed)",
		"Node "+addr(4)+" is down", "Node "+addr(3)+" is warming up", "it votes from ", "Job report is paused",
		"Job tick missed 1 tick in the last hour")
	if got := browsertest.Eval(tab, `[...document.querySelectorAll("button")].map(b => b.value).join(",")`); got != "resume,trigger" {
		t.Errorf("the paused job's page offers %q; want resume,trigger", got)
	}
	browsertest.Visit(t, tab, main)
	waitHeadline(t, tab, "degraded", 5*time.Second)
	browsertest.Screenshot(t, tab, "statuspage-degraded.png")

	// The headline below names the newest run the one node left holds:
	// on a loaded machine the first runs can come late, so wait for one.
	n2, _ := engine.NewNode(addr(2), c.Node(2).Client(t))
	waitUntil(t, 30*time.Second, "a run of tick recorded on node 2", func() bool {
		es, _ := n2.Ledger(context.Background(), lk, 10)
		return slices.ContainsFunc(es, func(e engine.Entry) bool {
			return e.State != engine.RecordMissed && e.State != engine.RecordOperator
		})
	})
	c.Node(0).Kill()
	c.Node(1).Kill()
	text = waitHeadline(t, tab, "not_running", 15*time.Second, "skipped for want of a quorum")
	expect("with three nodes out", text, "Not running", "No quorum: 1 of the 5 nodes votes, 3 needed",
		"Since: after ", "(the newest run the nodes hold: tick), by ", "skipped for want of a quorum", "Node "+addr(0)+" is down")
	if got := textOf(tab, `#jobs tr[data-job="tick"]`); !strings.Contains(got, "no quorum") || strings.Contains(got, "active") {
		t.Errorf("a job of a fleet not running: %q; want no quorum", got)
	}
	browsertest.Screenshot(t, tab, "statuspage-not-running.png")
}
