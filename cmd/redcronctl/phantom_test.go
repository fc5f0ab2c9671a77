package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

// awaitStatusJSON runs status -json until ok holds of its jobs, or fails
// the test after 20 s.
func awaitStatusJSON(t *testing.T, bin, addrs, what string, ok func(map[string]jobStatus) bool) map[string]jobStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		o := exe(t, bin, nil, "-addrs", addrs, "-json", "status")
		var doc struct {
			Jobs []jobStatus `json:"jobs"`
		}
		jobs := map[string]jobStatus{}
		if err := json.Unmarshal([]byte(o.stdout), &doc); err == nil && o.code == 0 {
			for _, j := range doc.Jobs {
				jobs[j.Name] = j
			}
			if ok(jobs) {
				return jobs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status with %s in 20 s: %s", what, o)
		}
		<-time.After(200 * time.Millisecond)
	}
}

// TestNoPhantomJobs: pause, resume, trigger and history of a name no live
// replica publishes fail with "no such job" and exit 2, and write nothing;
// with -force they act, and status marks the name as no replica's. A live
// replica without jobs does not make every name a job. The job a replica
// publishes is listed with its CRON_TZ= spec's next tick before it ever
// ran.
func TestNoPhantomJobs(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	addrs := strings.Join(c.Addrs(), ",")
	beats := make(chan string, 100)
	heartbeatReplica(t, c, "svc-a", beats, nil, [2]string{"report", "CRON_TZ=Europe/Paris 0 3 * * *"})
	heartbeatReplica(t, c, "idle", beats, nil)
	awaitBeats(t, beats, 1, "svc-a", "idle")
	jobs := awaitStatusJSON(t, bin, addrs, "the published job", func(jobs map[string]jobStatus) bool {
		return jobs["report"].PublishedBy == 1
	})
	paris, _ := time.LoadLocation("Europe/Paris")
	if j := jobs["report"]; j.Phantom || j.Zone != "Europe/Paris" || j.Next.In(paris).Hour() != 3 || time.Until(j.Next) > 25*time.Hour {
		t.Errorf("status of a job that never ran: %+v; want its spec's next tick, 03:00 in Paris", j)
	}

	for _, cmd := range []string{"pause", "resume", "trigger", "history"} {
		o := exe(t, bin, nil, "-addrs", addrs, "-timeout", "5s", cmd, "reprot")
		if o.code != 2 || o.stdout != "" || !strings.Contains(o.stderr, `no such job: "reprot"`) || !strings.Contains(o.stderr, "-force") {
			t.Errorf("%s of a name no replica publishes: %s", cmd, o)
		}
	}
	keys, _ := engine.NewKeyspace("")
	lk, _ := keys.Lock("reprot")
	for i, cl := range clientsOf(t, c) {
		if n := cl.Exists(context.Background(), lk.Pause, lk.Ledger, lk.Trigger).Val(); n != 0 {
			t.Errorf("node %d: %d keys of the refused name", i, n)
		}
	}

	if o := exe(t, bin, nil, "-addrs", addrs, "-force", "pause", "reprot"); o.code != 0 || !strings.Contains(o.stdout, "paused reprot") {
		t.Errorf("pause -force: %s", o)
	}
	jobs = awaitStatusJSON(t, bin, addrs, "the forced pause", func(jobs map[string]jobStatus) bool { return jobs["reprot"].PausedOn == 3 })
	if j := jobs["reprot"]; !j.Phantom || j.PublishedBy != 0 || jobs["report"].Phantom {
		t.Errorf("status: reprot %+v, report %+v; want reprot alone marked as no replica's", j, jobs["report"])
	}
	for _, cmd := range []string{"pause", "resume", "history"} {
		if o := exe(t, bin, nil, "-addrs", addrs, cmd, "report"); o.code != 0 {
			t.Errorf("%s of the replica's job: %s", cmd, o)
		}
	}
}
