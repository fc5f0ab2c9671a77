package statuspage

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/cluster"
)

// fleetView returns the view of a calm fleet: three nodes up, two
// replicas, two jobs active, nothing missed.
func fleetView() mainView {
	return mainView{Known: true, Quorum: 2, Now: time.Now(),
		Nodes: []nodeView{{Name: "n1:6379", State: cluster.NodeUp}, {Name: "n2:6379", State: cluster.NodeUp},
			{Name: "n3:6379", State: cluster.NodeUp}},
		Replicas: []replicaView{{Instance: "replica-a"}, {Instance: "replica-b"}},
		Jobs:     []jobView{{Name: "report"}, {Name: "tick"}},
	}
}

// has reports whether some item of h has every one of words.
func has(h headline, words ...string) bool {
	for _, item := range h.Items {
		all := true
		for _, w := range words {
			all = all && strings.Contains(string(item), w)
		}
		if all {
			return true
		}
	}
	return false
}

// TestHeadlineHealthy: a quorum up, replicas live, no job paused, nothing
// missed: healthy, saying so in numbers.
func TestHeadlineHealthy(t *testing.T) {
	v := fleetView()
	h := judge(&v)
	if h.State != stateHealthy || h.Title != "Healthy" || len(h.Items) != 0 ||
		!strings.Contains(h.Summary, "All 3 nodes vote; 2 replicas live; 2 jobs, none paused") {
		t.Errorf("headline %+v; want healthy", h)
	}
}

// TestHeadlineDegraded: jobs can run, but the page names each node out of
// the vote (a warming one with the instant it votes), each replica at
// fault, each job paused and each job's ticks missed in the last hour.
func TestHeadlineDegraded(t *testing.T) {
	votes := time.Now().Add(40 * time.Second)
	v := fleetView()
	v.Quorum = 3
	v.Nodes = append(v.Nodes, nodeView{Name: "n4:6379", State: cluster.NodeDown},
		nodeView{Name: "n5:6379", State: cluster.NodeWarming, Started: votes.Add(-61 * time.Second), VotesAt: votes})
	v.Replicas[1].Offset, v.Replicas[1].OffsetKnown = -3*time.Second, true
	v.Replicas = append(v.Replicas, replicaView{Instance: "replica-c", Differs: true})
	v.Jobs[0].PausedOn = 5
	v.Jobs = append(v.Jobs, jobView{Name: "sweep", PausedOn: 1}, jobView{Name: "nightly", Missed: 3}, jobView{Name: "hourly", Missed: 1})
	h := judge(&v)
	if h.State != stateDegraded || !strings.Contains(h.Summary, "3 of 5 nodes vote, 3 needed") {
		t.Fatalf("headline %+v; want degraded, 3 of 5 voting", h)
	}
	for _, want := range [][]string{
		{"n4:6379", "down"},
		{"n5:6379", "warming up", "votes from " + clock(votes)},
		{"replica-b", "clock", "3s off"},
		{"replica-c", "another job table"},
		{"report", "paused (5 of 5 nodes)"},
		{"sweep", "paused on 1 of 5 nodes only"},
		{"nightly", "missed 3 ticks in the last hour"},
		{"hourly", "missed 1 tick in the last hour"},
	} {
		if !has(h, want...) {
			t.Errorf("no item says %q: %q", want, h.Items)
		}
	}
	if has(h, "replica-a") {
		t.Errorf("an item names what is not at fault: %q", h.Items)
	}

	// Names are escaped; a long replica name is cut, whole on hover.
	v = fleetView()
	long := "3f2a9c1e-5b7d-4c1a-9e8f-1234567890ab"
	v.Replicas[0] = replicaView{Instance: long, Differs: true}
	v.Jobs[0] = jobView{Name: "<b>x</b>", Missed: 2}
	h = judge(&v)
	if !has(h, `Replica <span class="short" title="`+long+`">3f2a9c1e…7890ab</span> runs another job table`) ||
		!has(h, "Job &lt;b&gt;x&lt;/b&gt; missed 2 ticks") {
		t.Errorf("items %q; want the replica's name cut, whole on hover, and the job's escaped", h.Items)
	}

	v = fleetView()
	v.Replicas = nil
	if h := judge(&v); h.State != stateDegraded || !has(h, "No live replica") {
		t.Errorf("no live replica: %+v; want degraded, saying so", h)
	}
}

// TestHeadlineNotRunning: fewer nodes vote than a quorum: not running,
// whatever else; since when and until when, as far as the warming nodes
// tell, or "unknown" when a node is down; and the newest run recorded.
func TestHeadlineNotRunning(t *testing.T) {
	now := time.Now()
	first, second := now.Add(-20*time.Second), now.Add(-10*time.Second)
	v := fleetView()
	v.Nodes[1] = nodeView{Name: "n2:6379", State: cluster.NodeWarming, Started: second, VotesAt: second.Add(61 * time.Second)}
	v.Nodes[2] = nodeView{Name: "n3:6379", State: cluster.NodeWarming, Started: first, VotesAt: first.Add(61 * time.Second)}
	v.LastRun, v.LastRunJob = now.Add(-25*time.Second), "tick"
	h := judge(&v)
	if h.State != stateNotRunning || h.Title != "Not running" || !strings.Contains(h.Summary, "1 of the 3 nodes votes, 2 needed") {
		t.Fatalf("headline %+v; want not running, 1 of 3 voting", h)
	}
	for _, want := range [][]string{
		{"Since about " + clock(second), "servers of 2 of the 3 nodes had started anew"},
		{"runs again from about " + clock(first.Add(61*time.Second)), "1 more node votes"},
		{"newest run", "tick", clock(v.LastRun)},
		{"n2:6379", "votes from " + clock(second.Add(61*time.Second))},
	} {
		if !has(h, want...) {
			t.Errorf("no item says %q: %q", want, h.Items)
		}
	}

	v = fleetView()
	v.Nodes[0].State, v.Nodes[2].State = cluster.NodeDown, cluster.NodeRefused
	h = judge(&v)
	if h.State != stateNotRunning || !has(h, "Since: unknown", "hold no run") || !has(h, "n1:6379", "down") ||
		!has(h, "n3:6379", "refuses") || has(h, "runs again") {
		t.Errorf("headline %+v; want not running since an unknown time, naming the nodes", h)
	}

	// With a node down, since when is told by the newest run the nodes
	// hold, and the first tick after it that the replicas skipped for
	// want of a quorum (not one skipped as paused, nor one before).
	last := now.Add(-time.Minute)
	skipped := []skipView{{Job: "tick", Tick: last.Add(-time.Second), Reason: "no_quorum"},
		{Job: "tick", Tick: last.Add(2 * time.Second), Reason: "paused"},
		{Job: "tick", Tick: last.Add(3 * time.Second), Reason: "no_quorum"},
		{Job: "tick", Tick: last.Add(4 * time.Second), Reason: "no_quorum"}}
	v.LastRun, v.LastRunJob, v.Skips = last, "report", skipped
	if h := judge(&v); !has(h, "Since: after "+clock(last), "report", "by "+clock(last.Add(3*time.Second))) {
		t.Errorf("headline %q; want since after the newest run, by the first tick skipped for no quorum after it", h.Items)
	}
	v.Skips = nil
	if h := judge(&v); !has(h, "Since: after "+clock(last), "does not say when") {
		t.Errorf("headline %q; want since after the newest run", h.Items)
	}
	v.LastRun, v.Skips = time.Time{}, skipped
	if h := judge(&v); !has(h, "Since: by "+clock(last.Add(-time.Second)), "at the latest") {
		t.Errorf("headline %q; want since the first tick skipped for no quorum at the latest", h.Items)
	}
}

// TestHeadlineUnknown: with no node read, the headline is unknown, never
// healthy; and the page shows no part of the fleet as none, empty or
// green: each says unknown.
func TestHeadlineUnknown(t *testing.T) {
	v := fleetView()
	v.Known, v.Replicas = false, nil
	for i := range v.Nodes {
		v.Nodes[i].State = cluster.NodeDown
	}
	h := judge(&v)
	if h.State != stateUnknown || h.Title != "Unknown" || !has(h, "n1:6379", "down") {
		t.Fatalf("headline %+v; want unknown, naming the nodes down", h)
	}
	v.Headline = h
	tmpl, err := parseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, "main-live", pageData{Main: &v, Now: v.Now}); err != nil {
		t.Fatal(err)
	}
	body := buf.String()
	for _, bad := range []string{`class="badge ok"`, "None", "No live replica", "No run", "0 live", ">active<", ">free<", "healthy"} {
		if strings.Contains(body, bad) {
			t.Errorf("with no node read, the page shows %q", bad)
		}
	}
	for _, section := range []string{`id="jobs"`, `id="skips"`, `id="runs"`, `id="replicas"`, `id="leaks"`} {
		if part := body[strings.Index(body, section):]; !strings.Contains(part[:strings.Index(part, "</section>")], "nknown") {
			t.Errorf("section %s does not say unknown", section)
		}
	}
}

// TestShort: a long replica name or fence is cut, whole in its title; a
// short one is shown as it is; both escaped.
func TestShort(t *testing.T) {
	for in, want := range map[string]string{
		"replica-a":                            "replica-a",
		"<b>":                                  "&lt;b&gt;",
		"3f2a9c1e-5b7d-4c1a-9e8f-1234567890ab": `<span class="short" title="3f2a9c1e-5b7d-4c1a-9e8f-1234567890ab">3f2a9c1e…7890ab</span>`,
		"1795681876001147":                     `<span class="short" title="1795681876001147">…76001147</span>`,
		"web-<7d9f8c6b5>-x2k4q":                `<span class="short" title="web-&lt;7d9f8c6b5&gt;-x2k4q">web-&lt;7d9…-x2k4q</span>`,
	} {
		if got := string(short(in)); got != want {
			t.Errorf("short(%q) = %s; want %s", in, got, want)
		}
	}
}

// TestHeadlineManyJobs: of 30 jobs paused and 30 with missed ticks, the
// headline names 10 of each, and says how many more there are.
func TestHeadlineManyJobs(t *testing.T) {
	v := fleetView()
	v.Jobs = nil
	for i := range 30 {
		v.Jobs = append(v.Jobs, jobView{Name: fmt.Sprintf("p%02d", i), PausedOn: 3}, jobView{Name: fmt.Sprintf("m%02d", i), Missed: 2})
	}
	h := judge(&v)
	if len(h.Items) != 22 || !has(h, "p09", "paused") || has(h, "p10") || !has(h, "m09", "missed 2 ticks") || has(h, "m10") ||
		!has(h, "And 20 more jobs paused") || !has(h, "And 20 more jobs missed ticks") {
		t.Errorf("headline of 30 jobs paused and 30 missing ticks: %q", h.Items)
	}
}
